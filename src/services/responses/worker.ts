// A counting worker thread (started by CountingWorkers, workers.ts): counts one large request body
// at a time with the engine, asking the main thread for the project's Files.
import { callHost, serveTasks } from "../../engines/pool/index.js";
import { getEncoding, InputTokensError, warmUpTokenizer } from "../../engines/tokenizer/index.js";
import type { Scope } from "../../storage/types.js";
import { countBody, type CountReply, type CountTask, type HostFileReply } from "./counting.js";

// The encodings' tables are built before the first task, as in the batch workers (see there: built
// during a request, they leave V8's pretenuring feedback wrong for the rest of the thread's life).
warmUpTokenizer();

const lookups = {
  async readFile(scope: Scope, fileId: string) {
    const r = await callHost<HostFileReply>("readFile", scope, fileId);
    if ("error" in r) throw new InputTokensError(r.error.status, r.error.param, r.error.message, r.error.code);
    return r.file;
  },
};

serveTasks<CountTask, CountReply>(async (task) => {
  if ("text" in task) return { inputTokens: getEncoding(task.encoding).countTokens(task.text) };
  try {
    return { inputTokens: await countBody(task.body, task.scope, lookups, task.policy) };
  } catch (e) {
    if (e instanceof InputTokensError) return { error: { status: e.status, param: e.param, message: e.message, code: e.code } };
    throw e;
  }
});
