// The local moderation engine's parts, below the API: the image decoders (against ffmpeg's own
// decode of the same files), the image worker with nsfwjs (loaded from the package, no network),
// the lexicon, the input rules, the result assembly and the calibration maths.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { deflateSync } from "node:zlib";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { afterAll, describe, expect, it } from "vitest";
import { LocalSentenceEncoder } from "../../../src/engines/embeddings/index.js";
import { TextClassifier } from "../../../src/engines/moderation/text/classifier.js";
import { calibrate, logisticRegression } from "../../../src/engines/moderation/calibrate.js";
import { CATEGORIES, CATEGORY_COUNT, type Category } from "../../../src/engines/moderation/categories.js";
import { ImageClassifier, sexualImageScore } from "../../../src/engines/moderation/image/classifier.js";
import { decodeWithFfmpeg } from "../../../src/engines/moderation/image/ffmpeg.js";
import { decodeGif } from "../../../src/engines/moderation/image/gif.js";
import { ImageDecodeError, type RgbImage } from "../../../src/engines/moderation/image/pixels.js";
import { decodePng } from "../../../src/engines/moderation/image/png.js";
import { LIMITS, ModerationInputError, parseModel, parseModerationInput } from "../../../src/engines/moderation/input.js";
import { lexiconFeatures } from "../../../src/engines/moderation/lexicon.js";
import { buildResult } from "../../../src/engines/moderation/provider.js";
import { FEATURE_COUNT, type BankIndex } from "../../../src/engines/moderation/scorer.js";
import { FFMPEG } from "../../shared/media.js";

const require = createRequire(import.meta.url);

/** A test picture: a colour gradient with a few hard edges, `w` × `h`, RGBA with varying alpha if asked. */
function picture(w: number, h: number, alpha = false): Uint8Array {
  const px = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4;
      px[i] = (x * 255) / Math.max(1, w - 1);
      px[i + 1] = (y * 255) / Math.max(1, h - 1);
      px[i + 2] = (x + y) % 16 < 8 ? 40 : 220;
      px[i + 3] = alpha ? ((x * 7 + y * 3) % 256) : 255;
    }
  return px;
}

