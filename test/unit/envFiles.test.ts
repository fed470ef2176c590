/**
 * `DATABASE_URL_FILE`, `STRAGGLER_API_TOKEN_FILE`, `STRAGGLER_READ_TOKEN_FILE` (src/config/envFiles.ts):
 * the file's text less one trailing newline, clear errors that never carry the value, and the value
 * known as a secret (redacted from every output) like the variable's.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadEnv } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/pipelines.js";
import { redactSecrets } from "../../src/secrets.js";

const dir = mkdtempSync(path.join(tmpdir(), "straggler-env-files-"));
function secretFile(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** The ConfigError `loadEnv(env)` throws, as its message. */
function failure(env: NodeJS.ProcessEnv): string {
  try {
    loadEnv(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("loadEnv did not throw");
}

describe("secrets from <NAME>_FILE", () => {
  it("reads each file, less one trailing newline (\\n or \\r\\n), and knows the values as secrets", () => {
    const env = loadEnv({
      DATABASE_URL_FILE: secretFile("url", "postgres://u:file-password-1@db:5432/s\n"),
      STRAGGLER_API_TOKEN_FILE: secretFile("token", "file-api-token-0123456789\r\n"),
      STRAGGLER_READ_TOKEN_FILE: secretFile("read", "file-read-token-0123456789"),
    });
    expect([env.DATABASE_URL, env.STRAGGLER_API_TOKEN, env.STRAGGLER_READ_TOKEN]).toEqual([
      "postgres://u:file-password-1@db:5432/s",
      "file-api-token-0123456789",
      "file-read-token-0123456789",
    ]);
    expect(
      redactSecrets(
        "auth failed for file-password-1 with Bearer file-api-token-0123456789 or file-read-token-0123456789",
      ),
    ).toBe("auth failed for [Redacted] with Bearer [Redacted] or [Redacted]");
  });

  it("keeps a second trailing newline and inner whitespace: only one newline is the file's end", () => {
    const env = loadEnv({ STRAGGLER_API_TOKEN_FILE: secretFile("two-newlines", "token with spaces 0123\n\n") });
    expect(env.STRAGGLER_API_TOKEN).toBe("token with spaces 0123\n");
  });

  it("an empty _FILE is unset, like an empty variable", () => {
    const env = loadEnv({ DATABASE_URL_FILE: "", STRAGGLER_API_TOKEN: "plain-api-token-0123456789" });
    expect([env.DATABASE_URL, env.STRAGGLER_API_TOKEN]).toEqual([undefined, "plain-api-token-0123456789"]);
  });

  it("errors name the variable and the path, never the value", () => {
    const missing = path.join(dir, "no-such-secret");
    const empty = secretFile("empty", "\n");
    const folder = path.join(dir, "folder");
    mkdirSync(folder);
    expect(
      failure({ DATABASE_URL_FILE: missing, STRAGGLER_API_TOKEN_FILE: empty, STRAGGLER_READ_TOKEN_FILE: folder }),
    ).toBe(
      `invalid environment:\n  DATABASE_URL_FILE: cannot read ${missing}: no such file\n  STRAGGLER_API_TOKEN_FILE: ${empty} is empty\n  STRAGGLER_READ_TOKEN_FILE: cannot read ${folder}: a directory, not a file`,
    );
    const both = secretFile("both", "file-api-token-0123456789\n");
    expect(failure({ STRAGGLER_API_TOKEN: "plain-api-token-0123456789", STRAGGLER_API_TOKEN_FILE: both })).toBe(
      "invalid environment:\n  STRAGGLER_API_TOKEN_FILE: set STRAGGLER_API_TOKEN or STRAGGLER_API_TOKEN_FILE, not both",
    );
  });

  it("a value read from a file is validated like the variable, and the message does not show it", () => {
    const short = secretFile("short", "short-token\n");
    const message = failure({ STRAGGLER_API_TOKEN_FILE: short });
    expect(message).toBe("invalid environment:\n  STRAGGLER_API_TOKEN: expected a token of at least 16 characters");
    expect(message).not.toContain("short-token");
  });
});
