// nsfwjs 4.3's bundled MobileNetV2 (Drawing / Hentai / Neutral / Porn / Sexy) on tfjs with the
// WASM backend, in the thread that imports this module (the image worker). The model's topology
// and weights are JavaScript modules inside the nsfwjs package (base64), imported from local
// files; the WASM binaries are read from @tensorflow/tfjs-backend-wasm's own dist/ directory.
// Nothing is fetched: the global fetch is switched off in this thread while the model loads, so
// any attempt would fail loudly instead of going out.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { RgbImage } from "./pixels.js";

const require = createRequire(import.meta.url);

// The few parts of tfjs and nsfwjs used here (both are loaded with require: tfjs' ESM build does
// not resolve under Node's ESM loader, its CommonJS build does).
interface Tensor {
  dispose(): void;
}
interface Tfjs {
  setBackend(name: string): Promise<boolean>;
  ready(): Promise<void>;
  getBackend(): string;
  env(): { getAsync(flag: string): Promise<unknown> };
  tensor3d(values: Int32Array, shape: [number, number, number], dtype: "int32"): Tensor;
}
interface Prediction {
  className: "Drawing" | "Hentai" | "Neutral" | "Porn" | "Sexy";
  probability: number;
}
interface NsfwModel {
  classify(image: Tensor, topk?: number): Promise<Prediction[]>;
}

export type NsfwClasses = Record<Prediction["className"], number>;

export interface ImageModel {
  classify(image: RgbImage): Promise<NsfwClasses>;
  readonly info: { backend: string; simd: boolean; loadMs: number };
}

let loading: Promise<ImageModel> | undefined;

export function loadImageModel(): Promise<ImageModel> {
  loading ??= load().catch((e) => {
    loading = undefined;
    throw e;
  });
  return loading;
}

async function load(): Promise<ImageModel> {
  const started = performance.now();
  const realFetch = globalThis.fetch;
  const realInfo = console.info;
  globalThis.fetch = (() => Promise.reject(new Error("the image model must not use the network"))) as typeof fetch;
  console.info = () => {}; // nsfwjs announces which model it loads, on every load
  let tf: Tfjs;
  let model: NsfwModel;
  try {
    tf = require("@tensorflow/tfjs") as Tfjs;
    const wasm = require("@tensorflow/tfjs-backend-wasm") as { setWasmPaths(prefix: string): void };
    wasm.setWasmPaths(join(dirname(require.resolve("@tensorflow/tfjs-backend-wasm")), "/"));
    if (!(await tf.setBackend("wasm"))) throw new Error("the tfjs WASM backend did not start");
    await tf.ready();
    const { load: loadNsfw } = require("nsfwjs/core") as { load(name: string, opts: object): Promise<NsfwModel> };
    const { MobileNetV2Model } = require("nsfwjs/models/mobilenet_v2") as { MobileNetV2Model: object };
    model = await loadNsfw("MobileNetV2", { modelDefinitions: [MobileNetV2Model] });
  } finally {
    globalThis.fetch = realFetch;
    console.info = realInfo;
  }
  const info = { backend: tf.getBackend(), simd: (await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT")) === true, loadMs: performance.now() - started };

  async function classify(image: RgbImage): Promise<NsfwClasses> {
    const tensor = tf.tensor3d(Int32Array.from(image.rgb), [image.height, image.width, 3], "int32");
    try {
      const predictions = await model.classify(tensor, 5);
      const out: NsfwClasses = { Drawing: 0, Hentai: 0, Neutral: 0, Porn: 0, Sexy: 0 };
      for (const p of predictions) out[p.className] = p.probability;
      return out;
    } finally {
      tensor.dispose();
    }
  }
  return { classify, info };
}
