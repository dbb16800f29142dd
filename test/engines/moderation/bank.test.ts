// The moderation example bank and evaluation set: both parse, the evaluation set has what the
// benchmark's figures need (40+ examples per category, 300+ benign look-alikes), examples are
// short, and no sentence is in both (the classifier is never measured on what it was built from).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BANK } from "../../../src/engines/moderation/bank/index.js";
import { CATEGORIES } from "../../../src/engines/moderation/categories.js";
import { countBySection, normalizeExample, parseExamples } from "../../../src/engines/moderation/examples.js";

const EVAL_PATH = new URL("../../../bench/data/moderation/eval.txt", import.meta.url);
const EVAL = parseExamples(readFileSync(EVAL_PATH, "utf8"), "eval.txt");

/** Examples longer than this are not "short". */
const MAX_EXAMPLE_CHARS = 160;

describe("moderation data", () => {
  it("the evaluation set has at least 40 examples of every category and 300 benign look-alikes", () => {
    const counts = countBySection(EVAL);
    for (const c of CATEGORIES) expect(counts[c], c).toBeGreaterThanOrEqual(40);
    expect(counts.benign).toBeGreaterThanOrEqual(300);
  });

  it("the bank has examples of every category and a large benign section", () => {
    const counts = countBySection(BANK);
    for (const c of CATEGORIES) expect(counts[c], c).toBeGreaterThanOrEqual(40);
    expect(counts.benign).toBeGreaterThanOrEqual(400);
  });

  it("no sentence is in both the bank and the evaluation set (compared without case and punctuation)", () => {
    const bank = new Set(BANK.map((e) => normalizeExample(e.text)));
    const shared = EVAL.filter((e) => bank.has(normalizeExample(e.text))).map((e) => e.text);
    expect(shared).toEqual([]);
  });

  it("no sentence appears twice within either list", () => {
    for (const list of [BANK, EVAL]) {
      const seen = new Set<string>();
      const repeated: string[] = [];
      for (const e of list) {
        const k = normalizeExample(e.text);
        if (seen.has(k)) repeated.push(e.text);
        seen.add(k);
      }
      expect(repeated).toEqual([]);
    }
  });

  it("every example is short", () => {
    const long = [...BANK, ...EVAL].filter((e) => e.text.length > MAX_EXAMPLE_CHARS).map((e) => e.text);
    expect(long).toEqual([]);
  });

  it("subcategory examples also carry their parent category", () => {
    const parent: Record<string, string> = {
      "harassment/threatening": "harassment",
      "hate/threatening": "hate",
      "illicit/violent": "illicit",
      "self-harm/instructions": "self-harm",
      "self-harm/intent": "self-harm",
      "sexual/minors": "sexual",
      "violence/graphic": "violence",
    };
    for (const e of [...BANK, ...EVAL]) if (parent[e.section]) expect(e.labels.has(parent[e.section] as never), e.text).toBe(true);
  });

  it("the format refuses unknown categories and examples before a header", () => {
    expect(() => parseExamples("# nonsense\nx", "t")).toThrow(/unknown category/);
    expect(() => parseExamples("x\n# hate", "t")).toThrow(/before the first section/);
    expect(() => parseExamples("# hate violence\nx", "t")).toThrow(/\+<category>/);
  });
});
