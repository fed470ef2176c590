/** `straggler --version` and `straggler --help`: the version, the environment variables, the exit codes. */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/fixtures.js";

const run = (...args: string[]) =>
  spawnSync(process.execPath, [path.join(REPO_ROOT, "bin/straggler.mjs"), ...args], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: 60_000,
  });

describe("straggler --version and --help", () => {
  it("--version prints package.json's version and exits 0", () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { version: string };
    const version = pkg.version;
    const r = run("--version");
    expect([r.status, r.stdout]).toEqual([0, `${version}\n`]);
  });

  it("--help names every environment variable the configuration reads, and the exit codes", () => {
    const r = run("--help");
    expect(r.status).toBe(0);
    const envSource = readFileSync(path.join(REPO_ROOT, "src/config/env.ts"), "utf8");
    const names = [...new Set(envSource.match(/\b(?:STRAGGLER|DATABASE)_[A-Z_]+(?=:)/g))];
    expect(names.length).toBeGreaterThan(5);
    expect(names.filter((n) => !r.stdout.includes(`  ${n} `))).toEqual([]);
    expect(r.stdout).toContain("Exit codes:\n  0  done (also --help, --version)\n  1  failed");
    expect(r.stdout).toContain("  2  usage or configuration error\n");
  });

  it("every command's --help names its --json, and --limit where it prints a list that can be long", () => {
    const top = run("--help").stdout;
    const commands = [
      ...top.slice(top.indexOf("Commands:"), top.indexOf("Environment variables:")).matchAll(/^ {2}([a-z]+)\b/gm),
    ]
      .map((m) => m[1]!)
      .filter((c) => c !== "help");
    const options = (args: string[]) => {
      const help = run(...args, "--help").stdout;
      return ["--json", "--limit"].filter((flag) => new RegExp(`^ +(?:-\\w, )?${flag}\\b`, "m").test(help));
    };
    const LISTS = [
      "ingest",
      "sources",
      "stream",
      "status",
      "replay",
      "correct",
      "reconcile",
      "lateness",
      "rebuild",
      "archive",
    ];
    const NO_DOCUMENT = ["serve", "db"]; // the service; db url prints the URL alone, db psql is psql
    expect(commands.map((c) => [c, options([c])])).toEqual(
      commands.map((c) => [c, NO_DOCUMENT.includes(c) ? [] : LISTS.includes(c) ? ["--json", "--limit"] : ["--json"]]),
    );
    expect(run("status", "--help").stdout.replace(/\s+/g, " ")).toContain(
      'at most this many items of each list for people, then "… and N more"; 0: the summary alone; --json has them all (default: 20)',
    );
  });
});
