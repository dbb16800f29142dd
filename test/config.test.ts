// ATRIUM_CONFIG: the JSON Schema's rules as errors naming the path, unknown properties, the
// providers section's normalisation, areas' sections, JSON / YAML / empty files.
// Every test writes a temp file and passes its own env object; process.env is never touched.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, configFromEnv } from "../src/config.js";
import { configSchema } from "../src/config-schema.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-config-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let n = 0;
function file(text: string, ext = "yaml"): string {
  const p = path.join(dir, `c${++n}.${ext}`);
  fs.writeFileSync(p, text);
  return p;
}

/** configFromEnv on a config given as an object (written as JSON) or as YAML text. */
function load(doc: object | string, env: Record<string, string> = {}, sections: Record<string, object> = {}) {
  const p = typeof doc === "string" ? file(doc) : file(JSON.stringify(doc), "json");
  return configFromEnv({ ATRIUM_CONFIG: p, ...env }, sections);
}

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("expected a ConfigError");
}

const org = { id: "org-a", projects: [{ id: "proj_a" }] };
const goodKey = { key: "sk-12345678", organization: "org-a", projects: ["proj_a"] };

describe("ATRIUM_CONFIG: the existing rules, as errors naming the path", () => {
  it("accepts a full valid file", () => {
    const cfg = load({
      organizations: [org, { id: "org-b", name: "B" }],
      keys: [goodKey, { key: "sk-admin-1234", organization: "org-b", kind: "admin" }, { ...goodKey, key: "sk-reader-1", role: "reader", name: "ro" }],
    });
    expect(cfg.file.keys).toHaveLength(3);
    expect(cfg.file.organizations?.[1].name).toBe("B");
  });

  it("key of at least 8 characters", () => {
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, key: "short" }] }))).toBe(
      "ATRIUM_CONFIG: /keys/0/key must be at least 8 characters",
    );
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, key: 12345678 }] }))).toBe("ATRIUM_CONFIG: /keys/0/key must be a string");
    expect(errorOf(() => load({ organizations: [org], keys: [{ organization: "org-a", projects: ["proj_a"] }] }))).toBe(
      "ATRIUM_CONFIG: /keys/0/key is required",
    );
  });

  it("the secret itself never appears in a message", () => {
    const msg = errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, key: "sk-secret", role: "boss" }] }));
    expect(msg).not.toContain("sk-secret");
  });

  it("a key's organization must be declared", () => {
    expect(errorOf(() => load({ organizations: [org], keys: [goodKey, { ...goodKey, organization: "org-x" }] }))).toBe(
      "ATRIUM_CONFIG: /keys/1/organization 'org-x' is not declared in /organizations",
    );
    expect(errorOf(() => load({ keys: [goodKey] }))).toMatch(/\/keys\/0\/organization 'org-a' is not declared/);
  });

  it("kind standard|admin, role owner|member|reader", () => {
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, kind: "root" }] }))).toBe(
      "ATRIUM_CONFIG: /keys/0/kind must be one of standard, admin",
    );
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, role: "admin" }] }))).toBe(
      "ATRIUM_CONFIG: /keys/0/role must be one of owner, member, reader",
    );
  });

  it("projects are required (and not empty) for a standard key, optional for an admin key", () => {
    const { projects, ...noProjects } = goodKey;
    expect(projects).toBeDefined();
    expect(errorOf(() => load({ organizations: [org], keys: [noProjects] }))).toBe("ATRIUM_CONFIG: /keys/0/projects is required for a standard key");
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...noProjects, kind: "standard" }] }))).toBe(
      "ATRIUM_CONFIG: /keys/0/projects is required for a standard key",
    );
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, projects: [] }] }))).toBe(
      "ATRIUM_CONFIG: /keys/0/projects must not be empty for a standard key",
    );
    expect(load({ organizations: [org], keys: [{ ...noProjects, kind: "admin" }] }).file.keys?.[0].kind).toBe("admin");
    expect(load({ organizations: [org], keys: [{ ...noProjects, kind: "admin", projects: [] }] }).file.keys).toHaveLength(1);
  });

  it("ids are non-empty strings", () => {
    expect(errorOf(() => load({ organizations: [{ id: "" }] }))).toBe("ATRIUM_CONFIG: /organizations/0/id must not be empty");
    expect(errorOf(() => load({ organizations: [{ name: "x" }] }))).toBe("ATRIUM_CONFIG: /organizations/0/id is required");
    expect(errorOf(() => load({ organizations: [{ id: 7 }] }))).toBe("ATRIUM_CONFIG: /organizations/0/id must be a string");
    expect(errorOf(() => load({ organizations: [{ id: "o", projects: [{ id: "" }] }] }))).toBe(
      "ATRIUM_CONFIG: /organizations/0/projects/0/id must not be empty",
    );
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, projects: ["proj_a", ""] }] }))).toBe(
      "ATRIUM_CONFIG: /keys/0/projects/1 must not be empty",
    );
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, organization: "" }] }))).toMatch(
      /^ATRIUM_CONFIG: \/keys\/0\/organization must not be empty/,
    );
  });

  it("wrong shapes name the path and the expected type", () => {
    expect(errorOf(() => load({ organizations: { id: "x" } }))).toBe("ATRIUM_CONFIG: /organizations must be a list");
    expect(errorOf(() => load({ keys: ["sk-12345678"] }))).toBe("ATRIUM_CONFIG: /keys/0 must be an object (a mapping)");
  });

  it("reports every problem, one per line", () => {
    const msg = errorOf(() => load({ organizations: [{ id: "" }], keys: [{ ...goodKey, key: "x", role: "boss" }] }));
    expect(msg.split("\n")).toEqual([
      "ATRIUM_CONFIG: /organizations/0/id must not be empty",
      "ATRIUM_CONFIG: /keys/0/key must be at least 8 characters",
      "ATRIUM_CONFIG: /keys/0/role must be one of owner, member, reader",
    ]);
  });
});

