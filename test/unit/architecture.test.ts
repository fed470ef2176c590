/**
 * House rules read from the import graph of src/ (relative imports only): no import cycle, src/core imports
 * nothing outside src/core, src/db/sql imports no feature folder, no SQL statement outside src/db, no file
 * over 300 lines, the guards are called through their one seam (src/guards/index.ts). KNOWN lists today's exceptions by path; a rule fails on any other file, and on a listed
 * file that no longer breaks it (so the list only shrinks).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "../../src");
const FEATURES = [
  "http",
  "stream",
  "correction",
  "lifecycle",
  "cli",
  "ui",
  "ingest",
  "replay",
  "retention",
  "observe",
  "sources",
  "cluster",
  "config",
  "guards",
];

const KNOWN = {
  longFiles: [] as string[],
  sqlOutsideDb: [] as string[],
  dbSqlToFeature: [] as string[],
  cycles: [] as string[],
};

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? files(p) : /\.ts$/.test(d.name) ? [p] : [];
  });
}
const all = files(SRC);
const rel = (f: string) => path.relative(SRC, f).split(path.sep).join("/");
const text = new Map(all.map((f) => [rel(f), readFileSync(f, "utf8")]));

function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const m of text.get(file)!.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)).replace(/\.js$/, ".ts");
    if (text.has(target)) out.push(target);
  }
  return out;
}
const graph = new Map([...text.keys()].map((f) => [f, importsOf(f)]));

function cycles(): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 1);
    stack.push(f);
    for (const t of graph.get(f) ?? []) {
      if (state.get(t) === 1) found.push(stack.slice(stack.indexOf(t)));
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 2);
  };
  for (const f of graph.keys()) if (!state.has(f)) visit(f);
  return found;
}

const SQL =
  /`\s*(?:SELECT|INSERT\s+INTO|UPDATE\s+\S+\s+SET|DELETE\s+FROM|WITH\s+\w+\s+AS|CREATE\s|ALTER\s|DROP\s|COPY\s)/i;

describe("architecture", () => {
  it("has no import cycle", () => {
    expect(
      cycles()
        .map((c) => c.join(" -> "))
        .sort(),
    ).toEqual([...KNOWN.cycles].sort());
  });
  it("src/core imports only src/core", () => {
    const bad = [...graph].flatMap(([f, ts]) =>
      f.startsWith("core/") ? ts.filter((t) => !t.startsWith("core/")) : [],
    );
    expect(bad).toEqual([]);
  });
  it("src/db/sql imports no feature folder", () => {
    const bad = [...graph]
      .filter(([f, ts]) => f.startsWith("db/sql/") && ts.some((t) => FEATURES.includes(t.split("/")[0]!)))
      .map(([f]) => f);
    expect(bad.sort()).toEqual([...KNOWN.dbSqlToFeature].sort());
  });
  it("keeps SQL inside src/db", () => {
    const bad = [...text].filter(([f, s]) => !f.startsWith("db/") && SQL.test(s)).map(([f]) => f);
    expect(bad.sort()).toEqual([...KNOWN.sqlOutsideDb].sort());
  });
  it("calls the guards through src/guards/index.ts only", () => {
    const bad = [...graph].flatMap(([f, ts]) =>
      f.startsWith("guards/")
        ? []
        : ts.filter((t) => t.startsWith("guards/") && t !== "guards/index.ts").map((t) => `${f} -> ${t}`),
    );
    expect(bad).toEqual([]);
  });
  it("has no file over 300 lines", () => {
    const bad = [...text].filter(([, s]) => s.split("\n").length - (s.endsWith("\n") ? 1 : 0) > 300).map(([f]) => f);
    expect(bad.sort()).toEqual([...KNOWN.longFiles].sort());
  });
});
