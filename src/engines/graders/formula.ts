// The `calculate_output` formula of a multi grader: a small recursive-descent parser, never eval.
//
//   expr    := term (("+" | "-") term)*
//   term    := unary (("*" | "/") unary)*
//   unary   := ("-" | "+") unary | power
//   power   := primary ("^" unary)?
//   primary := number | name | name "(" expr ("," expr)* ")" | "(" expr ")"
//
// Names are sub-grader names (their rewards); functions min, max (any number of arguments), abs,
// sqrt, log (natural), exp, floor, ceil. −, × and ÷ are accepted for -, * and /.

export class FormulaError extends Error {}

type Node =
  | { k: "num"; v: number }
  | { k: "var"; name: string }
  | { k: "neg"; e: Node }
  | { k: "bin"; op: "+" | "-" | "*" | "/" | "^"; l: Node; r: Node }
  | { k: "call"; fn: string; args: Node[] };

const FUNCTIONS: Record<string, { arity: [number, number]; fn: (...a: number[]) => number }> = {
  min: { arity: [1, Infinity], fn: Math.min },
  max: { arity: [1, Infinity], fn: Math.max },
  abs: { arity: [1, 1], fn: Math.abs },
  sqrt: { arity: [1, 1], fn: Math.sqrt },
  log: { arity: [1, 1], fn: Math.log },
  exp: { arity: [1, 1], fn: Math.exp },
  floor: { arity: [1, 1], fn: Math.floor },
  ceil: { arity: [1, 1], fn: Math.ceil },
};

type Token = { t: "num"; v: number; at: number } | { t: "name"; v: string; at: number } | { t: "op"; v: string; at: number };

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const num = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i));
    if (num) {
      out.push({ t: "num", v: Number(num[0]), at: i });
      i += num[0].length;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i));
    if (name) {
      out.push({ t: "name", v: name[0], at: i });
      i += name[0].length;
      continue;
    }
    const op = { "−": "-", "×": "*", "÷": "/" }[c] ?? c;
    if ("+-*/^(),".includes(op)) {
      out.push({ t: "op", v: op, at: i });
      i++;
      continue;
    }
    throw new FormulaError(`unexpected character '${c}' at position ${i}`);
  }
  return out;
}

export function parseFormula(src: string): Node {
  const tokens = tokenize(src);
  let pos = 0;
  const peek = () => tokens[pos];
  const isOp = (v: string) => peek()?.t === "op" && peek()!.v === v;
  const expect = (v: string) => {
    if (!isOp(v)) throw new FormulaError(`expected '${v}' ${where()}`);
    pos++;
  };
  const where = () => (peek() ? `at position ${peek()!.at}` : "at the end");

  function expr(): Node {
    let l = term();
    while (isOp("+") || isOp("-")) {
      const op = tokens[pos++]!.v as "+" | "-";
      l = { k: "bin", op, l, r: term() };
    }
    return l;
  }
  function term(): Node {
    let l = unary();
    while (isOp("*") || isOp("/")) {
      const op = tokens[pos++]!.v as "*" | "/";
      l = { k: "bin", op, l, r: unary() };
    }
    return l;
  }
  function unary(): Node {
    if (isOp("-")) {
      pos++;
      return { k: "neg", e: unary() };
    }
    if (isOp("+")) {
      pos++;
      return unary();
    }
    return power();
  }
  function power(): Node {
    const base = primary();
    if (isOp("^")) {
      pos++;
      return { k: "bin", op: "^", l: base, r: unary() };
    }
    return base;
  }
  function primary(): Node {
    const tok = peek();
    if (!tok) throw new FormulaError("unexpected end of formula");
    if (tok.t === "num") {
      pos++;
      return { k: "num", v: tok.v };
    }
    if (tok.t === "name") {
      pos++;
      if (!isOp("(")) return { k: "var", name: tok.v };
      const f = FUNCTIONS[tok.v];
      if (!f || !Object.hasOwn(FUNCTIONS, tok.v)) throw new FormulaError(`unknown function '${tok.v}' at position ${tok.at}`);
      pos++;
      const args = [expr()];
      while (isOp(",")) {
        pos++;
        args.push(expr());
      }
      expect(")");
      if (args.length < f.arity[0] || args.length > f.arity[1]) throw new FormulaError(`${tok.v}() takes ${f.arity[0] === f.arity[1] ? f.arity[0] : `at least ${f.arity[0]}`} argument(s), got ${args.length}`);
      return { k: "call", fn: tok.v, args };
    }
    if (isOp("(")) {
      pos++;
      const e = expr();
      expect(")");
      return e;
    }
    throw new FormulaError(`unexpected '${tok.v}' at position ${tok.at}`);
  }

  if (tokens.length === 0) throw new FormulaError("the formula is empty");
  const root = expr();
  if (pos < tokens.length) throw new FormulaError(`unexpected '${tokens[pos]!.v}' at position ${tokens[pos]!.at}`);
  return root;
}

/** The names a formula reads. */
export function formulaVariables(node: Node, out = new Set<string>()): Set<string> {
  if (node.k === "var") out.add(node.name);
  else if (node.k === "neg") formulaVariables(node.e, out);
  else if (node.k === "bin") (formulaVariables(node.l, out), formulaVariables(node.r, out));
  else if (node.k === "call") for (const a of node.args) formulaVariables(a, out);
  return out;
}

export function evaluateFormula(node: Node, vars: Record<string, number>): number {
  switch (node.k) {
    case "num":
      return node.v;
    case "var":
      if (!Object.hasOwn(vars, node.name)) throw new FormulaError(`unknown name '${node.name}': use the name of one of the graders`);
      return vars[node.name]!;
    case "neg":
      return -evaluateFormula(node.e, vars);
    case "bin": {
      const l = evaluateFormula(node.l, vars);
      const r = evaluateFormula(node.r, vars);
      return node.op === "+" ? l + r : node.op === "-" ? l - r : node.op === "*" ? l * r : node.op === "/" ? l / r : l ** r;
    }
    case "call":
      return FUNCTIONS[node.fn]!.fn(...node.args.map((a) => evaluateFormula(a, vars)));
  }
}
