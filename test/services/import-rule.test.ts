// The areas' import rule: a file under src/services/A/ imports from another area B only through
// B's index.ts (its API), never B's records, handlers or rules. src/services/area.ts, deps.ts and
// index.ts are shared by every area and are not inside any area folder.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SERVICES = path.join(ROOT, "src", "services");

const IDENT_START = /[A-Za-z_$]/;
const IDENT = /[A-Za-z0-9_$]/;
// After one of these tokens a "/" starts a regular expression literal, not a division.
const BEFORE_REGEX = new Set(["(", ",", "=", ":", "[", "!", "&", "|", "?", "{", "}", ";", "+", "-", "*", "%", "<", ">", "~", "^", "return", "typeof", "case", "of", "in", "=>"]);

/**
 * The module specifiers a TypeScript source imports: static `import … from "m"` and
 * `import "m"`, `export … from "m"`, and dynamic `import("m")`. A small lexer skips comments,
 * strings, template literals and regular expressions, so an import-like text inside them is not
 * taken for an import.
 */
export function moduleSpecifiers(source: string): string[] {
  const found: string[] = [];
  const tokens: string[] = [];
  let i = 0;
  const n = source.length;

  const readString = (quote: string): string => {
    let value = "";
    i++;
    while (i < n && source[i] !== quote) {
      if (source[i] === "\\") i++;
      value += source[i];
      i++;
    }
    i++;
    return value;
  };

  const skipTemplate = (): void => {
    i++;
    while (i < n && source[i] !== "`") {
      if (source[i] === "\\") i += 2;
      else if (source[i] === "$" && source[i + 1] === "{") {
        i += 2;
        scan("}");
      } else i++;
    }
    i++;
  };

  const skipRegex = (): void => {
    i++;
    let inClass = false;
    while (i < n && (inClass || source[i] !== "/")) {
      if (source[i] === "\\") i++;
      else if (source[i] === "[") inClass = true;
      else if (source[i] === "]") inClass = false;
      i++;
    }
    i++;
    while (i < n && IDENT.test(source[i]!)) i++;
  };

  // Scans until the closing `end` brace at depth 0 (a template's ${…}), or to the end.
  function scan(end?: string): void {
    let depth = 0;
    while (i < n) {
      const c = source[i]!;
      if (c === "/" && source[i + 1] === "/") {
        while (i < n && source[i] !== "\n") i++;
      } else if (c === "/" && source[i + 1] === "*") {
        const close = source.indexOf("*/", i + 2);
        i = close < 0 ? n : close + 2;
      } else if (c === '"' || c === "'") {
        const value = readString(c);
        const last = tokens[tokens.length - 1];
        const beforeLast = tokens[tokens.length - 2];
        const member = tokens[tokens.length - 3] === ".";
        if (last === "from" || (last === "import" && beforeLast !== ".") || (last === "(" && beforeLast === "import" && !member)) found.push(value);
        tokens.push("<string>");
      } else if (c === "`") {
        skipTemplate();
        tokens.push("<template>");
      } else if (c === "/" && (tokens.length === 0 || BEFORE_REGEX.has(tokens[tokens.length - 1]!))) {
        skipRegex();
        tokens.push("<regex>");
      } else if (IDENT_START.test(c)) {
        const start = i;
        while (i < n && IDENT.test(source[i]!)) i++;
        tokens.push(source.slice(start, i));
      } else if (/\s/.test(c)) {
        i++;
      } else {
        if (c === "=" && source[i + 1] === ">") {
          tokens.push("=>");
          i += 2;
          continue;
        }
        if (end && c === "{") depth++;
        if (end && c === end) {
          if (depth === 0) {
            i++;
            return;
          }
          depth--;
        }
        tokens.push(c);
        i++;
      }
    }
  }

  scan();
  return found;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.(ts|mts|js|mjs)$/.test(e.name) && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** The area folder (services/<area>/) a path is inside, or undefined. */
function areaOf(file: string): string | undefined {
  const rel = path.relative(SERVICES, file);
  if (rel.startsWith("..") || path.isAbsolute(rel)) return undefined;
  const parts = rel.split(path.sep);
  return parts.length > 1 ? parts[0] : undefined;
}

/** Every import in src/services that reaches into another area past its index.ts. */
function violations(): { imports: number; violations: string[] } {
  let imports = 0;
  const out: string[] = [];
  for (const file of sourceFiles(SERVICES)) {
    const area = areaOf(file);
    if (!area) continue;
    for (const spec of moduleSpecifiers(fs.readFileSync(file, "utf8"))) {
      imports++;
      if (!spec.startsWith(".")) continue;
      const target = path.resolve(path.dirname(file), spec).replace(/\.(js|mjs)$/, ".ts");
      const targetArea = areaOf(target);
      if (!targetArea || targetArea === area) continue;
      if (target === path.join(SERVICES, targetArea, "index.ts") || target === path.join(SERVICES, targetArea)) continue;
      out.push(`${path.relative(ROOT, file)} imports "${spec}" (${path.relative(ROOT, target)}): use src/services/${targetArea}/index.ts`);
    }
  }
  return { imports, violations: out };
}

describe("moduleSpecifiers", () => {
  it("finds static, type-only, re-export, side-effect and dynamic imports", () => {
    const source = `
      import { a } from "./a.js";
      import type { B } from '../b/index.js';
      import * as c from "./c.js"; export { d } from "./d.js";
      export * from "./e.js";
      import "./f.js";
      const g = await import("./g.js");
      const h = await import(
        "./h.js"
      );
    `;
    expect(moduleSpecifiers(source)).toEqual(["./a.js", "../b/index.js", "./c.js", "./d.js", "./e.js", "./f.js", "./g.js", "./h.js"]);
  });

  it("ignores import-like text in comments, strings, templates and regular expressions", () => {
    const source = `
      // import { x } from "./comment.js";
      /* export * from "./block.js"; */
      const s = 'import "./string.js"';
      const t = \`from "./template.js" \${ "x" + \`import("./nested.js")\` }\`;
      const r = /from "\\.\\/regex.js"/g;
      const ratio = 4 / 2; const q = "/";
      import { real } from "./real.js";
      obj.import("./method.js");
    `;
    expect(moduleSpecifiers(source)).toEqual(["./real.js"]);
  });
});

describe("areas import each other only through index.ts", () => {
  it("no file under src/services/A/ imports src/services/B/ (B ≠ A) except B/index.ts", () => {
    const { imports, violations: found } = violations();
    // The scan reads the whole tree: hundreds of imports, so an empty result is not a broken lexer.
    expect(imports).toBeGreaterThan(200);
    expect(found).toEqual([]);
  });
});
