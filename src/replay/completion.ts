/**
 * A replay's dataset known again: its identity (names and sizes), the stat fingerprint and SHA-256 that
 * prove its files unchanged, the completed replay they find (src/db/sql/ingest/replayCompletion.ts), and
 * the refusal of files that share a name.
 */
import { createHash } from "node:crypto";
import { createReadStream, type Stats } from "node:fs";
import { pipeline as pipe } from "node:stream/promises";
import path from "node:path";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import { readReplayCompletions, type ReplayCompletion } from "../db/sql/ingest/replayCompletion.js";

/**
 * Files of a replay that share a base name, which is a file source's name (made-up event ids are
 * `<name>:<line>`, the landing folder knows a replayed file by it): `[name, paths]` for the first such name, or
 * undefined. Two such files would make the second's events DUPLICATEs of the first's.
 */
function sharedFileName(files: string[]): [string, string[]] | undefined {
  const byName = new Map<string, string[]>();
  for (const f of files) byName.set(path.basename(f), [...(byName.get(path.basename(f)) ?? []), f]);
  return [...byName].find(([, paths]) => paths.length > 1);
}

/** Why a replay of `files` is refused before anything is staged (two files share a name), or undefined. */
export function replayFilesProblem(files: string[]): string | undefined {
  const shared = sharedFileName(files);
  return (
    shared &&
    `${shared[1].join(" and ")} share the name ${shared[0]}, which is a file source's name (its made-up event ids are ${shared[0]}:<line>): give each file a name of its own`
  );
}

/** A dataset's identity: its files' names and sizes (a changed file makes a new replay). */
export function datasetId(files: string[], stats: Stats[]): string {
  const h = createHash("sha256");
  files.forEach((f, i) => h.update(`${path.basename(f)}:${stats[i]!.size}\n`));
  return h.digest("hex").slice(0, 12);
}

/** The files' names, sizes and modification times (whole ms), hashed: what proves them unchanged without reading them. */
export function statFingerprint(files: string[], stats: Stats[]): string {
  const h = createHash("sha256");
  files.forEach((f, i) => h.update(`${path.basename(f)}:${stats[i]!.size}:${Math.trunc(stats[i]!.mtimeMs)}\n`));
  return h.digest("hex").slice(0, 16);
}

/** SHA-256 (hex) of the files' bytes, one after the other. */
export async function contentHash(files: string[]): Promise<string> {
  const h = createHash("sha256");
  for (const f of files)
    await pipe(createReadStream(f), async function* (chunks: AsyncIterable<Buffer>) {
      for await (const c of chunks) h.update(c);
    });
  return h.digest("hex");
}

/**
 * The completed replay of these files with this span, when one is recorded and the files are unchanged:
 * the same names, sizes and modification times, or (a modification time differs) the same bytes. One query;
 * the files are read only in the second case.
 */
export async function completedBefore(
  pool: Pool,
  pipeline: PipelineConfig,
  tag: string,
  spanMs: number,
  fingerprint: string,
  files: string[],
): Promise<{ completion: ReplayCompletion; by: "stat" | "sha256" } | null> {
  const completions = (await readReplayCompletions(pool, pipeline.name, tag)).filter((c) => c.spanMs === spanMs);
  // A completion found again by its bytes is recorded again with the new fingerprint: the first record's time is the replay's.
  const firstOf = (c: ReplayCompletion) => ({
    ...c,
    completedAt: completions
      .filter((x) => x.sha256 === c.sha256)
      .map((x) => x.completedAt)
      .sort()[0]!,
  });
  const same = completions.find((c) => c.statFingerprint === fingerprint);
  if (same) return { completion: firstOf(same), by: "stat" };
  if (completions.length === 0) return null;
  const sha256 = await contentHash(files);
  const sameBytes = completions.find((c) => c.sha256 === sha256);
  return sameBytes ? { completion: firstOf(sameBytes), by: "sha256" } : null;
}

/** The summary's words for a replay that completed before. */
export function landedBeforeMessage(
  c: Pick<ReplayCompletion, "batches" | "rows" | "completedAt">,
  by: "stat" | "sha256",
): string {
  return (
    `every micro-batch was landed before (${c.batches} micro-batches, ${c.rows} rows; this replay completed at ${c.completedAt}): nothing landed; ` +
    (by === "stat"
      ? "the files' sizes and modification times are unchanged, so they were not read"
      : "the files' modification times changed but their SHA-256 did not")
  );
}
