import { loadRankTable } from "../src/engines/tokenizer/ranks.js";
import { manyWordsText } from "./tokenizer.bench.js";
const t = loadRankTable("o200k_base");
const text = manyWordsText(1e6, 5);
let t0 = performance.now(); let hits = 0, n = 0;
for (let i = 0; i + 3 < text.length; i++) { const k = text.slice(i, i + 2); if (t.ranks.get(k) !== undefined) hits++; n++; }
console.log("slice2+get", n, ((performance.now() - t0) * 1e6 / n).toFixed(1), "ns/op");
t0 = performance.now(); n = 0;
for (let i = 0; i + 6 < text.length; i++) { const k = text.slice(i, i + 5); if (t.ranks.get(k) !== undefined) hits++; n++; }
console.log("slice5+get", n, ((performance.now() - t0) * 1e6 / n).toFixed(1), "ns/op");
t0 = performance.now(); n = 0;
for (let i = 0; i + 6 < text.length; i++) { const k = text.slice(i, i + 5); if (k.length === 7) hits++; n++; }
console.log("slice5 only", n, ((performance.now() - t0) * 1e6 / n).toFixed(1), "ns/op");
const m2 = new Map<string, number>(); for (const [k, v] of t.ranks) m2.set(k, v);
t0 = performance.now(); n = 0;
for (let i = 0; i + 6 < text.length; i++) { const k = text.slice(i, i + 5); if (m2.get(k) !== undefined) hits++; n++; }
console.log("slice5+get copy map", n, ((performance.now() - t0) * 1e6 / n).toFixed(1), "ns/op", hits);
