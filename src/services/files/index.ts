// The Files area (spec 4.5): the worked example of an area module (docs/architecture.md, "The area shape").
import { FilesService } from "../../../gen/atrium/v1/files_pb.js";
import type { ApiArea } from "../area.js";
import { FILE_KIND, releaseFileBytes } from "./files.js";
import { createFilesService } from "./handler.js";

export const filesArea: ApiArea = {
  name: "files",
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
  }),
};
