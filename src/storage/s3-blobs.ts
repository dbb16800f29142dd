// BlobStore on S3-compatible object storage (ATRIUM_BLOB_URL=s3://bucket[/prefix]), shared by every
// instance. S3 gives what the disk store builds by hand: an object appears only once its whole
// body is stored (a single PUT, or a multipart upload completed), so a key shows its old bytes or
// all of its new ones. Bodies stream through in parts (lib-storage's Upload: 8 MiB parts, 4 in
// flight), never whole in memory.
import { createHash, type Hash } from "node:crypto";
import { PassThrough, Readable, Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { checkBlobKey } from "./disk-blobs.js";
import { BlobNotFound, BlobTooLarge, type BlobEntry, type BlobInfo, type BlobStore } from "./types.js";

/** Part size of streamed uploads: above S3's 5 MiB minimum, small enough to keep memory flat. */
export const S3_PART_BYTES = 8 * 1024 * 1024;
export const S3_PARTS_IN_FLIGHT = 4;
/**
 * Multipart uploads older than this are abandoned writes (a process died mid-upload) and are
 * aborted at start-up. Generous, because another instance's long upload may still be running.
 */
export const STALE_MULTIPART_MS = 24 * 60 * 60 * 1000;

/** A BlobStore location: the bucket and the key prefix every blob key goes under. */
export interface S3Location {
  bucket: string;
  prefix: string;
}

/** Parses `s3://bucket[/prefix]`; the message names what is wrong. */
export function parseS3Url(url: string): S3Location {
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(url);
  if (!m) throw new Error(`ATRIUM_BLOB_URL must look like s3://bucket[/prefix], got ${JSON.stringify(url)}`);
  const bucket = m[1]!;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new Error(`ATRIUM_BLOB_URL names an invalid bucket ${JSON.stringify(bucket)} (3-63 lowercase letters, digits, dots, hyphens)`);
  let prefix = (m[2] ?? "").replace(/^\/+|\/+$/g, "");
  if (prefix) prefix += "/";
  return { bucket, prefix };
}

/** The S3 client settings from the standard AWS variables. */
export function s3ClientConfig(env: Record<string, string | undefined>): S3ClientConfig {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const forcePathStyle = /^(1|true|yes)$/i.test(env.ATRIUM_S3_FORCE_PATH_STYLE ?? "");
  const config: S3ClientConfig = { region: env.AWS_REGION || env.AWS_DEFAULT_REGION || "us-east-1", forcePathStyle, maxAttempts: 3 };
  if (endpoint) config.endpoint = endpoint;
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY)
    config.credentials = { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN || undefined };
  return config;
}

/** Counts (and optionally hashes) the bytes that pass; fails once they cross the limit. */
class Meter extends Transform {
  bytes = 0;
  private readonly hash: Hash | undefined;
  constructor(private readonly maxBytes: number | undefined, md5: boolean) {
    super();
    this.hash = md5 ? createHash("md5") : undefined;
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.maxBytes !== undefined && this.bytes > this.maxBytes) return cb(new BlobTooLarge(this.maxBytes));
    this.hash?.update(chunk);
    cb(null, chunk);
  }
  digest(): string | undefined {
    return this.hash?.digest("hex");
  }
}

const isNotFound = (e: unknown) => {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err?.name === "NoSuchKey" || err?.name === "NotFound" || err?.$metadata?.httpStatusCode === 404;
};

export class S3BlobStore implements BlobStore {
  constructor(
    readonly client: S3Client,
    readonly location: S3Location,
  ) {}

  private objectKey(key: string): string {
    checkBlobKey(key);
    return this.location.prefix + key;
  }

  async put(key: string, source: AsyncIterable<Uint8Array> | Readable, opts?: { maxBytes?: number; md5?: boolean }): Promise<BlobInfo> {
    const objectKey = this.objectKey(key);
    return this.write(objectKey, (meter) => pipeline(source, meter), opts?.maxBytes, opts?.md5 ?? false);
  }

  async concat(key: string, parts: string[]): Promise<BlobInfo> {
    const objectKey = this.objectKey(key);
    for (const p of parts) checkBlobKey(p);
    // Streamed through, part after part, into one object: an upload's parts may be any size, and
    // S3 refuses multipart parts under 5 MiB but the last, so they cannot map onto S3's parts.
    const self = this;
    async function* sequence(): AsyncGenerator<Buffer> {
      for (const p of parts) for await (const chunk of self.get(p)) yield chunk as Buffer;
    }
    return this.write(objectKey, (meter) => pipeline(sequence(), meter), undefined, true);
  }

