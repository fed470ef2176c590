import { describe, expect, it } from "vitest";
import { addSecret, passwordOfUrl, redactSecrets } from "../../src/secrets.js";

describe("redactSecrets", () => {
  it("replaces a secret wherever it stands as a whole, never inside a longer word", () => {
    addSecret("postgres");
    addSecret("tok-9Xv4Lm8Rt3abcdef");
    expect(redactSecrets("install postgresql-client")).toBe("install postgresql-client");
    expect(redactSecrets("connect postgres://postgres:postgres@127.0.0.1:5432/db")).toBe(
      "connect [Redacted]://[Redacted]:[Redacted]@127.0.0.1:5432/db",
    );
    expect(redactSecrets('password authentication failed for user "postgres"')).toBe(
      'password authentication failed for user "[Redacted]"',
    );
    expect(redactSecrets("authorization: Bearer tok-9Xv4Lm8Rt3abcdef, again tok-9Xv4Lm8Rt3abcdef.")).toBe(
      "authorization: Bearer [Redacted], again [Redacted].",
    );
    expect(redactSecrets("xtok-9Xv4Lm8Rt3abcdefy")).toBe("xtok-9Xv4Lm8Rt3abcdefy");
  });

  it("knows a percent-encoded password, and the password of a URL", () => {
    addSecret("p@ss/w:rd%41");
    expect(redactSecrets("url postgres://u:p%40ss%2Fw%3Ard%2541@h/db")).toBe("url [Redacted]://u:[Redacted]@h/db");
    expect([
      passwordOfUrl("postgres://u:p%40ss@h/db"),
      passwordOfUrl("postgres://u@h/db"),
      passwordOfUrl(undefined),
    ]).toEqual(["p@ss", undefined, undefined]);
  });
});
