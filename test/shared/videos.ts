// Videos through the official SDK: waiting for a render to end.
import type OpenAI from "openai";
import { pollUntil } from "./poll.js";

/** Retrieves the video every 200 ms until it is completed or failed (at most `ms`), and returns it. */
export function untilVideoEnds(client: OpenAI, id: string, ms = 120_000): Promise<OpenAI.Videos.Video> {
  return pollUntil(() => client.videos.retrieve(id), (v) => v.status === "completed" || v.status === "failed", `video ${id}`, { ms, intervalMs: 200 });
}
