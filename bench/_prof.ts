import { getEncoding } from "../src/engines/tokenizer/encoding.js";
import { manyWordsText } from "./tokenizer.bench.js";
const e = getEncoding("o200k_base");
const texts = [1,2,3,4].map(i => manyWordsText(1e6, 2000+i));
e.countTokens(texts[0]!);
for (const t of texts.slice(1)) { const t0 = performance.now(); const n = e.countTokens(t); console.log(n, (performance.now()-t0).toFixed(0), "ms"); }
