// POST /v1/fine_tuning/alpha/graders/run and /validate through the official SDK (every grader
// type, the metadata shape of spec 4.10, errors reported in metadata), score_model / label_model
// against a fake upstream responses provider and with none, the python sandbox's limits, and the
// same calls over Connect and gRPC.
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { GradersService } from "../../../gen/atrium/v1/fine_tuning_pb.js";
import { sandboxIsolation } from "../../../src/engines/graders/index.js";
import { API_KEY, startTestServer, tempDir, testConfig, type TestServer } from "../../shared/server.js";
import { startFakeUpstream, type FakeUpstream } from "../../shared/fake-upstream.js";
import { api, expectError, sdk } from "../../shared/rest.js";
import { as, expectRpcError } from "../../shared/rpc.js";

/** A test server whose ATRIUM_CONFIG adds `extra` sections to the usual organizations and keys. */
async function startWith(extra: Record<string, unknown>): Promise<TestServer> {
  const dir = tempDir();
  const path = testConfig(dir);
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), ...extra }));
  return startTestServer({ env: { ATRIUM_CONFIG: path, TEST_UPSTREAM_KEY: "sk-upstream" } });
}

const ERROR_FLAGS = [
  "formula_parse_error",
  "invalid_variable_error",
  "model_grader_parse_error",
  "model_grader_refusal_error",
  "model_grader_server_error",
  "model_grader_server_error_details",
  "other_error",
  "python_grader_runtime_error",
  "python_grader_runtime_error_details",
  "python_grader_server_error",
  "python_grader_server_error_type",
  "sample_parse_error",
  "truncated_observation_error",
  "unresponsive_reward_error",
];

// The fake upstream: answers /v1/responses with whatever `nextAnswer` says.
let upstream: FakeUpstream;
let nextAnswer: (body: any) => unknown = () => ({});
const upstreamBodies: any[] = [];

let s: TestServer;
let client: OpenAI;

beforeAll(async () => {
  upstream = await startFakeUpstream(({ body }) => {
    upstreamBodies.push(body);
    return { json: nextAnswer(body) };
  });
  s = await startWith({
    providers: { responses: { base_url: upstream.baseUrl, api_key_env: "TEST_UPSTREAM_KEY" } },
    fine_tuning: { python_grader: { timeout_ms: 1500, memory_mb: 256 } },
  });
  client = sdk(s.baseURL);
});
afterAll(async () => {
  await s?.stop();
  await upstream?.close();
});

const run = (grader: object, model_sample: string, item: object = {}) => client.fineTuning.alpha.graders.run({ grader: grader as any, model_sample, item });

function expectFullMetadata(res: any, name: string, type: string) {
  expect(Object.keys(res).sort()).toEqual(["metadata", "model_grader_token_usage_per_model", "reward", "sub_rewards"]);
  expect(Object.keys(res.metadata).sort()).toEqual(["errors", "execution_time", "name", "sampled_model_name", "scores", "token_usage", "type"]);
  expect(Object.keys(res.metadata.errors).sort()).toEqual([...ERROR_FLAGS].sort());
  expect(res.metadata.name).toBe(name);
  expect(res.metadata.type).toBe(type);
  expect(res.metadata.execution_time).toBeGreaterThanOrEqual(0);
}

const noErrors = () => Object.fromEntries(ERROR_FLAGS.map((f) => [f, f.endsWith("_details") || f.endsWith("_type") ? null : false]));

