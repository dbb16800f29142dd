// The Files area (spec 4.5): the worked example of an area module (docs/architecture.md, "The area shape").
// Other areas use Files only through what this file exports: FilesApi (filesApi(deps)), the
// size limits, the upload rules Uploads shares, and the File message.
import { FilesService } from "../../../gen/atrium/v1/files_pb.js";
import { FILE_BYTES_MIGRATION } from "../../limits/index.js";
import type { ApiArea } from "../area.js";
import type { ServiceDeps } from "../deps.js";
import { FilesApi } from "./api.js";
import { heldFileBlobs, releaseFileBytes } from "./files.js";
import { createFilesService } from "./handler.js";
import { FILE_KIND } from "./records.js";

export { FilesApi, type FileView, type NewFile } from "./api.js";
export {
  MAX_BATCH_FILE_BYTES,
  MAX_EXPIRY_SECONDS,
  MAX_FILE_BYTES,
  MAX_FILENAME_CHARS,
  MIN_EXPIRY_SECONDS,
  checkContentRules,
  checkExpiresAfter,
  checkFilename,
  checkPurpose,
  expiryFor,
  mimeFor,
  type ExpiresAfterInput,
} from "./files.js";
export { fileMessage } from "./handler.js";

/** The files area's API over `deps`' storage. */
export function filesApi(deps: Pick<ServiceDeps, "records" | "blobs" | "clock" | "events" | "log">): FilesApi {
  return new FilesApi(deps);
}

export const filesArea: ApiArea = {
  name: "files",
  // The running total of the project's File bytes that the storage cap reads (limits/storage.ts).
  migrations: [FILE_BYTES_MIGRATION],
  // The official SDK sends the bytes as the `file` part; each chunk becomes one CreateFileRequest.
  multipart: { "atrium.v1.FilesService.CreateFile": { file: "file", chunk: "chunk", filename: "filename" } },
  setup: ({ deps }) => ({
    services: [{ desc: FilesService, impl: createFilesService(deps) }],
    // An expired file's record goes with the sweep; its bytes go here (unless a container file shares them).
    expiry: {
      [FILE_KIND]: async (scope, rec) => {
        await deps.events.fileDeleted(scope, rec.id);
        await releaseFileBytes(deps, scope, rec.id);
      },
    },
    // Batch output and fine-tuning result files are Files too: their keys are File ids.
    blobOwners: [{ prefix: "file-", held: (keys) => heldFileBlobs(deps, keys) }],
  }),
};
