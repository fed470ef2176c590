/**
 * docs/rest-reference.md and docs/cli-reference.md are what their scripts generate now (from the
 * OpenAPI document and from the commander program), and each script's `--check` refuses a stale file.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cliReference, writeOrCheck as checkCli } from "../../scripts/cli-reference.js";
import { restReference, writeOrCheck as checkRest } from "../../scripts/rest-reference.js";
import { buildCli } from "../../src/cli/program.js";
import { apiDocument } from "../../src/app.js";

const root = path.resolve(import.meta.dirname, "../..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");

describe("the generated references", () => {
  it("docs/rest-reference.md is the OpenAPI document's (node --import tsx scripts/rest-reference.ts writes it)", () => {
    expect(
      read("docs/rest-reference.md"),
      "docs/rest-reference.md is stale: run `node --import tsx scripts/rest-reference.ts`",
    ).toBe(restReference());
    expect(checkRest(root, true)).toEqual({ message: "docs/rest-reference.md is up to date", code: 0 });
  });

  it("docs/cli-reference.md is the commander program's (node --import tsx scripts/cli-reference.ts writes it)", () => {
    expect(
      read("docs/cli-reference.md"),
      "docs/cli-reference.md is stale: run `node --import tsx scripts/cli-reference.ts`",
    ).toBe(cliReference());
    expect(checkCli(root, true)).toEqual({ message: "docs/cli-reference.md is up to date", code: 0 });
  });

  it("--check refuses a stale or missing file, naming the script to run", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-references-"));
    mkdirSync(path.join(dir, "docs"));
    writeFileSync(path.join(dir, "docs/rest-reference.md"), `${restReference()}\nan edit by hand\n`);
    expect(checkRest(dir, true)).toEqual({
      message:
        "docs/rest-reference.md is stale (it differs from the OpenAPI document): run `node --import tsx scripts/rest-reference.ts`",
      code: 1,
    });
    expect(checkCli(dir, true)).toEqual({
      message: "docs/cli-reference.md is missing: run `node --import tsx scripts/cli-reference.ts`",
      code: 1,
    });
  });

  it("the REST reference has a section per operation and webhook, with its operationId and security", () => {
    const doc = apiDocument() as {
      paths: Record<string, Record<string, { operationId: string }>>;
      webhooks: Record<string, Record<string, { operationId: string }>>;
    };
    const text = restReference(doc);
    const operations = Object.entries(doc.paths).flatMap(([route, item]) =>
      Object.entries(item).map(([m, op]) => [`### ${m.toUpperCase()} ${route}`, op.operationId]),
    );
    expect(operations.length).toBe(25);
    expect(operations.filter(([heading, id]) => !text.includes(`${heading}\n\noperationId \`${id}\`\n`))).toEqual([]);
    expect(text).toContain("### alertChange (POST)\n\noperationId `alertChange`\n");
    const section = (heading: string) =>
      text.slice(text.indexOf(`### ${heading}\n`), text.indexOf("\n### ", text.indexOf(`### ${heading}\n`) + 1));
    expect(section("GET /livez")).toContain("Security: public: no token.");
    expect(section("GET /pipelines")).toContain("Security: read token: open unless `STRAGGLER_READ_TOKEN` is set");
    expect(section("POST /pipelines/{pipeline}/events")).toContain("Security: write token:");
    expect(section("POST /pipelines/{pipeline}/events")).toContain(
      "Request body (required): `application/json`, `application/x-ndjson`.",
    );
    expect(section("GET /pipelines/{pipeline}/windows/history")).toContain(
      "| `start` | query | yes | string (date-time) |",
    );
  });

  it("the CLI reference has a section per command and subcommand, with its usage and options, and the exit codes", () => {
    const text = cliReference(buildCli());
    const headings = [...text.matchAll(/^## (straggler .*)$/gm)].map((m) => m[1]);
    expect(headings).toEqual([
      "straggler serve",
      "straggler migrate",
      "straggler ingest",
      "straggler sources",
      "straggler stream",
      "straggler status",
      "straggler replay",
      "straggler correct",
      "straggler reconcile",
      "straggler lateness",
      "straggler explain",
      "straggler db",
      "straggler db url",
      "straggler db psql",
      "straggler db grant-reader",
      "straggler drop",
      "straggler hold",
      "straggler release",
      "straggler rebuild",
      "straggler cutover",
      "straggler archive",
      "straggler restore",
      "straggler compact",
    ]);
    expect(text).toContain("## straggler db psql\n\n```text\nstraggler db psql [options] [psql-args...]\n```\n");
    expect(text).toContain("| `-c, --config <file>` | pipelines file (YAML/JSON) (env: STRAGGLER_PIPELINES) |  |\n");
    expect(text).toContain('| `--role <name>` | the role\'s name | `"straggler_reader"` |\n');
    expect(text).toContain(
      "Exit codes:\n  0  done (also --help, --version)\n  1  failed, or the command's own failure (e.g. a reconcile mismatch)\n  2  usage or configuration error\n```\n",
    );
  });
});