describe("string_check", () => {
  it("eq with templates: reward 1, every metadata field present, no errors", async () => {
    const res = await run({ type: "string_check", name: "exact", input: "{{sample.output_text}}", reference: "{{item.label}}", operation: "eq" }, "Paris", { label: "Paris" });
    expectFullMetadata(res, "exact", "string_check");
    expect(res.reward).toBe(1);
    expect(res.metadata.errors).toEqual(noErrors());
    expect(res.metadata).toMatchObject({ scores: {}, token_usage: null, sampled_model_name: null });
    expect(res.sub_rewards).toEqual({});
    expect(res.model_grader_token_usage_per_model).toEqual({});
  });

  it("like / ilike / ne, nested output_json paths and arrays by index", async () => {
    const sample = JSON.stringify({ answer: { cities: ["Lyon", "Paris"] } });
    const g = (operation: string, reference: string) => ({ type: "string_check", name: "g", input: "{{sample.output_json.answer.cities.1}}", reference, operation });
    expect((await run(g("like", "P%"), sample)).reward).toBe(1);
    expect((await run(g("like", "p%"), sample)).reward).toBe(0);
    expect((await run(g("ilike", "p_ris"), sample)).reward).toBe(1);
    expect((await run(g("ne", "{{item.other}}"), sample, { other: "Lyon" })).reward).toBe(1);
  });

  it("an unknown variable → invalid_variable_error; output_json of a non-JSON sample → sample_parse_error (200, reward 0)", async () => {
    const a = await run({ type: "string_check", name: "g", input: "{{item.nope}}", reference: "x", operation: "eq" }, "x", {});
    expect(a.reward).toBe(0);
    expect(a.metadata.errors).toEqual({ ...noErrors(), invalid_variable_error: true });
    const b = await run({ type: "string_check", name: "g", input: "{{sample.output_json.a}}", reference: "x", operation: "eq" }, "not json");
    expect(b.metadata.errors).toEqual({ ...noErrors(), sample_parse_error: true });
  });
});

describe("text_similarity", () => {
  const fixtures = JSON.parse(readFileSync(new URL("../../fixtures/graders/similarity.json", import.meta.url), "utf8"));
  const pair = fixtures.pairs[2];
  for (const metric of ["fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5", "rouge_l"]) {
    it(`${metric} through the API equals the reference value`, async () => {
      const res = await run({ type: "text_similarity", name: "sim", input: "{{sample.output_text}}", reference: "{{item.ref}}", evaluation_metric: metric }, pair.input, { ref: pair.reference });
      expect(res.reward).toBeCloseTo(pair[metric], 12);
      expect(res.metadata.errors).toEqual(noErrors());
    });
  }

  it("cosine through the embeddings provider (the local encoder): paraphrases score higher", async () => {
    const g = (reference: string) => ({ type: "text_similarity", name: "cos", input: "{{sample.output_text}}", reference, evaluation_metric: "cosine" });
    const close = await run(g("I forgot my login credentials and need to change them"), "How do I reset my password?");
    const far = await run(g("The weather in Paris is sunny"), "How do I reset my password?");
    expect(close.metadata.errors).toEqual(noErrors());
    expect(close.reward).toBeGreaterThan(far.reward);
    expect((await run(g("same words"), "same words")).reward).toBeCloseTo(1, 5);
  });
});