describe("ATRIUM_CONFIG: unknown properties are errors", () => {
  it("names the property and where it is", () => {
    expect(errorOf(() => load({ organizations: [{ id: "org-a", projets: [] }] }))).toBe("ATRIUM_CONFIG: /organizations/0: unknown property 'projets'");
    expect(errorOf(() => load({ organisations: [] }))).toBe("ATRIUM_CONFIG: top level: unknown property 'organisations'");
    expect(errorOf(() => load({ organizations: [org], keys: [{ ...goodKey, project: "proj_a" }] }))).toBe(
      "ATRIUM_CONFIG: /keys/0: unknown property 'project'",
    );
    expect(errorOf(() => load({ providers: { embedding: {} } }))).toBe("ATRIUM_CONFIG: /providers: unknown property 'embedding'");
    expect(errorOf(() => load({ providers: { moderation: { baseurl: "http://x" } } }))).toBe(
      "ATRIUM_CONFIG: /providers/moderation: unknown property 'baseurl'",
    );
  });
});

describe("ATRIUM_CONFIG: providers", () => {
  it("with no providers section every capability is local and no model-call upstream is configured", () => {
    const cfg = configFromEnv({});
    expect(cfg.providers).toEqual({
      embeddings: { kind: "local", timeoutMs: 60_000 },
      moderation: { kind: "local", timeoutMs: 60_000 },
      video: { kind: "local", timeoutMs: 60_000 },
      fineTuning: { kind: "local", timeoutMs: 60_000 },
      responses: undefined,
    });
    expect(cfg.sections).toEqual({});
  });

  it("kind defaults to local without a base_url and to upstream with one; api_key_env is read", () => {
    const cfg = load(
      `
providers:
  embeddings: { model: atrium-embed-use-lite, dimensions: 512 }
  moderation: { base_url: "https://mod.example.com/v1/", api_key_env: MOD_KEY, model: omni-moderation-latest, timeout_ms: 5000 }
  video: { kind: local, timeout_ms: 1000 }
  fine_tuning: { kind: upstream, base_url: "http://127.0.0.1:9000/v1" }
  responses: { base_url: "http://llm.internal:8000/v1", api_key_env: LLM_KEY }
`,
      { MOD_KEY: "sk-mod-secret", LLM_KEY: "sk-llm-secret" },
    );
    expect(cfg.providers.embeddings).toEqual({ kind: "local", timeoutMs: 60_000, model: "atrium-embed-use-lite", dimensions: 512 });
    expect(cfg.providers.moderation).toEqual({
      kind: "upstream",
      baseUrl: "https://mod.example.com/v1", // trailing slash dropped: paths are appended
      apiKey: "sk-mod-secret",
      apiKeyEnv: "MOD_KEY",
      timeoutMs: 5000,
      model: "omni-moderation-latest",
    });
    expect(cfg.providers.video).toEqual({ kind: "local", timeoutMs: 1000 });
    expect(cfg.providers.fineTuning).toEqual({ kind: "upstream", baseUrl: "http://127.0.0.1:9000/v1", timeoutMs: 60_000 });
    expect(cfg.providers.responses).toEqual({
      kind: "upstream",
      baseUrl: "http://llm.internal:8000/v1",
      apiKey: "sk-llm-secret",
      apiKeyEnv: "LLM_KEY",
      timeoutMs: 60_000,
    });
  });

  it("an api_key_env naming an unset (or empty) variable is an error naming it", () => {
    const doc = { providers: { embeddings: { base_url: "https://e.example.com/v1", api_key_env: "EMBED_KEY" } } };
    const msg = "ATRIUM_CONFIG: /providers/embeddings/api_key_env names EMBED_KEY, which is not set in the environment";
    expect(errorOf(() => load(doc))).toBe(msg);
    expect(errorOf(() => load(doc, { EMBED_KEY: "" }))).toBe(msg);
    expect(load(doc, { EMBED_KEY: "k" }).providers.embeddings).toMatchObject({ kind: "upstream", apiKey: "k" });
  });

  it("api_key_env must be a variable name, not the key itself, and needs a base_url", () => {
    expect(errorOf(() => load({ providers: { embeddings: { base_url: "https://e.example.com", api_key_env: "sk-abc.def" } } }))).toBe(
      "ATRIUM_CONFIG: /providers/embeddings/api_key_env must be the name of an environment variable (letters, digits, _), not the key itself",
    );
    expect(errorOf(() => load({ providers: { moderation: { api_key_env: "K" } } }, { K: "x" }))).toBe(
      "ATRIUM_CONFIG: /providers/moderation/base_url is required with api_key_env",
    );
  });

  it("base_url must be an http(s) URL; kind upstream requires it; kind local refuses it", () => {
    for (const bad of ["not a url", "ftp://files.example.com", "file:///etc/passwd", "", "http://"])
      expect(errorOf(() => load({ providers: { video: { base_url: bad } } }))).toMatch(
        /^ATRIUM_CONFIG: \/providers\/video\/base_url must be an http or https URL/,
      );
    expect(errorOf(() => load({ providers: { responses: { base_url: "localhost:8000" } } }))).toBe(
      "ATRIUM_CONFIG: /providers/responses/base_url must be an http or https URL",
    );
    expect(errorOf(() => load({ providers: { embeddings: { kind: "upstream" } } }))).toBe(
      "ATRIUM_CONFIG: /providers/embeddings/base_url is required when kind is upstream",
    );
    expect(errorOf(() => load({ providers: { moderation: { kind: "local", base_url: "https://m.example.com" } } }))).toBe(
      "ATRIUM_CONFIG: /providers/moderation/base_url is not allowed when kind is local",
    );
    expect(errorOf(() => load({ providers: { moderation: { kind: "remote" } } }))).toBe(
      "ATRIUM_CONFIG: /providers/moderation/kind must be one of local, upstream",
    );
    expect(errorOf(() => load({ providers: { responses: {} } }))).toBe("ATRIUM_CONFIG: /providers/responses/base_url is required");
  });

  it("numbers are checked", () => {
    expect(errorOf(() => load({ providers: { embeddings: { dimensions: 0 } } }))).toBe("ATRIUM_CONFIG: /providers/embeddings/dimensions must be at least 1");
    expect(errorOf(() => load({ providers: { embeddings: { dimensions: 1.5 } } }))).toBe(
      "ATRIUM_CONFIG: /providers/embeddings/dimensions must be an integer",
    );
    expect(errorOf(() => load({ providers: { video: { timeout_ms: "5000" } } }))).toBe("ATRIUM_CONFIG: /providers/video/timeout_ms must be an integer");
    expect(errorOf(() => load({ providers: { video: { timeout_ms: 0 } } }))).toBe("ATRIUM_CONFIG: /providers/video/timeout_ms must be at least 1");
  });
});

