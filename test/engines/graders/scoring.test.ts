// The graders engine without HTTP: every text_similarity metric against reference values made by
// NLTK 3.8 / rouge-score's algorithm (test/fixtures/graders/, with the command that made them),
// NLTK's Porter stemmer, SQL LIKE, templates, and the calculate_output formula parser.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { evaluateFormula, FormulaError, parseFormula } from "../../../src/engines/graders/formula.js";
import { porterStem } from "../../../src/engines/graders/porter.js";
import { lexicalSimilarity, type LexicalMetric } from "../../../src/engines/graders/similarity.js";
import { stringCheck } from "../../../src/engines/graders/string-check.js";
import { render, sampleNamespace, TemplateError } from "../../../src/engines/graders/template.js";

const fixtures = JSON.parse(readFileSync(new URL("../../fixtures/graders/similarity.json", import.meta.url), "utf8")) as {
  pairs: Array<Record<string, number | string> & { input: string; reference: string }>;
  porter: Record<string, string>;
};
const METRICS: LexicalMetric[] = ["fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l"];

describe("text_similarity metrics match the reference implementations", () => {
  for (const metric of METRICS) {
    it(metric, () => {
      for (const p of fixtures.pairs) {
        const got = lexicalSimilarity(metric, p.input, p.reference);
        expect(got, `${metric}(${JSON.stringify(p.input)}, ${JSON.stringify(p.reference)})`).toBeCloseTo(p[metric] as number, 12);
      }
    });
  }

  it("NLTK's Porter stemmer (NLTK_EXTENSIONS), word for word", () => {
    const wrong = Object.entries(fixtures.porter).filter(([w, s]) => porterStem(w) !== s);
    expect(wrong).toEqual([]);
  });
});

describe("string_check", () => {
  it("eq and ne are exact", () => {
    expect(stringCheck("eq", "Paris", "Paris")).toBe(1);
    expect(stringCheck("eq", "Paris", "paris")).toBe(0);
    expect(stringCheck("ne", "Paris", "paris")).toBe(1);
  });

  it("like / ilike are SQL LIKE over the whole string with % _ and backslash escapes", () => {
    expect(stringCheck("like", "The answer is 42.", "%answer%")).toBe(1);
    expect(stringCheck("like", "The answer is 42.", "answer%")).toBe(0);
    expect(stringCheck("like", "cat", "c_t")).toBe(1);
    expect(stringCheck("like", "coat", "c_t")).toBe(0);
    expect(stringCheck("like", "100%", "100\\%")).toBe(1);
    expect(stringCheck("like", "1000", "100\\%")).toBe(0);
    expect(stringCheck("like", "a_b", "a\\_b")).toBe(1);
    expect(stringCheck("like", "axb", "a\\_b")).toBe(0);
    expect(stringCheck("like", "x.*+?(y)[z]-", "x.*+?(y)[z]-")).toBe(1);
    expect(stringCheck("like", "line1\nline2", "line1%")).toBe(1);
    expect(stringCheck("like", "HELLO", "hello")).toBe(0);
    expect(stringCheck("ilike", "HELLO world", "hello%")).toBe(1);
  });
});

describe("templates", () => {
  const ns = { sample: sampleNamespace('{"a": {"b": [10, {"c": "deep"}]}, "n": null}'), item: { x: "X", list: ["p", "q"], obj: { k: 1 } } };

  it("renders sample.output_text, output_json and item paths, arrays by index, non-strings as JSON", () => {
    expect(render("{{sample.output_json.a.b.1.c}} {{ item.x }} {{item.list.1}} {{item.obj}} {{sample.output_json.n}}", ns)).toBe('deep X q {"k":1} null');
    expect(render("[{{sample.output_text}}]", { sample: sampleNamespace("plain"), item: {} })).toBe("[plain]");
  });

  it("an unknown variable is invalid_variable; output_json of a non-JSON sample is sample_parse", () => {
    expect(() => render("{{item.missing}}", ns)).toThrow(expect.objectContaining({ kind: "invalid_variable" }));
    expect(() => render("{{item.list.5}}", ns)).toThrow(TemplateError);
    expect(() => render("{{other.x}}", ns)).toThrow(expect.objectContaining({ kind: "invalid_variable" }));
    expect(() => render("{{sample.output_json.a}}", { sample: sampleNamespace("not json"), item: {} })).toThrow(expect.objectContaining({ kind: "sample_parse" }));
  });
});

describe("calculate_output formulas", () => {
  const vars = { a: 0.5, b: 1, c: 4 };
  const ev = (f: string) => evaluateFormula(parseFormula(f), vars);

  it("arithmetic with precedence, parentheses, unary minus, unicode operators and functions", () => {
    expect(ev("0.5 * a + 0.5 * b")).toBeCloseTo(0.75);
    expect(ev("(a + b) / 2")).toBeCloseTo(0.75);
    expect(ev("-a + b")).toBeCloseTo(0.5);
    expect(ev("a × c − b ÷ 2")).toBeCloseTo(1.5);
    expect(ev("min(a, b, c) + max(a, b) + abs(-2) + sqrt(c) + floor(2.7) + ceil(2.1)")).toBeCloseTo(0.5 + 1 + 2 + 2 + 2 + 3);
    expect(ev("log(exp(2))")).toBeCloseTo(2);
    expect(ev("2 ^ 3")).toBe(8);
    expect(ev("1e-1 * 10")).toBeCloseTo(1);
  });

  it("bad formulas are FormulaErrors, never evaluated as code", () => {
    for (const f of ["", "a +", "(a", "a b", "foo(a)", "a; process.exit()", "constructor", "__proto__(1)", "min()", "sqrt(1, 2)", "a ** b", "'a'"])
      expect(() => ev(f), f).toThrow(FormulaError);
  });
});
