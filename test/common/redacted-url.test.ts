import { describe, expect, it } from "vitest";
import { redactedUrl } from "../../src/common/redacted-url.js";

describe("redactedUrl", () => {
  it("masks the password of a URL and keeps the rest", () => {
    expect(redactedUrl("postgres://atrium:s3cret@db.internal:5432/atrium?sslmode=require")).toBe("postgres://atrium:****@db.internal:5432/atrium?sslmode=require");
    expect(redactedUrl("redis://:hunter2@cache:6379/0")).toBe("redis://:****@cache:6379/0");
  });

  it("leaves a URL without a password as it is", () => {
    expect(redactedUrl("redis://127.0.0.1:6379")).toBe("redis://127.0.0.1:6379");
    expect(redactedUrl("postgres://atrium@db/atrium")).toBe("postgres://atrium@db/atrium");
  });

  it("masks what sits between ':' and '@' in a string that is not a URL", () => {
    const out = redactedUrl("postgres://atrium:s3cret@db:notaport/atrium");
    expect(out).not.toContain("s3cret");
    expect(out).toBe("postgres://atrium:****@db:notaport/atrium");
  });
});
