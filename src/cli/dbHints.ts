/**
 * What to check when the database refuses a command: a line added to the error's message for
 * the connection failures node-postgres reports (Node's socket codes; PostgreSQL SQLSTATEs
 * 28P01, 28000, 3D000 from the server's error fields).
 */
interface PgLikeError {
  code?: string;
  address?: string;
  port?: number;
  hostname?: string;
}

const EMBEDDED = "unset DATABASE_URL to use the embedded PostgreSQL (started by the command that needs it)";

/** A hint for the error `e` (e.g. "check DATABASE_URL's host and port (127.0.0.1:5432) …"), or null. */
export function databaseHint(e: unknown): string | null {
  const err = (e ?? {}) as PgLikeError;
  const port = err.port !== undefined ? `:${err.port}` : "";
  const where = err.address !== undefined ? ` (${err.address}${port})` : "";
  switch (err.code) {
    case "ECONNREFUSED":
      return (
        `nothing accepts connections there${where}: ` +
        `check DATABASE_URL's host and port and that the server runs, or ${EMBEDDED}`
      );
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return (
        `the host name${err.hostname !== undefined ? ` ${err.hostname}` : ""} does not resolve: ` +
        "check DATABASE_URL's host"
      );
    case "ETIMEDOUT":
      return `no answer${where}: check DATABASE_URL's host and port and any firewall between`;
    case "28P01":
      return "the password was refused: check the user and password in DATABASE_URL";
    case "28000":
      return "the server refused this user or client: check the user in DATABASE_URL and the server's pg_hba.conf";
    case "3D000":
      return (
        "the database does not exist: " +
        "create it (createdb NAME, or CREATE DATABASE) or fix its name in DATABASE_URL"
      );
    default:
      return null;
  }
}
