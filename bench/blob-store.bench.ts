/**
 * S3 blob store throughput: upload and download MB/s through S3BlobStore against the AWS SDK's own
 * PutObject/GetObject on the same private Swift (s3api), in the same run. Target ≥ 0.8× both ways.
 *
 *   node --import tsx bench/blob-store.bench.ts [--mib 64] [--runs 3]
 *
 * The store streams the body from 1 MiB chunks (multipart), with and without md5 (uploads of Files
 * ask for it); the baseline hands the SDK the whole body as one buffer, the cheapest way the SDK can
 * send it. Downloads read the same object (the store's multipart one) through the store's stream vs
 * the SDK's response body: Swift serves multipart objects slower than plain ones, which is the
 * store's object layout, not its code.
 * Candidates take turns each round after a warm-up, so drift hits them alike; medians are printed.
 */
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { CompleteMultipartUploadCommand, CreateMultipartUploadCommand, GetObjectCommand, PutObjectCommand, S3Client, UploadPartCommand } from "@aws-sdk/client-s3";
import { openS3BlobStore } from "../src/storage/s3-blobs.js";
import { testSwift } from "../test/shared/swift.js";
import { drain, median, timed } from "./harness.js";

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const MIB = arg("mib", 64);
const RUNS = arg("runs", 3);
const CHUNK = 1 << 20;

/** The SDK's multipart upload of an in-memory body, 8 MiB parts, 3 at a time (the store's shape). */
async function sdkMultipart(client: S3Client, bucket: string, key: string, body: Buffer): Promise<void> {
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
  const size = 8 << 20;
  const parts: Array<{ PartNumber: number; ETag?: string }> = [];
  for (let i = 0; i * size < body.length; i += 3) {
    const batch = [i, i + 1, i + 2].filter((n) => n * size < body.length);
    const done = await Promise.all(batch.map((n) => client.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: n + 1, Body: body.subarray(n * size, (n + 1) * size) }))));
    batch.forEach((n, j) => parts.push({ PartNumber: n + 1, ETag: done[j]!.ETag }));
  }
  await client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: { Parts: parts } }));
}

async function main(): Promise<void> {
  const swift = await testSwift();
  const bucket = await swift.newBucket("atrium-bench");
  const store = await openS3BlobStore(`s3://${bucket}/blobs`, swift.s3Env(bucket));
  const client = store.client;
  const body = randomBytes(MIB << 20);
  const chunks = Array.from({ length: Math.ceil(body.length / CHUNK) }, (_, i) => body.subarray(i * CHUNK, (i + 1) * CHUNK));

  const candidates = {
    "store put": () => timed(body.length, () => store.put("bench-store", Readable.from(chunks))),
    "store put+md5": () => timed(body.length, () => store.put("bench-md5", Readable.from(chunks), { md5: true })),
    "sdk put": () => timed(body.length, () => client.send(new PutObjectCommand({ Bucket: bucket, Key: "blobs/bench-sdk", Body: body, ContentLength: body.length }))),
    "sdk multipart": () => timed(body.length, () => sdkMultipart(client, bucket, "blobs/bench-mp", body)),
    "store get": () => timed(body.length, () => drain(store.get("bench-store"))),
    "sdk get": () => timed(body.length, async () => drain((await client.send(new GetObjectCommand({ Bucket: bucket, Key: "blobs/bench-store" }))).Body as Readable)),
  };
  const results: Record<string, number[]> = Object.fromEntries(Object.keys(candidates).map((k) => [k, []]));
  for (let round = 0; round <= RUNS; round++) {
    for (const [name, run] of Object.entries(candidates)) {
      const mbs = await run().catch((err: Error) => {
        throw new Error(`${name}, round ${round}: ${err.name}: ${err.message}`);
      });
      if (round > 0) results[name]!.push(mbs); // round 0 warms up
    }
  }
  const m = (k: string) => median(results[k]!);
  console.log(`blob store on Swift s3api, ${MIB} MiB object, median of ${RUNS} runs`);
  for (const k of Object.keys(candidates)) console.log(`  ${k.padEnd(14)} ${m(k).toFixed(1).padStart(7)} MB/s`);
  console.log(`  upload   S3BlobStore / SDK PutObject: ${(m("store put") / m("sdk put")).toFixed(2)}×, with md5 ${(m("store put+md5") / m("sdk put")).toFixed(2)}× (target ≥ 0.8×)`);
  console.log(`  upload   S3BlobStore / SDK multipart (same part size): ${(m("store put") / m("sdk multipart")).toFixed(2)}×`);
  console.log(`  download S3BlobStore / SDK GetObject: ${(m("store get") / m("sdk get")).toFixed(2)}× (target ≥ 0.8×)`);
  store.client.destroy();
}

await main();
