// A stored blob as the server stream of google.api.HttpBody chunks every download RPC returns
// (files, container files, video assets). The first message carries the
// content type and an atrium.v1.ContentRange extension, from which the transcoder writes the
// REST status (200/206), Content-Length, Content-Range and Accept-Ranges; gRPC callers read the
// same extension. A Range the blob cannot satisfy throws the 416 before any byte is sent.
import { create } from "@bufbuild/protobuf";
import { anyPack } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ContentRangeSchema } from "../../gen/atrium/v1/options_pb.js";
import type { HttpBodySchema } from "../../gen/google/api/httpbody_pb.js";
import type { BlobStore } from "../storage/types.js";
import { parseRange } from "./range.js";

export interface BlobDownload {
  /** The blob's key in the store. */
  key: string;
  /** Its size in bytes (from the record that owns it). */
  size: number;
  contentType: string;
  /** The request's Range header value ("" = the whole blob). */
  range: string;
}

export async function* downloadBlob(blobs: BlobStore, d: BlobDownload): AsyncGenerator<MessageInitShape<typeof HttpBodySchema>> {
  const range = parseRange(d.range, d.size);
  const info = create(ContentRangeSchema, {
    size: BigInt(d.size),
    partial: !!range,
    start: BigInt(range?.start ?? 0),
    end: BigInt(range?.end ?? Math.max(0, d.size - 1)),
  });
  const head = { contentType: d.contentType, extensions: [anyPack(ContentRangeSchema, info)] };
  // The record's size is what the client is promised (Content-Length). A blob that disagrees on
  // disk must never break that framing: one shorter fails before any byte (an ordinary 500), or
  // mid-body (the connection is cut) if it shrinks while read; bytes past the record are not read.
  const stored = await blobs.size(d.key);
  if (stored !== undefined && stored < d.size) throw new Error(`blob ${d.key} holds ${stored} bytes, its record says ${d.size}`);
  const start = range?.start ?? 0;
  const want = d.size === 0 ? 0 : (range?.end ?? d.size - 1) - start + 1;
  let sent = 0;
  let sentHead = false;
  const chunks = want > 0 ? blobs.get(d.key, { start, end: start + want - 1 }) : [];
  for await (const chunk of chunks) {
    sent += chunk.length;
    if (!sentHead) {
      sentHead = true;
      yield { ...head, data: chunk };
    } else yield { data: chunk };
  }
  if (sent < want) throw new Error(`blob ${d.key} ended after ${sent} of ${want} bytes`);
  if (!sentHead) yield head;
}
