// The committed bank vectors and calibration (src/engines/moderation/text/precomputed.json): they
// are this bank's, the calibration is what the text worker's code computes from those vectors,
// the encoder still embeds the bank as they say, and a classifier starts from them without
// embedding the bank or calibrating.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL, LocalSentenceEncoder } from "../../../src/engines/embeddings/index.js";
import { BANK } from "../../../src/engines/moderation/bank/index.js";
import { CATEGORIES } from "../../../src/engines/moderation/categories.js";
import { calibrateBank, indexBank } from "../../../src/engines/moderation/text/bank-index.js";
import { bankKey, PROBE_MIN_COSINE, TextClassifier } from "../../../src/engines/moderation/text/classifier.js";
import { committedPrecomputed, readPrecomputed } from "../../../src/engines/moderation/text/precomputed-bank.js";

const REGENERATE = "run `node --import tsx scripts/moderation-calibration.ts` and commit src/engines/moderation/text/precomputed.json";
const PRECOMPUTED = await committedPrecomputed();

describe("precomputed moderation bank", () => {
  it("is this bank's, embedded by this encoder", async () => {
    expect(PRECOMPUTED.key, `the bank or the encoder changed: ${REGENERATE}`).toBe(bankKey());
    const read = await readPrecomputed(bankKey(), LOCAL_EMBEDDING_DIMENSIONS);
    expect(read?.bank.vectors).toHaveLength(BANK.length * LOCAL_EMBEDDING_DIMENSIONS);
    expect(read?.bank.vectors.buffer).toBeInstanceOf(SharedArrayBuffer);
  });

  it("its calibration is what the text worker computes from its vectors", async () => {
    const read = (await readPrecomputed(bankKey(), LOCAL_EMBEDDING_DIMENSIONS))!;
    const again = calibrateBank(indexBank(read.bank));
    // Exact: the same vectors and code give the same numbers (a change in features, lexicon or
    // calibration shows here).
    expect(JSON.parse(JSON.stringify(again)), `the calibration code changed: ${REGENERATE}`).toEqual(PRECOMPUTED.calibration);
  }, 120_000);

  it("the encoder embeds bank examples as the committed vectors say", async () => {
    const read = (await readPrecomputed(bankKey(), LOCAL_EMBEDDING_DIMENSIONS))!;
    const dim = LOCAL_EMBEDDING_DIMENSIONS;
    const sample = Array.from({ length: 16 }, (_, i) => Math.floor((i * BANK.length) / 16));
    const encoder = new LocalSentenceEncoder({ workers: 1 });
    try {
      const { vectors } = await encoder.embed(sample.map((i) => BANK[i]!.text), { model: LOCAL_EMBEDDING_MODEL });
      sample.forEach((b, j) => {
        let dot = 0;
        for (let d = 0; d < dim; d++) dot += vectors[j]![d]! * read.bank.vectors[b * dim + d]!;
        expect(dot, `bank example ${b}`).toBeGreaterThanOrEqual(PROBE_MIN_COSINE);
      });
    } finally {
      await encoder.close();
    }
  }, 300_000);

  it("a classifier starts from it: no bank embedding, no calibration, no cache file; texts classify", async () => {
    const dir = mkdtempSync(join(tmpdir(), "atrium-moderation-precomputed-"));
    const encoder = new LocalSentenceEncoder({ workers: 1 });
    let embedded = 0;
    const counting = {
      ...encoder,
      embed: (inputs: string[], opts: Parameters<typeof encoder.embed>[1]) => ((embedded += inputs.length), encoder.embed(inputs, opts)),
    } as typeof encoder;
    const classifier = new TextClassifier({ encoder: () => counting, cacheDir: dir });
    try {
      const ready = await classifier.ready();
      expect(ready.source).toBe("precomputed");
      expect(embedded).toBeLessThanOrEqual(3); // the probes that check the encoder, not the 1,154 examples
      for (const c of CATEGORIES) expect(ready.calibration.models[c].threshold, c).toBe(PRECOMPUTED.calibration.models[c].threshold);
      expect(readdirSync(dir)).toEqual([]);
      const [threat, benign] = await classifier.classify(["I will stab you when you leave work", "Please kill the stuck process before deploying"]);
      const k = CATEGORIES.indexOf("harassment/threatening");
      expect(threat![k]).toBeGreaterThanOrEqual(ready.calibration.models["harassment/threatening"].threshold);
      expect(Math.max(...benign!)).toBeLessThan(0.5);
    } finally {
      await classifier.close();
      await encoder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
