/**
 * The README's and the guides' shell blocks marked ```sh runnable run as written, each with bash
 * (`set -e`) in the repository, on a scratch database (DATABASE_URL) and a free $PORT.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { useTestDatabase } from "../helpers/db.js";
import { REPO_ROOT } from "../helpers/fixtures.js";

const guides = readdirSync(path.join(REPO_ROOT, "docs")).filter((f) => f.endsWith(".md"));
const files = ["README.md", ...guides.map((f) => `docs/${f}`)];
const blocks = files.flatMap((file) =>
  [...readFileSync(path.join(REPO_ROOT, file), "utf8").matchAll(/^```sh runnable\n([\s\S]*?)^```$/gm)].map((m, i) => ({
    name: `${file} block ${i + 1}`,
    script: m[1]!,
  })),
);

describe("runnable documentation blocks", () => {
  const database = useTestDatabase();

  it("there is at least one", () => {
    expect(blocks.length).toBeGreaterThan(0);
  });

  for (const block of blocks) {
    it(`${block.name} runs and exits 0`, async () => {
      const db = await database();
      const r = spawnSync("bash", ["-e", "-c", block.script], {
        cwd: REPO_ROOT,
        encoding: "utf8",
        timeout: 240_000,
        env: { ...process.env, DATABASE_URL: db.url, PORT: "0" },
      });
      expect({ status: r.status, stderr: r.status === 0 ? "" : r.stderr }).toEqual({ status: 0, stderr: "" });
    });
  }
});
