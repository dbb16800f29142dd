// The Containers area (spec 4.2, 2.2): containers with memory limit, network policy (domain
// secrets encrypted at rest), skills and files; expiry after inactivity on a durable timer.
import { ContainersService } from "../../../gen/atrium/v1/containers_pb.js";
import type { ApiArea } from "../area.js";
import { timerKind } from "../../jobs/expiry.js";
import { Containers, EXPIRY_TIMER, PURGE_TIMER } from "./containers.js";
import { createContainersService } from "./handler.js";
import { SecretBox } from "./secrets.js";
import { CONTAINER_FILE_KIND, CONTAINER_SKILL_KIND } from "./records.js";
import { keysOfPresentRecords } from "../../common/blobs.js";

export const containersArea: ApiArea = {
  name: "containers",
  // The official SDK sends multipart with `file` for raw content, or JSON {file_id}: both on one path.
  multipart: { "atrium.v1.ContainersService.CreateContainerFile": { file: "file", chunk: "chunk", filename: "filename", json: true } },
  setup: ({ deps, config }) => {
    const secrets = new SecretBox({ secretKey: config.secretKey, dataDir: config.dataDir, purpose: "container domain secrets" });
    const containers = new Containers(deps, secrets);
    return {
      services: [{ desc: ContainersService, impl: createContainersService(deps, containers) }],
      expiry: {
        // Inactive past expires_after.minutes: status expired, files and skills purged.
        [timerKind(EXPIRY_TIMER)]: (scope, rec) => containers.expire(scope, rec.id),
        // Set with a delete, in case the clean-up after it did not finish.
        [timerKind(PURGE_TIMER)]: (scope, rec) => containers.purge(scope, rec.id),
      },
      // A container file made from a File shares the File's blob (the files area's); an uploaded
      // one and an inline skill have their own, under their ids.
      blobOwners: [
        { prefix: "cfile_", held: (keys) => keysOfPresentRecords(deps.records, CONTAINER_FILE_KIND, keys) },
        { prefix: "skill_", held: (keys) => keysOfPresentRecords(deps.records, CONTAINER_SKILL_KIND, keys) },
      ],
    };
  },
};
