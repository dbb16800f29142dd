// HTTP Range for downloads (RFC 9110 §14): one "bytes=" range, as players and resumable clients send.
import { ApiError } from "./errors.js";

export interface ByteRange {
  start: number;
  end: number; // inclusive
}

/** undefined = serve the whole resource; throws 416-style ApiError for unsatisfiable ranges. */
export function parseRange(header: string, size: number): ByteRange | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  // Multiple ranges or other units: serve the whole resource, as RFC 9110 allows.
  if (!m || (m[1] === "" && m[2] === "")) return undefined;
  let start: number;
  let end: number;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) throw unsatisfiable(size);
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== "" && Number(m[2]) < start) return undefined;
  }
  if (start >= size || size === 0) throw unsatisfiable(size);
  return { start, end };
}

function unsatisfiable(size: number): ApiError {
  return new ApiError(416, `Requested range not satisfiable (resource is ${size} bytes).`, {
    param: "range",
    code: "range_not_satisfiable",
    headers: { "content-range": `bytes */${size}` },
  });
}