describe("python", () => {
  const py = (source: string) => ({ type: "python", name: "py", source });

  it("runs grade(sample, item): sample.output_text, output_json and item are there", async () => {
    const res = await run(py("def grade(sample, item):\n    return 0.25 + (sample['output_json']['n'] == item['n']) * 0.5\n"), '{"n": 3}', { n: 3 });
    expect(res.reward).toBe(0.75);
    expect(res.metadata.errors).toEqual(noErrors());
  });

  it("a syntax error and a runtime error → python_grader_runtime_error with details", async () => {
    const syntax = await run(py("def grade(sample, item)\n    return 1\n"), "x");
    expect(syntax.metadata.errors.python_grader_runtime_error).toBe(true);
    expect(syntax.metadata.errors.python_grader_runtime_error_details).toMatch(/SyntaxError/);
    const runtime = await run(py("def grade(sample, item):\n    return 1 / 0\n"), "x");
    expect(runtime.reward).toBe(0);
    expect(runtime.metadata.errors.python_grader_runtime_error).toBe(true);
    expect(runtime.metadata.errors.python_grader_runtime_error_details).toMatch(/ZeroDivisionError/);
    const notNumber = await run(py("def grade(sample, item):\n    return 'high'\n"), "x");
    expect(notNumber.metadata.errors.python_grader_runtime_error_details).toMatch(/must return a number/);
  });

  it("a grader that runs past the wall-clock limit is killed and reported", async () => {
    const started = Date.now();
    const res = await run(py("def grade(sample, item):\n    while True:\n        pass\n"), "x");
    expect(Date.now() - started).toBeLessThan(8000);
    expect(res.metadata.errors.python_grader_runtime_error).toBe(true);
    expect(res.metadata.errors.python_grader_runtime_error_details).toMatch(/did not finish within 1.5 s/);
  });

  it("memory is capped", async () => {
    const res = await run(py("def grade(sample, item):\n    x = bytearray(1024 * 1024 * 1024)\n    return 1\n"), "x");
    expect(res.metadata.errors.python_grader_runtime_error).toBe(true);
    expect(res.metadata.errors.python_grader_runtime_error_details).toMatch(/MemoryError|memory/);
  });

  it("no network, no writes outside its temp dir, no subprocesses; writing in its own dir works", async () => {
    const net = await run(py("import socket\ndef grade(sample, item):\n    socket.create_connection(('127.0.0.1', 80), timeout=1)\n    return 1\n"), "x");
    expect(net.metadata.errors.python_grader_runtime_error_details).toMatch(/network access is disabled|Network is unreachable|PermissionError/);
    const write = await run(py("def grade(sample, item):\n    open('/tmp/atrium-grader-escape.txt', 'w').write('x')\n    return 1\n"), "x");
    expect(write.metadata.errors.python_grader_runtime_error_details).toMatch(/outside the grader's temporary directory|Permission denied/);
    const proc = await run(py("import os\ndef grade(sample, item):\n    os.system('true')\n    return 1\n"), "x");
    expect(proc.metadata.errors.python_grader_runtime_error_details).toMatch(/not allowed/);
    const local = await run(py("def grade(sample, item):\n    open('scratch.txt', 'w').write('ok')\n    return len(open('scratch.txt').read())\n"), "x");
    expect(local.reward).toBe(2);
    expect(["namespace", "audit-hook"]).toContain(sandboxIsolation().network);
  });
});

describe("score_model and label_model through the responses provider", () => {
  const answer = (text: string, model = "gpt-4o-2024-08-06") => ({
    id: "resp_1",
    object: "response",
    model,
    output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text }] }],
    usage: { input_tokens: 190, output_tokens: 134, total_tokens: 324, input_tokens_details: { cached_tokens: 0 } },
  });
  const score = {
    type: "score_model",
    name: "judge",
    model: "gpt-4o-2024-08-06",
    input: [{ role: "user", content: "Reference: {{item.reference_answer}}\nAnswer: {{sample.output_text}}" }],
    range: [0, 1],
    sampling_params: { temperature: 1, top_p: 1, seed: 42 },
  };

  it("score_model: the rendered messages go upstream; result, usage and model come back", async () => {
    nextAnswer = () => answer(JSON.stringify({ steps: ["same"], result: 0.9 }));
    const res = await run(score, "fuzzy wuzzy was a bear", { reference_answer: "fuzzy wuzzy was a bear" });
    expectFullMetadata(res, "judge", "score_model");
    expect(res.reward).toBe(0.9);
    expect(res.metadata).toMatchObject({ token_usage: 324, sampled_model_name: "gpt-4o-2024-08-06" });
    expect(res.model_grader_token_usage_per_model).toEqual({ "gpt-4o-2024-08-06": { prompt_tokens: 190, completion_tokens: 134, total_tokens: 324, cached_tokens: 0 } });
    const sent = upstreamBodies.at(-1);
    expect(sent.model).toBe("gpt-4o-2024-08-06");
    expect(sent.input[0].content).toBe("Reference: fuzzy wuzzy was a bear\nAnswer: fuzzy wuzzy was a bear");
    expect(sent.text.format.type).toBe("json_schema");
  });

  it("an answer out of range or not JSON → model_grader_parse_error; a refusal → model_grader_refusal_error", async () => {
    nextAnswer = () => answer(JSON.stringify({ steps: [], result: 7 }));
    expect((await run(score, "x", { reference_answer: "y" })).metadata.errors.model_grader_parse_error).toBe(true);
    nextAnswer = () => answer("I think 0.5");
    expect((await run(score, "x", { reference_answer: "y" })).metadata.errors.model_grader_parse_error).toBe(true);
    nextAnswer = () => ({ model: "m", output: [{ type: "message", content: [{ type: "refusal", refusal: "no" }] }] });
    expect((await run(score, "x", { reference_answer: "y" })).metadata.errors.model_grader_refusal_error).toBe(true);
  });

  it("label_model: 1 for a passing label, 0 for another", async () => {
    const g = { type: "label_model", name: "sentiment", model: "gpt-4o-mini", input: [{ role: "user", content: "{{sample.output_text}}" }], labels: ["positive", "neutral", "negative"], passing_labels: ["positive"] };
    nextAnswer = (body) => answer(JSON.stringify({ result: body.input[0].content.includes("love") ? "positive" : "negative" }), "gpt-4o-mini");
    expect((await run(g, "I love it")).reward).toBe(1);
    expect((await run(g, "I hate it")).reward).toBe(0);
  });

  it("with no responses provider configured: model_grader_server_error with a clear detail", async () => {
    const bare = await startTestServer();
    try {
      const res = await sdk(bare.baseURL).fineTuning.alpha.graders.run({ grader: score as any, model_sample: "x", item: { reference_answer: "y" } });
      expect(res.reward).toBe(0);
      expect(res.metadata.errors.model_grader_server_error).toBe(true);
      expect(res.metadata.errors.model_grader_server_error_details).toMatch(/providers\.responses/);
    } finally {
      await bare.stop();
    }
  });
});

