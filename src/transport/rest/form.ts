// Form bodies on routes that take JSON (`body: "*"`). Some clients send such calls as forms: the
// official SDKs' multipart/form-data for `videos.remix`, `curl -d` as application/x-www-form-urlencoded.
// A form's text fields fill the request message exactly as a multipart upload's fields do
// (`a[b]` names the nested field a.b; a repeated name appends to a list); a form here carries no file.
import busboy from "busboy";
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import type { DescMessage } from "@bufbuild/protobuf";
import { ApiError } from "../../common/errors.js";
import { setPath } from "./multipart.js";

/** The fields of a form body, in the order they came. */
export class FormBody {
  constructor(readonly fields: ReadonlyArray<readonly [string, string]>) {}

  static fromUrlEncoded(text: string): FormBody {
    return new FormBody([...new URLSearchParams(text)]);
  }

  /** The request message's init (local names), as fromRestJson gives it for a JSON body. */
  toInit(desc: DescMessage): Record<string, unknown> {
    const init: Record<string, unknown> = {};
    for (const [name, value] of this.fields) {
      if (!name) throw new ApiError(400, "A form field has an empty name.", { code: "invalid_value" });
      setPath(desc, init, name, value);
    }
    return init;
  }
}

const MAX_FIELDS = 1000;
const MAX_FIELD_BYTES = 1 << 20;

function malformed(message: string): ApiError {
  return new ApiError(400, `Malformed multipart/form-data request: ${message}`, { code: "invalid_multipart" });
}

/** Reads a multipart/form-data body of text fields only; a file part or a field past the limits is a 400. */
export function readMultipartForm(body: Readable, headers: IncomingHttpHeaders): Promise<FormBody> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers, defParamCharset: "utf8", limits: { fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, parts: MAX_FIELDS } });
    } catch (e) {
      reject(malformed((e as Error).message));
      return;
    }
    const fields: Array<[string, string]> = [];
    let failed = false;
    const fail = (e: ApiError) => {
      if (failed) return;
      failed = true;
      body.unpipe(bb);
      body.resume(); // drain the rest, so the connection can carry the answer
      reject(e);
    };
    bb.on("field", (name, value, info) => {
      if (info.valueTruncated) fail(new ApiError(400, `Form field '${name}' is longer than ${MAX_FIELD_BYTES} bytes.`, { param: name, code: "invalid_value" }));
      else fields.push([name, value]);
    });
    bb.on("file", (name, stream) => {
      stream.resume();
      fail(new ApiError(400, `This endpoint takes no file: send '${name}' as a text field, or the request as JSON.`, { param: name, code: "invalid_value" }));
    });
    bb.on("partsLimit", () => fail(malformed(`more than ${MAX_FIELDS} parts`)));
    bb.on("fieldsLimit", () => fail(malformed(`more than ${MAX_FIELDS} fields`)));
    bb.on("error", (e) => fail(malformed((e as Error).message)));
    bb.on("close", () => failed || resolve(new FormBody(fields)));
    body.on("error", (e) => fail(malformed(e.message)));
    body.pipe(bb);
  });
}
