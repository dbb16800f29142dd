// Writes src/engines/moderation/text/precomputed.json: the example bank embedded by the local
// sentence encoder and the calibration fitted on it, by the same code the text worker runs
// (text/bank-index.ts). Deterministic: the same bank, encoder and code give the same file.
//   node --import tsx scripts/moderation-calibration.ts           write the file
//   node --import tsx scripts/moderation-calibration.ts --check   exit 1 if the file differs
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL, LocalSentenceEncoder } from "../src/engines/embeddings/index.js";
import { BANK } from "../src/engines/moderation/bank/index.js";
import { calibrateBank, indexBank } from "../src/engines/moderation/text/bank-index.js";
import { bankKey } from "../src/engines/moderation/text/classifier.js";
import { precomputedJson } from "../src/engines/moderation/text/precomputed-bank.js";

const target = fileURLToPath(new URL("../src/engines/moderation/text/precomputed.json", import.meta.url));
const SLICE = 64;

const encoder = new LocalSentenceEncoder();
const dim = LOCAL_EMBEDDING_DIMENSIONS;
const vectors = new Float32Array(BANK.length * dim);
try {
  for (let start = 0; start < BANK.length; start += SLICE) {
    const { vectors: out } = await encoder.embed(BANK.slice(start, start + SLICE).map((e) => e.text), { model: LOCAL_EMBEDDING_MODEL });
    out.forEach((v, i) => vectors.set(v, (start + i) * dim));
  }
} finally {
  await encoder.close();
}
const key = bankKey();
const calibration = calibrateBank(indexBank({ key, dim, vectors }));
const text = precomputedJson({ key, dim, vectors: Buffer.from(vectors.buffer).toString("base64"), calibration });
if (process.argv.includes("--check")) {
  const same = readFileSync(target, "utf8") === text;
  console.log(same ? `${target} is up to date` : `${target} differs from what this script writes: run it without --check`);
  process.exit(same ? 0 : 1);
}
writeFileSync(target, text);
console.log(`wrote ${target}: ${BANK.length} examples × ${dim}, key ${key.slice(0, 16)}; out-of-fold benign flag rate ${(calibration.benignFlagRate * 100).toFixed(1)} %`);