describe("multi", () => {
  const multi = (calculate_output: string) => ({
    type: "multi",
    name: "combined",
    graders: [
      { type: "string_check", name: "exact", input: "{{sample.output_text}}", reference: "{{item.label}}", operation: "eq" },
      { type: "text_similarity", name: "fuzzy", input: "{{sample.output_text}}", reference: "{{item.label}}", evaluation_metric: "fuzzy_match" },
    ],
    calculate_output,
  });

  it("calculate_output combines the sub-graders by name; sub_rewards and scores list them", async () => {
    const res = await run(multi("0.5 * exact + 0.5 * fuzzy"), "Pariss", { label: "Paris" });
    expectFullMetadata(res, "combined", "multi");
    const fuzzy = (2 * 5) / 11;
    expect(res.sub_rewards).toEqual({ exact: 0, fuzzy: expect.closeTo(fuzzy, 12) });
    expect(res.metadata.scores).toEqual(res.sub_rewards);
    expect(res.reward).toBeCloseTo(0.5 * fuzzy, 12);
    expect((await run(multi("max(exact, fuzzy) × 2 − min(1, sqrt(4))"), "Paris", { label: "Paris" })).reward).toBe(1);
  });

  it("a bad formula → formula_parse_error in metadata (run), a 400 naming calculate_output (validate)", async () => {
    const res = await run(multi("exact + * fuzzy"), "Paris", { label: "Paris" });
    expect(res.reward).toBe(0);
    expect(res.metadata.errors).toEqual({ ...noErrors(), formula_parse_error: true });
    await expectError(await api(s.baseURL, "/fine_tuning/alpha/graders/validate", { method: "POST", json: { grader: multi("exact + unknown_grader") } }), 400, {
      param: "grader.calculate_output",
      message: /unknown_grader/,
    });
  });
});

describe("multi: the three published forms of graders", () => {
  const exact = { type: "string_check", name: "exact", input: "{{sample.output_text}}", reference: "{{item.label}}", operation: "eq" };
  const fuzzy = { type: "text_similarity", name: "fuzzy", input: "{{sample.output_text}}", reference: "{{item.label}}", evaluation_metric: "fuzzy_match" };
  const fuzzyReward = (2 * 5) / 11; // "Pariss" against "Paris"

  it("a map of name → grader: calculate_output reads the keys, sub_rewards are keyed by them, validate echoes the map", async () => {
    const grader = { type: "multi", name: "by-key", graders: { ste: exact, sim: fuzzy }, calculate_output: "(ste + sim) / 2" };
    const res = await run(grader, "Pariss", { label: "Paris" });
    expectFullMetadata(res, "by-key", "multi");
    expect(res.metadata.errors).toEqual(noErrors());
    expect(res.sub_rewards).toEqual({ ste: 0, sim: expect.closeTo(fuzzyReward, 12) });
    expect(res.reward).toBeCloseTo(fuzzyReward / 2, 12);
    expect(await client.fineTuning.alpha.graders.validate({ grader: grader as any })).toEqual({ grader });
  });

  it("a single grader object: known by its name", async () => {
    const grader = { type: "multi", name: "one", graders: fuzzy, calculate_output: "2 * fuzzy" };
    const res = await run(grader, "Pariss", { label: "Paris" });
    expect(res.metadata.errors).toEqual(noErrors());
    expect(res.sub_rewards).toEqual({ fuzzy: expect.closeTo(fuzzyReward, 12) });
    expect(res.reward).toBeCloseTo(2 * fuzzyReward, 12);
    expect(await client.fineTuning.alpha.graders.validate({ grader: grader as any })).toEqual({ grader });
  });

  it("a formula over a name no sub-grader has is a 400 naming calculate_output, for run and validate, in every form", async () => {
    const forms: Array<[string, unknown]> = [
      ["array", [exact, fuzzy]],
      ["map", { ste: exact, sim: fuzzy }],
      ["single", exact],
    ];
    for (const [form, graders] of forms) {
      // In the map form the sub-graders' own names are not variables: only the keys are.
      const grader = { type: "multi", name: "m", graders, calculate_output: form === "map" ? "exact + sim" : "exact + nobody" };
      for (const path of ["/fine_tuning/alpha/graders/run", "/fine_tuning/alpha/graders/validate"]) {
        const body = path.endsWith("run") ? { grader, model_sample: "Paris", item: { label: "Paris" } } : { grader };
        await expectError(await api(s.baseURL, path, { method: "POST", json: body }), 400, {
          param: "grader.calculate_output",
          message: form === "map" ? /'exact' is not the name/ : /'nobody' is not the name/,
        });
      }
    }
  });

  it("bad forms of graders: empty array, empty map, a scalar, a map key that is no variable name", async () => {
    const cases: Array<[unknown, string]> = [
      [[], "grader.graders"],
      [{}, "grader.graders"],
      ["exact", "grader.graders"],
      [{ "not a name": exact }, "grader.graders.not a name"],
      [{ ste: { ...exact, operation: "contains" } }, "grader.graders.ste.operation"],
      [{ ...exact, input: 3 }, "grader.graders.input"],
    ];
    for (const [graders, param] of cases)
      await expectError(
        await api(s.baseURL, "/fine_tuning/alpha/graders/validate", { method: "POST", json: { grader: { type: "multi", name: "m", graders, calculate_output: "1" } } }),
        400,
        { param },
      );
  });
});

