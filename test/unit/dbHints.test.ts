import { describe, expect, it } from "vitest";
import { databaseHint } from "../../src/cli/dbHints.js";

describe("databaseHint", () => {
  it("says what to check for each connection failure, and nothing for other errors", () => {
    const refused = Object.assign(new Error("x"), { code: "ECONNREFUSED", address: "127.0.0.1", port: 5999 });
    expect(databaseHint(refused)).toBe(
      "nothing accepts connections there (127.0.0.1:5999): " +
        "check DATABASE_URL's host and port and that the server runs, " +
        "or unset DATABASE_URL to use the embedded PostgreSQL (started by the command that needs it)",
    );
    expect(databaseHint({ code: "ENOTFOUND", hostname: "db.invalid" })).toBe(
      "the host name db.invalid does not resolve: check DATABASE_URL's host",
    );
    expect(databaseHint({ code: "28P01" })).toBe(
      "the password was refused: check the user and password in DATABASE_URL",
    );
    expect(databaseHint({ code: "3D000" })).toBe(
      "the database does not exist: create it (createdb NAME, or CREATE DATABASE) or fix its name in DATABASE_URL",
    );
    expect(databaseHint(new Error("something else"))).toBeNull();
    expect(databaseHint(undefined)).toBeNull();
  });
});
