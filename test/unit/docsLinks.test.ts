import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, "")
    .replace(/ /g, "-");
}

/** Lines of a Markdown file outside fenced code blocks, with their 1-based numbers. */
function prose(path: string): Array<[number, string]> {
  let fenced = false;
  const out: Array<[number, string]> = [];
  readFileSync(path, "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (line.startsWith("```")) fenced = !fenced;
      else if (!fenced) out.push([i + 1, line]);
    });
  return out;
}

function anchors(path: string): Set<string> {
  const out = new Set<string>();
  for (const [, line] of prose(path)) {
    const m = /^#{1,6} (.*)$/.exec(line);
    if (m) out.add(slug(m[1]!));
  }
  return out;
}

const guides = readdirSync("docs").filter((f) => f.endsWith(".md"));
const files = ["README.md", ...guides.map((f) => join("docs", f))];

describe("documentation links", () => {
  it("every relative link in README.md and docs/*.md names a file that exists and a heading it has", () => {
    const broken: string[] = [];
    for (const file of files) {
      for (const [n, line] of prose(file)) {
        for (const m of line.matchAll(/\]\(([^)\s]+)\)/g)) {
          const target = m[1]!;
          if (/^[a-z]+:/.test(target)) continue;
          const [path, anchor] = target.split("#") as [string, string | undefined];
          const resolved = path === "" ? file : normalize(join(dirname(file), path));
          if (!existsSync(resolved)) broken.push(`${file}:${n}: ${target} (no such file)`);
          else if (anchor && resolved.endsWith(".md") && !anchors(resolved).has(anchor)) {
            broken.push(`${file}:${n}: ${target} (no such heading)`);
          }
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("the README stays a short introduction (at most 300 lines) and each guide has a table of contents", () => {
    expect(readFileSync("README.md", "utf8").split("\n").length).toBeLessThanOrEqual(300);
    for (const guide of ["getting-started", "concepts-and-semantics", "configuration", "operations", "rest", "cli"]) {
      expect(readFileSync(`docs/${guide}.md`, "utf8")).toContain("\n## Contents\n");
    }
  });
});
