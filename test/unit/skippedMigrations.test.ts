/** Which journal migrations an earlier migrate skipped (findSkippedMigrations, src/db/migrate.ts). */
import { describe, expect, it } from "vitest";
import { findSkippedMigrations, type JournalMigration } from "../../src/db/migrate.js";

const m = (n: number): JournalMigration => ({
  tag: `00${n}_m`,
  hash: `h${n}`,
  folderMillis: 1796000000000 + n * 1000,
  sql: [],
});
const row = (x: JournalMigration, hash = x.hash) => ({ hash, created_at: String(x.folderMillis) });
const [a, b, c, d] = [m(21), m(22), m(23), m(27)] as [
  JournalMigration,
  JournalMigration,
  JournalMigration,
  JournalMigration,
];
const journal = [a, b, c, d];

describe("findSkippedMigrations", () => {
  it("an empty migrations table: none (drizzle's migrate applies everything)", () => {
    expect(findSkippedMigrations(journal, [])).toEqual([]);
  });
  it("every migration recorded: none", () => {
    expect(
      findSkippedMigrations(
        journal,
        journal.map((x) => row(x)),
      ),
    ).toEqual([]);
  });
  it("older ones missing under a newer recorded one: those, in journal order", () => {
    expect(findSkippedMigrations(journal, [row(a), row(d)])).toEqual([b, c]);
  });
  it("missing ones later than the newest recorded: none (drizzle's migrate applies them)", () => {
    expect(findSkippedMigrations(journal, [row(a), row(b)])).toEqual([]);
  });
  it("a recorded `when` with another hash (applied from an earlier text of the file): not skipped", () => {
    expect(findSkippedMigrations(journal, [row(a), row(b), row(c, "older text"), row(d)])).toEqual([]);
  });
  it("a recorded hash under another `when` (the journal's `when` changed since): not skipped", () => {
    expect(
      findSkippedMigrations(journal, [row(a), { hash: b.hash, created_at: "1795000000000" }, row(c), row(d)]),
    ).toEqual([]);
  });
});
