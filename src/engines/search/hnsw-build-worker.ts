// The graph build worker (dense.ts): inserts the given slots of the shared slab into a new graph,
// writes the graph file and sends the graph back. It reads the vectors where the store keeps them;
// it copies none. Its thread runs at a lower priority: requests come first.
import { parentPort, workerData } from "node:worker_threads";
import { lowerPriority } from "../pool/serve.js";
import type { GraphBuildReply, GraphBuildTask } from "./dense.js";
import { writeGraphFile } from "./hnsw-files.js";
import { HnswGraph } from "./hnsw.js";
import { VectorSlab } from "./vector-slab.js";

const BUILD_NICE = 10;

const task = workerData as GraphBuildTask;
let reply: GraphBuildReply;
const transfer: ArrayBuffer[] = [];
try {
  lowerPriority(BUILD_NICE);
  const graph = new HnswGraph(VectorSlab.attach(task.slab), { m: task.m, efConstruction: task.efConstruction }, task.slots.length);
  for (let i = 0; i < task.slots.length; i++) graph.insert(task.slots[i]!, task.labels[i]!);
  const parts = graph.toParts();
  writeGraphFile(task.file, parts);
  reply = { ok: true, parts };
  transfer.push(parts.labels.buffer as ArrayBuffer, parts.levels.buffer as ArrayBuffer, parts.links0.buffer as ArrayBuffer, parts.upper.buffer as ArrayBuffer);
} catch (err) {
  reply = { ok: false, error: String((err as Error)?.stack ?? err) };
}
parentPort!.postMessage(reply, transfer);
