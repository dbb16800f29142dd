// JSON request bodies (src/transport/rest/json-body.ts): bodies past the threshold are parsed on
// the JSON worker and come back equal to the in-thread parse, errors included; small ones never
// leave the thread; a closed parser parses here.
import { afterAll, describe, expect, it } from "vitest";
import { JsonBodies, parseJsonBody } from "../../../src/transport/rest/json-body.js";
import { ApiError } from "../../../src/common/errors.js";

const bodies = new JsonBodies(1024);
afterAll(() => bodies.close());

const messageOf = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return { status: (e as ApiError).status, message: (e as Error).message };
  }
  throw new Error("no error");
};

describe("JsonBodies", () => {
  const value = { model: "gpt-4o", input: [{ role: "user", content: "naïve café 😀 ".repeat(500) }], n: [1, 2.5, -3e-7, null, true], nested: { deep: [[[{}]]] } };

  it("a body under the threshold is parsed in this thread (no promise)", () => {
    const r = bodies.parse(Buffer.from('{"a": 1}'));
    expect(r).not.toBeInstanceOf(Promise);
    expect(r).toEqual({ a: 1 });
    expect(bodies.parse(Buffer.alloc(0))).toBeUndefined();
  });

  it("a large body comes back from the worker equal to the in-thread parse, whether it owns its memory or is a view", async () => {
    const text = JSON.stringify(value);
    const own = Buffer.from(text);
    const expected = parseJsonBody(Buffer.from(text));
    const fromOwn = bodies.parse(own);
    expect(fromOwn).toBeInstanceOf(Promise);
    expect(await fromOwn).toEqual(expected);
    expect(await fromOwn).toEqual(value);
    // A view into a larger buffer is copied, not moved: the larger buffer stays usable here.
    const big = Buffer.from("xx" + text + "yy");
    const view = big.subarray(2, 2 + Buffer.byteLength(text));
    expect(await bodies.parse(view)).toEqual(value);
    expect(big.subarray(0, 2).toString()).toBe("xx");
  });

  it("a broken large body is the same 400 invalid_json as in-thread, naming the position only", async () => {
    for (const text of [JSON.stringify(value).slice(0, -3), `{"secret": "sk-live-1${"a".repeat(5000)}" oops}`, `${" ".repeat(4000)}`]) {
      const here = messageOf(() => parseJsonBody(Buffer.from(text)));
      const there = await (bodies.parse(Buffer.from(text)) as Promise<unknown>).then(
        () => {
          throw new Error("parsed");
        },
        (e: ApiError) => ({ status: e.status, message: e.message }),
      );
      expect(there).toEqual(here);
      expect(there.status).toBe(400);
      expect(there.message).not.toContain("sk-live-1");
    }
  });

  it("after close, bodies are parsed in this thread", async () => {
    const closing = new JsonBodies(16);
    expect(await closing.parse(Buffer.from(JSON.stringify(value)))).toEqual(value);
    await closing.close();
    const r = closing.parse(Buffer.from(JSON.stringify(value)));
    expect(r).not.toBeInstanceOf(Promise);
    expect(r).toEqual(value);
  });
});
