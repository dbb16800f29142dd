// The format of labelled example lists (the classifier's example bank, the benchmark's evaluation
// set): sections headed `# <category> [+<also> ...]`, one example per line. Every example of a
// section carries its category and the listed extra labels (a threat is also harassment and
// violence); `# benign` sections carry none. Lines starting with `//` are comments.
import { CATEGORIES, isCategory, type Category } from "./categories.js";

export interface Example {
  text: string;
  /** The section's category, or "benign". */
  section: Category | "benign";
  labels: ReadonlySet<Category>;
}

export function parseExamples(source: string, name: string): Example[] {
  const out: Example[] = [];
  let section: Category | "benign" | undefined;
  let labels: Set<Category> = new Set();
  source.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("//")) return;
    if (line.startsWith("#")) {
      const [head, ...extra] = line.slice(1).trim().split(/\s+/);
      if (head === "benign") {
        if (extra.length) throw new Error(`${name}:${i + 1}: a benign section has no labels`);
        section = "benign";
        labels = new Set();
        return;
      }
      if (!head || !isCategory(head)) throw new Error(`${name}:${i + 1}: unknown category '${head}'`);
      section = head;
      labels = new Set([head]);
      for (const e of extra) {
        const c = e.replace(/^\+/, "");
        if (!e.startsWith("+") || !isCategory(c)) throw new Error(`${name}:${i + 1}: '${e}' is not +<category>`);
        labels.add(c);
      }
      return;
    }
    if (!section) throw new Error(`${name}:${i + 1}: an example before the first section header`);
    out.push({ text: line, section, labels });
  });
  return out;
}

/** The form two examples are compared in when checking that two lists share no sentence. */
export function normalizeExample(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}

/** Examples per section, in CATEGORIES order then benign. */
export function countBySection(examples: readonly Example[]): Record<Category | "benign", number> {
  const counts = Object.fromEntries([...CATEGORIES, "benign"].map((c) => [c, 0])) as Record<Category | "benign", number>;
  for (const e of examples) counts[e.section]++;
  return counts;
}
