/**
 * The record of every file a pipeline has seen (`straggler.source_files`,
 * read through the view `straggler.sources`): its state, size, modification
 * time, SHA-256 of its bytes, and for append-only files how far it has landed.
 */
import { createHash } from "node:crypto";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool, PoolClient } from "../db/pool.js";
import type { LandResult } from "./copyToBronze.js";

export type SourceFileState = "landed" | "refused" | "changed_after_landing" | "waiting_to_settle";

export interface SourceFileRecord {
  name: string;
  state: SourceFileState;
  reason: string | null;
  sizeBytes: number | null;
  /** Modification time, epoch ms (whole ms). */
  mtimeMs: number | null;
  sha256: string | null;
  configHash: string | null;
  /** Bytes of the file landed so far (append-only files land in pieces). */
  landedBytes: number;
  /** Lines of the file consumed so far. */
  landedLines: number;
}

type Queryable = Pool | PoolClient;

/**
 * A hash of the config that decides whether a file can be read (source and
 * fields): a refused file is tried again when it changes.
 */
export function sourceConfigHash(p: PipelineConfig): string {
  const { landingDir: _dir, ...source } = p.source;
  return createHash("sha256").update(JSON.stringify([source, p.fields])).digest("hex").slice(0, 12);
}

/** Every file record of `pipeline`, by name. */
export async function readSourceFiles(q: Queryable, pipeline: string): Promise<Map<string, SourceFileRecord>> {
  const { rows } = await q.query(
    `SELECT name, state, reason, size_bytes, (extract(epoch FROM mtime) * 1000)::bigint AS mtime_ms, sha256, config_hash, landed_bytes, landed_lines
       FROM straggler.source_files WHERE pipeline = $1`,
    [pipeline],
  );
  return new Map(
    rows.map((r) => [
      r.name as string,
      { name: r.name, state: r.state, reason: r.reason, sizeBytes: r.size_bytes, mtimeMs: r.mtime_ms, sha256: r.sha256, configHash: r.config_hash, landedBytes: r.landed_bytes, landedLines: r.landed_lines },
    ]),
  );
}

export interface FileFacts {
  sizeBytes: number;
  /** Modification time, epoch ms (fractions are dropped). */
  mtimeMs: number;
  /** SHA-256 of the bytes; null keeps the one recorded. */
  sha256?: string | null;
}

const iso = (ms: number) => new Date(Math.floor(ms)).toISOString();

/**
 * Records `name`'s state (counts and landed bytes unchanged). `state_since`
 * moves only when the state changes; `last_seen` always.
 */
export async function markSourceFile(q: Queryable, p: PipelineConfig, name: string, state: SourceFileState, facts: FileFacts, reason: string | null = null): Promise<void> {
  await q.query(
    `INSERT INTO straggler.source_files AS f (pipeline, name, state, reason, size_bytes, mtime, sha256, config_hash)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (pipeline, name) DO UPDATE SET
       state = EXCLUDED.state, reason = EXCLUDED.reason, size_bytes = EXCLUDED.size_bytes, mtime = EXCLUDED.mtime,
       sha256 = coalesce(EXCLUDED.sha256, f.sha256), config_hash = EXCLUDED.config_hash, last_seen = now(),
       state_since = CASE WHEN f.state = EXCLUDED.state THEN f.state_since ELSE now() END`,
    [p.name, name, state, reason, facts.sizeBytes, iso(facts.mtimeMs), facts.sha256 ?? null, sourceConfigHash(p)],
  );
}

/**
 * Records a landing of (a piece of) `name`, in the landing's transaction:
 * state `landed`, counts added, landed bytes and lines set.
 */
export async function recordFileLanding(
  client: Queryable,
  p: PipelineConfig,
  name: string,
  facts: FileFacts & { landedBytes: number; landedLines: number },
  result: LandResult,
): Promise<void> {
  await client.query(
    `INSERT INTO straggler.source_files AS f (pipeline, name, state, size_bytes, mtime, sha256, config_hash, landed_bytes, landed_lines, rows, accepted, quarantined, landed_at)
     VALUES ($1, $2, 'landed', $3, $4, $5, $6, $7, $8, $9, $10, $11, now())
     ON CONFLICT (pipeline, name) DO UPDATE SET
       state = 'landed', reason = NULL, size_bytes = EXCLUDED.size_bytes, mtime = EXCLUDED.mtime,
       sha256 = coalesce(EXCLUDED.sha256, f.sha256), config_hash = EXCLUDED.config_hash,
       landed_bytes = EXCLUDED.landed_bytes, landed_lines = EXCLUDED.landed_lines,
       rows = f.rows + EXCLUDED.rows, accepted = f.accepted + EXCLUDED.accepted, quarantined = f.quarantined + EXCLUDED.quarantined,
       landed_at = now(), last_seen = now(), state_since = CASE WHEN f.state = 'landed' THEN f.state_since ELSE now() END`,
    [p.name, name, facts.sizeBytes, iso(facts.mtimeMs), facts.sha256 ?? null, sourceConfigHash(p), facts.landedBytes, facts.landedLines, result.landed, result.accepted, result.quarantined],
  );
}