  private async write(objectKey: string, fill: (meter: Meter) => Promise<void>, maxBytes: number | undefined, md5: boolean): Promise<BlobInfo> {
    const meter = new Meter(maxBytes, md5);
    const body = new PassThrough({ highWaterMark: 1 << 20 });
    meter.pipe(body);
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.location.bucket, Key: objectKey, Body: body },
      partSize: S3_PART_BYTES,
      queueSize: S3_PARTS_IN_FLIGHT,
      // A failed multipart upload is aborted, so no part outlives it.
      leavePartsOnError: false,
    });
    const uploading = upload.done();
    // The store refusing a part must also stop the source, or fill() would wait on it forever.
    uploading.catch((e) => meter.destroy(e as Error));
    try {
      await fill(meter);
    } catch (e) {
      // The source failed or went over maxBytes: the object must not appear. Failing the body
      // (rather than Upload.abort(), which forgets a multipart upload whose creation is still in
      // flight) ends the upload through its own error path, which aborts the multipart upload.
      body.destroy(e as Error);
      await uploading.catch(() => {});
      if (upload.uploadId)
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.location.bucket, Key: objectKey, UploadId: upload.uploadId })).catch(() => {});
      throw e;
    }
    await uploading;
    const digest = meter.digest();
    return digest === undefined ? { bytes: meter.bytes } : { bytes: meter.bytes, md5: digest };
  }

  get(key: string, range?: { start: number; end: number }): Readable {
    const objectKey = this.objectKey(key);
    if (range) {
      const { start, end } = range;
      if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) throw new RangeError(`invalid byte range ${start}-${end}`);
    }
    const out = new PassThrough({ highWaterMark: 1 << 20 });
    const abort = new AbortController();
    out.once("close", () => abort.abort());
    void (async () => {
      try {
        const res = await this.client.send(
          new GetObjectCommand({ Bucket: this.location.bucket, Key: objectKey, Range: range ? `bytes=${range.start}-${range.end}` : undefined }),
          { abortSignal: abort.signal },
        );
        await pipeline(res.Body as Readable, out);
      } catch (e) {
        if (!out.destroyed) out.destroy(isNotFound(e) ? new BlobNotFound(key) : (e as Error));
      }
    })();
    return out;
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key) }));
      return head.ContentLength;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.location.bucket, Key: this.objectKey(key) }));
  }

  async *list(prefix = ""): AsyncGenerator<BlobEntry> {
    const base = this.location.prefix;
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: base + prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) {
        const key = o.Key!.slice(base.length);
        if (key.includes("/")) continue; // not one of ours (a deeper prefix)
        yield { key, bytes: o.Size ?? 0, modifiedAt: o.LastModified?.getTime() ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Aborts multipart uploads under the prefix that a dead process left (older than STALE_MULTIPART_MS). */
  async recover(now = Date.now()): Promise<void> {
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({ Bucket: this.location.bucket, Prefix: this.location.prefix, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
      );
      for (const u of page.Uploads ?? [])
        if (u.Initiated && now - u.Initiated.getTime() > STALE_MULTIPART_MS)
          await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.location.bucket, Key: u.Key!, UploadId: u.UploadId! }));
      if (!page.IsTruncated) return;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
    }
  }

  close(): void {
    this.client.destroy();
  }
}

/**
 * Opens the store at `url` (s3://bucket[/prefix]) with the endpoint and credentials of the AWS
 * variables in `env`, and checks the bucket is there: an unreachable endpoint or a missing
 * bucket fails here, with a message naming them, rather than at the first upload.
 */
export async function openS3BlobStore(url: string, env: Record<string, string | undefined>): Promise<S3BlobStore> {
  const location = parseS3Url(url);
  // The SDK release is pinned to one that supports Node 20; its notice that later releases will
  // not tells an operator nothing to do.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const config = s3ClientConfig(env);
  const client = new S3Client(config);
  const where = `${url} at ${config.endpoint ?? "the AWS endpoint"}`;
  try {
    await client.send(new HeadBucketCommand({ Bucket: location.bucket }));
  } catch (e) {
    client.destroy();
    const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (status === 404) throw new Error(`the bucket of ATRIUM_BLOB_URL does not exist: ${where}`);
    if (status === 403) throw new Error(`the credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY may not use ${where}`);
    throw new Error(`cannot reach ${where}: ${(e as Error).message}`);
  }
  const store = new S3BlobStore(client, location);
  await store.recover();
  return store;
}
