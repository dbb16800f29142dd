// The Uploads area (spec 4.6): multi-part uploads that complete into a File.
import { UploadsService } from "../../../gen/atrium/v1/uploads_pb.js";
import type { ApiArea } from "../area.js";
import { timerKind } from "../../jobs/expiry.js";
import { createUploadsService } from "./handler.js";
import { Uploads, UPLOAD_TIMER } from "./uploads.js";

export const uploadsArea: ApiArea = {
  name: "uploads",
  multipart: { "atrium.v1.UploadsService.AddUploadPart": { file: "data", chunk: "data" } },
  setup: ({ deps }) => {
    const uploads = new Uploads(deps);
    return {
      services: [{ desc: UploadsService, impl: createUploadsService(deps, uploads) }],
      // An upload still pending an hour after creation expires (its parts are removed).
      expiry: { [timerKind(UPLOAD_TIMER)]: (scope, rec) => uploads.expire(scope, rec.id) },
    };
  },
};
