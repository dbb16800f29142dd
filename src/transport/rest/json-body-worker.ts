// The JSON body worker (started by JsonBodies, json-body.ts): decodes and parses one large body at a time.
import { serveTasks } from "../../engines/pool/index.js";
import { parseJsonBytes, type ParseReply } from "./json-body.js";

serveTasks<Uint8Array, ParseReply>((body) => parseJsonBytes(body));