describe("ATRIUM_CONFIG: sections contributed by areas", () => {
  const containers = {
    type: "object",
    additionalProperties: false,
    properties: {
      max_per_project: { type: "integer", minimum: 1, default: 10 },
      image: { type: "string", minLength: 1 },
    },
  };
  const sections = { containers };

  it("a section is validated with the rest of the file and handed back with its defaults", () => {
    const cfg = load({ containers: { image: "python:3.12" } }, {}, sections);
    expect(cfg.sections).toEqual({ containers: { image: "python:3.12", max_per_project: 10 } });
    expect(errorOf(() => load({ containers: { max_per_project: 0 } }, {}, sections))).toBe(
      "ATRIUM_CONFIG: /containers/max_per_project must be at least 1",
    );
    expect(errorOf(() => load({ containers: { imgae: "x" } }, {}, sections))).toBe("ATRIUM_CONFIG: /containers: unknown property 'imgae'");
  });

  it("an absent section is absent; a section nobody registered is an unknown property", () => {
    expect(load({ organizations: [org] }, {}, sections).sections).toEqual({});
    expect(errorOf(() => load({ containers: {} }))).toBe("ATRIUM_CONFIG: top level: unknown property 'containers'");
  });

  it("a section cannot replace a core one, and a broken fragment fails loudly", () => {
    expect(() => configSchema({ keys: {} })).toThrow(/core section/);
    expect(() => load({}, {}, { broken: { type: "object", propertiez: {} } })).toThrow(/propertiez/);
  });
});

