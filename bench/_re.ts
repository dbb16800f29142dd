import { manyWordsText } from "./tokenizer.bench.js";
import { readFileSync } from "node:fs";
const src = readFileSync("src/engines/tokenizer/encoding.ts", "utf8");
import("../src/engines/tokenizer/encoding.js").then(async (m) => {
  const e: any = m.getEncoding("o200k_base");
  const pat: RegExp = e.pattern;
  const text = manyWordsText(1e6, 3);
  const g = new RegExp(pat.source, "gu"), y = new RegExp(pat.source, "yu");
  for (let rep = 0; rep < 3; rep++) {
    let t0 = performance.now(); let n = 0; g.lastIndex = 0; while (g.exec(text)) n++;
    const a = performance.now() - t0;
    t0 = performance.now(); let k = 0; y.lastIndex = 0; while (y.test(text)) k++;
    const b = performance.now() - t0;
    t0 = performance.now(); const arr = text.match(g)!; 
    const c = performance.now() - t0;
    t0 = performance.now(); let h = 0; for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
    const d = performance.now() - t0;
    console.log(n, k, arr.length, "exec", a.toFixed(0), "test-y", b.toFixed(0), "match", c.toFixed(0), "hash", d.toFixed(0), h);
  }
});
