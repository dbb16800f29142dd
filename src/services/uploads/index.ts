// The Uploads area (spec 4.6): multi-part uploads that complete into a File.
import { UploadsService } from "../../../gen/atrium/v1/uploads_pb.js";
import type { ApiArea } from "../area.js";
import { timerKind } from "../../jobs/expiry.js";
import { createUploadsService } from "./handler.js";
import { Uploads, UPLOAD_TIMER } from "./uploads.js";
import { PART_KIND } from "./records.js";
import { keysOfPresentRecords } from "../../common/blobs.js";

export const uploadsArea: ApiArea = {
  name: "uploads",
  multipart: { "atrium.v1.UploadsService.AddUploadPart": { file: "data", chunk: "data" } },
  setup: ({ deps }) => {
    const uploads = new Uploads(deps);
    return {
      services: [{ desc: UploadsService, impl: createUploadsService(deps, uploads) }],
      // An upload still pending an hour after creation expires (its parts are removed).
      expiry: { [timerKind(UPLOAD_TIMER)]: (scope, rec) => uploads.expire(scope, rec.id) },
      // A part's bytes are under its id (the completed File's are the files area's).
      blobOwners: [{ prefix: "part_", held: (keys) => keysOfPresentRecords(deps.records, PART_KIND, keys) }],
    };
  },
};
