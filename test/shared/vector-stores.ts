// Shared pieces of the vector store tests: small documents on distinct topics, uploads, and a
// wait for a store's files to settle.
import type OpenAI from "openai";
import { toFile } from "./rest.js";

/** Short documents on unrelated topics (distractors), each a few sentences. */
export const TOPICS = [
  "Sourdough bread rises slowly because wild yeast and lactic bacteria ferment the dough overnight. Bakers fold the dough several times and bake it in a very hot oven.",
  "The marathon runner trained for months, running long distances on weekends and intervals on the track. On race day she finished in under three hours.",
  "Jupiter is the largest planet in the solar system, a gas giant with a great red spot that is a storm larger than Earth. Its moons include Europa and Ganymede.",
  "The orchestra rehearsed the symphony for weeks. The conductor asked the violins to play softer during the slow movement and the brass to enter on time.",
  "Composting turns kitchen scraps and garden waste into rich soil. Turn the pile regularly, keep it moist, and balance green and brown materials.",
  "The medieval castle had thick stone walls, a moat and a drawbridge. Archers defended the towers while the lord's family lived in the keep.",
  "Electric cars use batteries instead of petrol engines. Charging at home overnight is cheapest, while fast chargers on motorways fill the battery in half an hour.",
  "Honeybees communicate the location of flowers with a waggle dance. The hive keeps its temperature steady, and the queen lays thousands of eggs each day.",
  "Chess openings such as the Sicilian Defence aim to control the centre. Grandmasters memorise long lines of moves and study endgames carefully.",
  "Volcanoes erupt when magma rises through cracks in the crust. Lava flows, ash clouds and pyroclastic currents can reach towns far from the crater.",
  "The stock exchange opened lower after the central bank raised interest rates. Technology shares fell while energy companies gained.",
  "Knitting a scarf needs two needles, soft wool and patience. Beginners start with the garter stitch before trying cables or colour work.",
];

export async function upload(client: OpenAI, text: string | Uint8Array, filename: string): Promise<string> {
  const body = typeof text === "string" ? Buffer.from(text) : Buffer.from(text);
  const f = await client.files.create({ file: await toFile(body, filename), purpose: "assistants" });
  return f.id;
}

/** Polls the store until no file is in progress (the SDK's own pollers are tested separately). */
export async function settle(client: OpenAI, storeId: string, timeoutMs = 60_000): Promise<OpenAI.VectorStores.VectorStore> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const vs = await client.vectorStores.retrieve(storeId);
    if (vs.file_counts.in_progress === 0) return vs;
    if (Date.now() > deadline) throw new Error(`vector store ${storeId} still has ${vs.file_counts.in_progress} files in progress`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A text of about `paragraphs` × 120 tokens, distinct per `seed`. */
export function longText(seed: number, paragraphs: number): string {
  return Array.from({ length: paragraphs }, (_, p) => {
    const topic = TOPICS[(seed + p) % TOPICS.length]!;
    return `Section ${seed}.${p}. ${topic} Note ${seed * 1000 + p} adds that the ledger entry ${p * 7919 + seed} was filed on day ${(p % 28) + 1}.`;
  }).join("\n\n");
}