/** ffmpeg: raw RGBA in, an image file out (`codec` png/mjpeg/gif/libwebp, `pixFmt` its pixel format). */
function encode(rgba: Uint8Array, w: number, h: number, codec: string, pixFmt?: string): Uint8Array {
  const args = ["-hide_banner", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgba", "-s", `${w}x${h}`, "-i", "pipe:0", "-frames:v", "1"];
  if (pixFmt) args.push("-pix_fmt", pixFmt);
  args.push("-c:v", codec, "-f", "image2pipe", "pipe:1");
  return new Uint8Array(execFileSync(FFMPEG, args, { input: rgba }));
}

/** ffmpeg's own decode of a file to RGBA (the reference the decoders here are checked against). */
function ffmpegRgba(file: Uint8Array): Uint8Array {
  return new Uint8Array(execFileSync(FFMPEG, ["-hide_banner", "-loglevel", "error", "-i", "pipe:0", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgba", "pipe:1"], { input: file }));
}

/** RGBA over white, as the decoders composite. */
function overWhite(rgba: Uint8Array): Uint8Array {
  const out = new Uint8Array((rgba.length / 4) * 3);
  for (let i = 0; i < rgba.length / 4; i++) {
    const a = rgba[i * 4 + 3]! / 255;
    for (let k = 0; k < 3; k++) out[i * 3 + k] = Math.round(rgba[i * 4 + k]! * a + 255 * (1 - a));
  }
  return out;
}

function maxDiff(a: Uint8Array, b: Uint8Array): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

/** A PNG written here, for what ffmpeg does not write: Adam7 interlacing and tRNS. 8-bit only. */
function handPng(w: number, h: number, colorType: 0 | 2 | 3 | 6, pixels: (x: number, y: number) => number[], opts: { interlace?: boolean; palette?: number[]; trns?: number[] } = {}): Uint8Array {
  const channels = { 0: 1, 2: 3, 3: 1, 6: 4 }[colorType];
  const rows: number[] = [];
  const passes = opts.interlace
    ? [[0, 0, 8, 8], [4, 0, 8, 8], [0, 4, 4, 8], [2, 0, 4, 4], [0, 2, 2, 4], [1, 0, 2, 2], [0, 1, 1, 2]]
    : [[0, 0, 1, 1]];
  for (const [x0, y0, dx, dy] of passes as number[][]) {
    for (let y = y0!; y < h; y += dy!) {
      const line: number[] = [];
      for (let x = x0!; x < w; x += dx!) line.push(...pixels(x, y));
      if (!line.length) continue;
      rows.push(1); // filter "Sub", to exercise unfiltering
      line.forEach((v, i) => rows.push((v - (i >= channels ? line[i - channels]! : 0)) & 255));
    }
  }
  const chunk = (type: string, data: Uint8Array) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, "ascii");
    Buffer.from(data).copy(out, 8);
    out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;
  ihdr[9] = colorType;
  ihdr[12] = opts.interlace ? 1 : 0;
  const parts = [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr)];
  if (opts.palette) parts.push(chunk("PLTE", Uint8Array.from(opts.palette)));
  if (opts.trns) parts.push(chunk("tRNS", Uint8Array.from(opts.trns)));
  parts.push(chunk("IDAT", deflateSync(Uint8Array.from(rows))), chunk("IEND", new Uint8Array()));
  return new Uint8Array(Buffer.concat(parts));
}

function crc32(b: Uint8Array): number {
  let c = ~0;
  for (const byte of b) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

describe("image decoders", () => {
  const W = 37;
  const H = 23;
  const rgba = picture(W, H, true);
  const opaque = picture(W, H);

  for (const pixFmt of ["rgb24", "rgba", "rgb48be", "rgba64be", "gray", "gray16be", "ya8", "ya16be", "pal8", "monob"]) {
    it(`PNG ${pixFmt} decodes exactly as ffmpeg decodes it`, () => {
      const file = encode(pixFmt.startsWith("ya") || pixFmt.startsWith("rgba") || pixFmt === "pal8" ? rgba : opaque, W, H, "png", pixFmt);
      const img = decodePng(file);
      expect([img.width, img.height]).toEqual([W, H]);
      // 16-bit samples: this decoder keeps the high byte, ffmpeg rounds; at most one step apart.
      expect(maxDiff(img.rgb, overWhite(ffmpegRgba(file)))).toBeLessThanOrEqual(1);
    });
  }

  it("Adam7-interlaced PNG, palette with tRNS transparency, grey with a tRNS key", () => {
    const px = (x: number, y: number) => [(x * 9) & 255, (y * 11) & 255, ((x ^ y) * 5) & 255, 255];
    const plain = decodePng(handPng(W, H, 6, px));
    const interlaced = decodePng(handPng(W, H, 6, px, { interlace: true }));
    expect(interlaced.rgb).toEqual(plain.rgb);
    expect(Array.from(plain.rgb.subarray(0, 6))).toEqual([0, 0, 0, 9, 0, 5]);

    // Palette index 1 is fully transparent: it shows white.
    const pal = decodePng(handPng(2, 1, 3, (x) => [x], { palette: [10, 20, 30, 40, 50, 60], trns: [255, 0] }));
    expect(Array.from(pal.rgb)).toEqual([10, 20, 30, 255, 255, 255]);
    const grey = decodePng(handPng(2, 1, 0, (x) => [x ? 7 : 100], { trns: [0, 7] }));
    expect(Array.from(grey.rgb)).toEqual([100, 100, 100, 255, 255, 255]);
  });

  it("GIF (first frame) decodes as ffmpeg decodes it", () => {
    const file = encode(opaque, W, H, "gif", "pal8");
    const img = decodeGif(file);
    expect([img.width, img.height]).toEqual([W, H]);
    expect(maxDiff(img.rgb, overWhite(ffmpegRgba(file)))).toBeLessThanOrEqual(1);
  });

  it("images larger than the model's 224 × 224 are averaged down, never enlarged", () => {
    const big = decodePng(encode(picture(500, 300), 500, 300, "png", "rgb24"));
    expect([big.width, big.height]).toEqual([224, 224]);
    expect(big.rgb.length).toBe(224 * 224 * 3);
    const small = decodePng(encode(picture(10, 300), 10, 300, "png", "rgb24"));
    expect([small.width, small.height]).toEqual([10, 224]);
  });

  it("JPEG and WebP go through ffmpeg (only its stdin, one frame, scaled to at most 224)", async () => {
    for (const codec of ["mjpeg", "libwebp"]) {
      const file = encode(picture(300, 120), 300, 120, codec, codec === "mjpeg" ? "yuvj420p" : undefined);
      const img: RgbImage = await decodeWithFfmpeg(file, codec === "mjpeg" ? "jpeg" : "webp", 300, 120, 10_000);
      expect([img.width, img.height]).toEqual([224, 120]);
      // Lossy formats: the average colour is what matters.
      const mean = img.rgb.reduce((a, b) => a + b, 0) / img.rgb.length;
      expect(mean).toBeGreaterThan(90);
      expect(mean).toBeLessThan(170);
    }
  });

  it("broken files are ImageDecodeErrors, not crashes", async () => {
    const png = encode(opaque, W, H, "png", "rgb24");
    expect(() => decodePng(png.subarray(0, 60))).toThrow(ImageDecodeError);
    expect(() => decodeGif(encode(opaque, W, H, "gif", "pal8").subarray(0, 30))).toThrow(ImageDecodeError);
    const jpeg = encode(opaque, W, H, "mjpeg", "yuvj420p");
    await expect(decodeWithFfmpeg(jpeg.subarray(0, 40), "jpeg", W, H, 10_000)).rejects.toThrow(ImageDecodeError);
  });
});

describe("image classifier (nsfwjs in a worker thread)", () => {
  const images = new ImageClassifier({ fetch: { timeoutMs: 2000, allowPrivate: false } });
  afterAll(() => images.close());

  it("nsfwjs' MobileNetV2 ships inside the package; the worker loads it with no network", () => {
    const dir = join(dirname(require.resolve("nsfwjs/models/mobilenet_v2")), "../../models/mobilenet_v2");
    expect(readdirSync(dir).sort()).toEqual(["group1-shard1of1.min.js", "model.min.js"]);
    expect(existsSync(join(dirname(require.resolve("@tensorflow/tfjs-backend-wasm")), "tfjs-backend-wasm-simd.wasm"))).toBe(true);
  });

  it("classifies PNG, GIF, JPEG and WebP on the WASM backend; a plain picture is not sexual", async () => {
    const rgba = picture(64, 48);
    const files = { png: encode(rgba, 64, 48, "png", "rgb24"), gif: encode(rgba, 64, 48, "gif", "pal8"), jpeg: encode(rgba, 64, 48, "mjpeg", "yuvj420p"), webp: encode(rgba, 64, 48, "libwebp") };
    for (const [format, bytes] of Object.entries(files)) {
      const res = await images.classify(bytes, `input[0].image_url.url`);
      expect(res.model.backend, format).toBe("wasm");
      const total = Object.values(res.classes).reduce((a, b) => a + b, 0);
      expect(total).toBeCloseTo(1, 3);
      expect(sexualImageScore(res.classes), format).toBeLessThan(0.5);
    }
  }, 120_000);

  it("refuses what it cannot read, naming the field: unknown format, too many pixels, corrupt data", async () => {
    const param = "input[1].image_url.url";
    const bmp = new Uint8Array([0x42, 0x4d, 1, 2, 3, 4, 5, 6, 7, 8]);
    await expect(images.classify(bmp, param)).rejects.toMatchObject({ param, code: "invalid_image_format" });
    // A header claiming 10000 × 10000 pixels is refused before any decoding.
    const huge = handPng(1, 1, 2, () => [0, 0, 0]);
    Buffer.from(huge.buffer).writeUInt32BE(10_000, 16);
    Buffer.from(huge.buffer).writeUInt32BE(10_000, 20);
    await expect(images.classify(huge, param)).rejects.toMatchObject({ param, code: "image_too_large" });
    const png = encode(picture(32, 32), 32, 32, "png", "rgb24");
    png.fill(0, 40, 60); // corrupt the compressed data
    await expect(images.classify(png, param)).rejects.toBeInstanceOf(ModerationInputError);
  }, 60_000);

  it("data URLs: decoded, size-capped", async () => {
    const png = encode(picture(8, 8), 8, 8, "png", "rgb24");
    const bytes = await images.load(`data:image/png;base64,${Buffer.from(png).toString("base64")}`, "p");
    expect(bytes).toEqual(png);
    await expect(images.load("data:image/png;base64,", "p")).rejects.toMatchObject({ param: "p", code: "invalid_image" });
    await expect(images.load("http://127.0.0.1:9/x.png", "p")).rejects.toMatchObject({ param: "p", code: "invalid_image_url" });
  });
});

describe("lexicon and patterns", () => {
  const flagged = (t: string) => CATEGORIES.filter((_, i) => lexiconFeatures(t)[i] === 1);
  it("points at categories for precise phrasings, and at nothing in look-alikes", () => {
    expect(flagged("I'm going to kill you tonight")).toEqual(["harassment", "harassment/threatening", "violence"]);
    expect(flagged("I want to kill myself")).toEqual(["self-harm", "self-harm/intent"]);
    expect(flagged("you stupid bitch")).toEqual(["harassment"]);
    expect(flagged("selling nude pics of 12 year olds")).toEqual(["sexual", "sexual/minors"]);
    for (const t of ["kill the process", "shoot a photo", "this joke killed", "Scunthorpe United won", "analysis of the cocktail menu", "I'm going to kill it at the interview"])
      expect(flagged(t), t).toEqual([]);
  });
});

describe("input rules", () => {
  const err = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      return e as ModerationInputError;
    }
    throw new Error("expected a ModerationInputError");
  };

  it("models: the four of the spec, default omni-moderation-latest", () => {
    expect(parseModel(undefined)).toBe("omni-moderation-latest");
    for (const m of ["omni-moderation-latest", "omni-moderation-2024-09-26", "text-moderation-latest", "text-moderation-stable"]) expect(parseModel(m)).toBe(m);
    expect(err(() => parseModel("gpt-4o"))).toMatchObject({ param: "model", code: "model_not_found" });
  });

  it("shapes: string, strings, parts; one item per string, one for a parts array", () => {
    expect(parseModerationInput("hi", "omni-moderation-latest")).toHaveLength(1);
    expect(parseModerationInput(["a", "b", "c"], "omni-moderation-latest")).toHaveLength(3);
    const parts = parseModerationInput(
      [
        { type: "text", text: "a" },
        { type: "image_url", image_url: { url: "https://example.com/x.png" } },
        { type: "text", text: "b" },
      ],
      "omni-moderation-latest",
    );
    expect(parts).toHaveLength(1);
    expect(parts[0]!.texts.map((t) => t.param)).toEqual(["input[0].text", "input[2].text"]);
    expect(parts[0]!.images.map((t) => t.param)).toEqual(["input[1].image_url.url"]);
  });

  it("every problem names its field", () => {
    const omni = "omni-moderation-latest";
    const cases: Array<[unknown, string, string]> = [
      [undefined, "input", "missing_required_parameter"],
      [[], "input", "empty_array"],
      [42, "input", "invalid_type"],
      [["a", 3], "input[1]", "invalid_type"],
      [[{ type: "audio" }], "input[0].type", "invalid_value"],
      [[{ text: "x" }], "input[0].type", "missing_required_parameter"],
      [[{ type: "text", text: 5 }], "input[0].text", "invalid_type"],
      [[{ type: "text", text: "a", extra: 1 }], "input[0].extra", "unknown_parameter"],
      [[{ type: "image_url" }], "input[0].image_url", "missing_required_parameter"],
      [[{ type: "image_url", image_url: { url: "ftp://x/y.png" } }], "input[0].image_url.url", "invalid_image_url"],
      [[{ type: "image_url", image_url: { url: "data:text/plain;base64,aGk=" } }], "input[0].image_url.url", "invalid_image_format"],
      [["x".repeat(LIMITS.maxTextChars + 1)], "input[0]", "string_above_max_length"],
      [Array.from({ length: LIMITS.maxInputs + 1 }, () => "a"), "input", "array_above_max_length"],
      [Array.from({ length: LIMITS.maxImages + 1 }, () => ({ type: "image_url", image_url: { url: "https://e.com/a.png" } })), "input", "too_many_images"],
    ];
    for (const [input, param, code] of cases) expect(err(() => parseModerationInput(input as never, omni)), String(JSON.stringify(input)).slice(0, 80)).toMatchObject({ param, code });
    expect(err(() => parseModerationInput([{ type: "image_url", image_url: { url: "https://e.com/a.png" } }], "text-moderation-latest"))).toMatchObject({
      param: "input[0].type",
      code: "image_not_supported",
    });
  });
});

describe("result assembly (spec 2.9)", () => {
  const text = Float32Array.from(CATEGORIES.map((c) => (c === "violence" ? 0.9 : 0.1)));
  const threshold = () => 0.5;

  it("all 13 categories; applied input types honour the text-only / text-or-image split", () => {
    const r = buildResult({ text, imageSexual: 0.8, textThreshold: threshold, textOnlyModel: false });
    expect(Object.keys(r.categories)).toEqual([...CATEGORIES]);
    expect(r.flagged).toBe(true);
    expect(r.categories.violence).toBe(true);
    expect(r.categories.sexual).toBe(true);
    expect(r.category_scores.sexual).toBeCloseTo(0.8);
    expect(r.category_applied_input_types.sexual).toEqual(["text", "image"]);
    // The image model informs only `sexual`; text-only categories never list "image".
    for (const c of CATEGORIES) if (c !== "sexual") expect(r.category_applied_input_types[c]).toEqual(["text"]);
  });

  it("an image alone: text-only categories apply to nothing; sexual/minors is never inferred from an image", () => {
    const r = buildResult({ text: null, imageSexual: 0.99, textThreshold: threshold, textOnlyModel: false });
    expect(r.category_applied_input_types["sexual/minors"]).toEqual([]);
    expect(r.categories["sexual/minors"]).toBe(false);
    expect(r.category_scores["sexual/minors"]).toBe(0);
    expect(r.category_applied_input_types.harassment).toEqual([]);
    expect(r.category_applied_input_types.sexual).toEqual(["image"]);
  });

  it("text-moderation models: illicit categories are null", () => {
    const r = buildResult({ text, imageSexual: null, textThreshold: threshold, textOnlyModel: true });
    expect(r.categories.illicit).toBeNull();
    expect(r.categories["illicit/violent"]).toBeNull();
    expect(r.category_scores.illicit).toBe(0);
    expect(r.category_applied_input_types.illicit).toEqual([]);
  });
});

describe("calibration maths", () => {
  it("logistic regression separates separable data and stays finite", () => {
    const x: number[][] = [];
    const y: number[] = [];
    for (let i = 0; i < 200; i++) {
      const pos = i % 2;
      x.push(Array.from({ length: FEATURE_COUNT }, (_, k) => (k === 0 ? (pos ? 1 : -1) + Math.sin(i) * 0.3 : Math.cos(i * k))));
      y.push(pos);
    }
    const { weights, bias } = logisticRegression(x, y);
    expect(weights[0]).toBeGreaterThan(1);
    expect(Number.isFinite(bias)).toBe(true);
  });

  it("a toy bank: well-separated categories calibrate to high out-of-fold quality", () => {
    // Two clusters of unit vectors per category (one category per example) plus a benign cluster.
    const dim = 16;
    const perSection = 20;
    const sections: Array<Category | "benign"> = ["harassment", "sexual", "benign"];
    const count = sections.length * perSection;
    const vectors = new Float32Array(count * dim);
    const labels = new Uint8Array(count * CATEGORY_COUNT);
    const benign = new Uint8Array(count);
    const section = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      const s = Math.floor(i / perSection);
      section[i] = s;
      let norm = 0;
      for (let d = 0; d < dim; d++) {
        const v = (d === s ? 3 : 0) + Math.sin(i * 7 + d * 13) * 0.5;
        vectors[i * dim + d] = v;
        norm += v * v;
      }
      for (let d = 0; d < dim; d++) vectors[i * dim + d]! /= Math.sqrt(norm);
      const c = sections[s]!;
      if (c === "benign") benign[i] = 1;
      else labels[i * CATEGORY_COUNT + CATEGORIES.indexOf(c)] = 1;
    }
    const bank: BankIndex = { count, dim, vectors, labels, benign };
    const cal = calibrate(bank, new Float32Array(count * CATEGORY_COUNT), section);
    expect(cal.quality.harassment.f1).toBeGreaterThan(0.9);
    expect(cal.quality.sexual.f1).toBeGreaterThan(0.9);
    expect(cal.benignFlagRate).toBeLessThanOrEqual(0.05);
    expect(cal.probe.weights).toHaveLength(CATEGORY_COUNT * (dim + 1));
  });
});