describe("ATRIUM_CONFIG: files", () => {
  it("reads YAML and JSON alike", () => {
    const yaml = file(
      `
# comments are fine in YAML
organizations:
  - id: org-a
    projects: [{ id: proj_a }]
keys:
  - { key: sk-12345678, organization: org-a, projects: [proj_a], role: reader }
`,
      "yml",
    );
    const json = file(JSON.stringify({ organizations: [org], keys: [{ ...goodKey, role: "reader" }] }), "json");
    const a = configFromEnv({ ATRIUM_CONFIG: yaml });
    const b = configFromEnv({ ATRIUM_CONFIG: json });
    expect(a.file).toEqual(b.file);
    expect(a.file.keys?.[0].role).toBe("reader");
  });

  it("an empty file (or one with only comments) declares nothing", () => {
    for (const p of [file(""), file("  \n"), file("# nothing yet\n"), file("", "json")]) {
      const cfg = configFromEnv({ ATRIUM_CONFIG: p });
      expect(cfg.file).toEqual({});
      expect(cfg.providers.embeddings.kind).toBe("local");
    }
  });

  it("unreadable, unparsable or non-object files are errors naming the file", () => {
    const missing = path.join(dir, "missing.yaml");
    expect(errorOf(() => configFromEnv({ ATRIUM_CONFIG: missing }))).toMatch(`ATRIUM_CONFIG: cannot read ${missing}`);
    expect(errorOf(() => configFromEnv({ ATRIUM_CONFIG: file("{ not json", "json") }))).toMatch(/is not valid JSON/);
    expect(errorOf(() => configFromEnv({ ATRIUM_CONFIG: file("keys: [unclosed") }))).toMatch(/is not valid YAML/);
    expect(errorOf(() => configFromEnv({ ATRIUM_CONFIG: file("- a\n- b\n") }))).toMatch(/must hold an object/);
    expect(errorOf(() => configFromEnv({ ATRIUM_CONFIG: file("keys: []\nkeys: []\n") }))).toMatch(/is not valid YAML/);
  });
});

describe("environment variables (unchanged)", () => {
  it("defaults and checks", () => {
    const cfg = configFromEnv({});
    expect(cfg).toMatchObject({ host: "127.0.0.1", port: 8080, dataDir: "./.atrium", fetchTimeoutMs: 10_000, fetchAllowPrivate: false, file: {} });
    expect(() => configFromEnv({ ATRIUM_PORT: "99999" })).toThrow(ConfigError);
    expect(() => configFromEnv({ ATRIUM_TLS_CERT: "c.pem" })).toThrow(/go together/);
    expect(() => configFromEnv({ ATRIUM_FETCH_TIMEOUT_MS: "-1" })).toThrow(/positive integer/);
  });
});