describe("validate", () => {
  it("returns a valid grader as given", async () => {
    const grader = { type: "string_check", name: "Example string check grader", input: "{{sample.output_text}}", reference: "{{item.label}}", operation: "eq" };
    expect(await client.fineTuning.alpha.graders.validate({ grader: grader as any })).toEqual({ grader });
  });

  const cases: Array<[string, unknown, string]> = [
    ["unknown type", { type: "regex", name: "x" }, "grader.type"],
    ["bad operation", { type: "string_check", name: "x", input: "a", reference: "b", operation: "contains" }, "grader.operation"],
    ["missing reference", { type: "string_check", name: "x", input: "a", operation: "eq" }, "grader.reference"],
    ["bad metric", { type: "text_similarity", name: "x", input: "a", reference: "b", evaluation_metric: "rouge_9" }, "grader.evaluation_metric"],
    ["unknown field", { type: "python", name: "x", source: "def grade(s, i): return 1", extra: 1 }, "grader.extra"],
    ["bad message role", { type: "score_model", name: "x", model: "gpt-4o", input: [{ role: "robot", content: "hi" }] }, "grader.input[0].role"],
    ["bad range", { type: "score_model", name: "x", model: "gpt-4o", input: [{ role: "user", content: "hi" }], range: [1, 0] }, "grader.range"],
    ["passing label not a label", { type: "label_model", name: "x", model: "gpt-4o", input: [{ role: "user", content: "hi" }], labels: ["a", "b"], passing_labels: ["c"] }, "grader.passing_labels[0]"],
    ["nested multi", { type: "multi", name: "m", graders: [{ type: "multi", name: "n", graders: [], calculate_output: "1" }], calculate_output: "n" }, "grader.graders[0].type"],
    ["bad nested field", { type: "multi", name: "m", graders: [{ type: "string_check", name: "a", input: "x", reference: "y", operation: "eq" }, { type: "string_check", name: "b", input: 3, reference: "y", operation: "eq" }], calculate_output: "a" }, "grader.graders[1].input"],
    ["duplicate names", { type: "multi", name: "m", graders: [{ type: "python", name: "a", source: "x" }, { type: "python", name: "a", source: "y" }], calculate_output: "a" }, "grader.graders[1].name"],
  ];
  for (const [what, grader, param] of cases) {
    it(`rejects ${what} with a 400 naming ${param}`, async () => {
      await expectError(await api(s.baseURL, "/fine_tuning/alpha/graders/validate", { method: "POST", json: { grader } }), 400, { param, code: "invalid_value" });
    });
  }

  it("run rejects a malformed grader the same way; a missing model_sample is a 400", async () => {
    await expectError(await api(s.baseURL, "/fine_tuning/alpha/graders/run", { method: "POST", json: { grader: { type: "string_check", name: "x" }, model_sample: "a" } }), 400, { param: "grader.input" });
    await expectError(await api(s.baseURL, "/fine_tuning/alpha/graders/run", { method: "POST", json: { grader: { type: "python", name: "x", source: "y" } } }), 400, { param: "model_sample" });
  });
});