describe("text classifier: bank vectors cached between starts", () => {
  it("a second start reads the vectors from the cache and calibrates to the same thresholds", async () => {
    const dir = mkdtempSync(join(tmpdir(), "atrium-moderation-cache-"));
    const encoder = new LocalSentenceEncoder({ workers: 1 });
    // Without the committed bank (test/engines/moderation/precomputed.test.ts covers it).
    const first = new TextClassifier({ encoder: () => encoder, cacheDir: dir, precomputed: false });
    const second = new TextClassifier({ encoder: () => encoder, cacheDir: dir, precomputed: false });
    try {
      const a = await first.ready();
      expect(a.source).toBe("encoder");
      expect(readdirSync(dir).filter((f) => f.startsWith("moderation-bank-"))).toHaveLength(1);
      const b = await second.ready();
      expect(b.source).toBe("cache");
      for (const c of CATEGORIES) expect(b.calibration.models[c].threshold, c).toBe(a.calibration.models[c].threshold);
      const [threat, benign] = await second.classify(["I will stab you when you leave work", "Please kill the stuck process before deploying"]);
      const k = CATEGORIES.indexOf("harassment/threatening");
      expect(threat![k]).toBeGreaterThanOrEqual(b.calibration.models["harassment/threatening"].threshold);
      expect(Math.max(...benign!)).toBeLessThan(0.5);
    } finally {
      await first.close();
      await second.close();
      await encoder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
