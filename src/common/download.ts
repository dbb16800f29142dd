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
  let sentHead = false;
  for await (const chunk of blobs.get(d.key, range)) {
    if (!sentHead) {
      sentHead = true;
      yield { ...head, data: chunk };
    } else yield { data: chunk };
  }
  if (!sentHead) yield head;
}