describe("caps on a grader's strings and arrays, and on model_sample", () => {
  const validate = (grader: unknown) => api(s.baseURL, "/fine_tuning/alpha/graders/validate", { method: "POST", json: { grader } });
  const python = (bytes: number) => "def grade(sample, item):\n    return 1\n#".padEnd(bytes, "x");
  const check = { type: "string_check", name: "c", input: "{{sample.output_text}}", reference: "Paris", operation: "eq" };

  it("python source up to 256 KB, other strings up to 64 KB, arrays up to 256 items; one over is a 400 naming the field", async () => {
    expect((await validate({ type: "python", name: "p", source: python(256 * 1024) })).status).toBe(200);
    expect((await validate({ ...check, name: "n".repeat(64 * 1024) })).status).toBe(200);
    const labels = Array.from({ length: 256 }, (_, i) => `l${i}`);
    const labelModel = { type: "label_model", name: "l", model: "gpt-4o", input: [{ role: "user", content: "hi" }], labels, passing_labels: ["l0"] };
    expect((await validate(labelModel)).status).toBe(200);
    const refused: Array<[unknown, string, string, number]> = [
      [{ type: "python", name: "p", source: python(256 * 1024 + 1) }, "grader.source", "string_above_max_length", 256 * 1024],
      [{ ...check, name: "n".repeat(64 * 1024 + 1) }, "grader.name", "string_above_max_length", 64 * 1024],
      [{ ...check, reference: "r".repeat(2 * 1024 * 1024) }, "grader.reference", "string_above_max_length", 64 * 1024],
      [{ ...labelModel, labels: [...labels, "one more"] }, "grader.labels", "array_above_max_length", 256],
      [{ type: "multi", name: "m", graders: [check, { ...check, name: "d", input: "i".repeat(64 * 1024 + 1) }], calculate_output: "c" }, "grader.graders[1].input", "string_above_max_length", 64 * 1024],
    ];
    for (const [grader, param, code, limit] of refused) {
      await expectError(await validate(grader), 400, { param, code, message: new RegExp(`maximum length ${limit}\\b`) });
      await expectError(await api(s.baseURL, "/fine_tuning/alpha/graders/run", { method: "POST", json: { grader, model_sample: "a" } }), 400, { param, code });
    }
  });

  it("model_sample up to 1 MiB is graded; one character more is a 400 naming model_sample", async () => {
    expect((await run(check, "P".repeat(1024 * 1024))).reward).toBe(0);
    await expectError(await api(s.baseURL, "/fine_tuning/alpha/graders/run", { method: "POST", json: { grader: check, model_sample: "P".repeat(1024 * 1024 + 1) } }), 400, {
      param: "model_sample",
      code: "string_above_max_length",
      message: /maximum length 1048576\b/,
    });
  });
});

describe("over Connect and gRPC", () => {
  const grader = fromJson(ValueSchema, { type: "string_check", name: "exact", input: "{{sample.output_text}}", reference: "{{item.label}}", operation: "eq" });
  for (const [name, transport] of [
    ["Connect", () => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" })],
    ["gRPC", () => createGrpcTransport({ baseUrl: s.url })],
  ] as const) {
    it(`${name}: RunGrader and ValidateGrader, typed metadata; a malformed grader is InvalidArgument with the field`, async () => {
      const c = createClient(GradersService, transport());
      const res = await c.runGrader({ grader, modelSample: "Paris", item: fromJson(ValueSchema, { label: "Paris" }) }, as(API_KEY));
      expect(res.reward).toBe(1);
      expect(res.metadata?.name).toBe("exact");
      expect(res.metadata?.errors?.invalidVariableError).toBe(false);
      const v = await c.validateGrader({ grader }, as(API_KEY));
      expect(toJson(ValueSchema, v.grader!)).toMatchObject({ operation: "eq" });
      await expectRpcError(() => c.validateGrader({ grader: fromJson(ValueSchema, { type: "string_check", name: "x", input: "a", reference: "b", operation: "is" }) }, as(API_KEY)), Code.InvalidArgument, {
        param: "grader.operation",
        httpStatus: 400,
      });
    });
  }
});
