/**
 * Secrets this process knows (the API tokens, the database password) and their removal from any
 * text it writes: every log line (src/log.ts) and every error message the CLI prints. A secret is
 * replaced by `[Redacted]` wherever it appears — a header, an error message, a URL — so no output
 * carries one, whatever the level or the path it took.
 */

/** What a secret is written as. */
export const REDACTED = "[Redacted]";

/** Shorter strings are not treated as secrets (a one-letter password would blank every such letter). */
const MIN_SECRET_CHARS = 4;

const secrets = new Set<string>();

/** Adds `value` (and its percent-encoded form, as it appears in a URL) to the secrets; a value shorter than 4 characters or undefined is ignored. */
export function addSecret(value: string | undefined): void {
  if (value === undefined || value.length < MIN_SECRET_CHARS) return;
  secrets.add(value);
  const encoded = encodeURIComponent(value);
  if (encoded !== value) secrets.add(encoded);
}

/**
 * The password of a connection URL (`postgres://user:password@host/db`), decoded; undefined when
 * it has none or is not a URL.
 */
export function passwordOfUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const password = new URL(url).password;
    return password === "" ? undefined : decodeURIComponent(password);
  } catch {
    // Not a WHATWG URL (pg also reads `postgres://u:p@/db?host=/socket`): take what sits between ':' and '@'.
    return /^[a-z]+:\/\/[^:/@]*:([^@]*)@/i.exec(url)?.[1];
  }
}

/**
 * The secrets an environment names: `STRAGGLER_API_TOKEN`, `STRAGGLER_READ_TOKEN` and the
 * password in `DATABASE_URL`. Called once the environment is read, before anything is logged.
 */
export function addEnvSecrets(env: {
  STRAGGLER_API_TOKEN?: string | undefined;
  STRAGGLER_READ_TOKEN?: string | undefined;
  DATABASE_URL?: string | undefined;
}): void {
  addSecret(env.STRAGGLER_API_TOKEN);
  addSecret(env.STRAGGLER_READ_TOKEN);
  const password = passwordOfUrl(env.DATABASE_URL);
  addSecret(password);
}

/** Letters and digits: a secret is replaced only where none stands right before or after it. */
const WORD = /[\p{L}\p{N}]/u;

/**
 * `text` with every known secret replaced by `[Redacted]`, wherever it stands as a whole: not where
 * it is part of a longer word, so that a password that is also a word (`postgres`) does not blank
 * `postgresql-client` in a message, while `:postgres@` in a URL, `"postgres"` or `Bearer <token>`
 * are replaced.
 */
export function redactSecrets(text: string): string {
  let out = text;
  for (const s of secrets) {
    if (!out.includes(s)) continue;
    let result = "";
    let from = 0;
    for (let at = out.indexOf(s); at !== -1; at = out.indexOf(s, at + 1)) {
      const before = at > 0 ? out[at - 1]! : "";
      const after = out[at + s.length] ?? "";
      if (
        (before !== "" && WORD.test(before) && WORD.test(s[0]!)) ||
        (after !== "" && WORD.test(after) && WORD.test(s[s.length - 1]!))
      )
        continue;
      if (at < from) continue;
      result += out.slice(from, at) + REDACTED;
      from = at + s.length;
    }
    out = result + out.slice(from);
  }
  return out;
}
