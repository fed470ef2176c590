/**
 * The record of every file a pipeline has seen (`straggler.source_files`,
 * read through the view `straggler.sources`): its state, size, modification
 * time, SHA-256 of its bytes, and for append-only files how far it has landed.
 * The statements are in src/db/sql (readSourceFiles, markSourceFile, recordFileLanding).
 */
import { createHash } from "node:crypto";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Queryable } from "../db/pool.js";
import { markSourceFile as markFile, type SourceFileFacts } from "../db/sql/ingest/markSourceFile.js";
import { recordFileLanding as recordLanding } from "../db/sql/ingest/recordFileLanding.js";
import type { SourceFileState } from "../db/sql/ingest/readSourceFiles.js";
import type { LandResult } from "./landAnswer.js";

export { readSourceFiles, type SourceFileRecord, type SourceFileState } from "../db/sql/ingest/readSourceFiles.js";

/**
 * A hash of the config that decides whether a file can be read (source and
 * fields): a refused file is tried again when it changes.
 */
export function sourceConfigHash(pipeline: PipelineConfig): string {
  const { landingDir: _dir, ...source } = pipeline.source;
  return createHash("sha256")
    .update(JSON.stringify([source, pipeline.fields]))
    .digest("hex")
    .slice(0, 12);
}

export interface FileFacts {
  sizeBytes: number;
  /** Modification time, epoch ms (fractions are dropped). */
  mtimeMs: number;
  /** SHA-256 of the bytes; null keeps the one recorded. */
  sha256?: string | null;
}

/** The file's facts as the statements record them. */
function recorded(pipeline: PipelineConfig, name: string, facts: FileFacts): SourceFileFacts {
  return {
    pipeline: pipeline.name,
    name,
    sizeBytes: facts.sizeBytes,
    mtime: new Date(Math.floor(facts.mtimeMs)).toISOString(),
    sha256: facts.sha256 ?? null,
    configHash: sourceConfigHash(pipeline),
  };
}

/**
 * Records `name`'s state (counts and landed bytes unchanged). `state_since`
 * moves only when the state changes; `last_seen` always.
 * @throws the database's error
 */
export async function markSourceFile(
  client: Queryable,
  pipeline: PipelineConfig,
  name: string,
  state: SourceFileState,
  facts: FileFacts,
  reason: string | null = null,
): Promise<void> {
  await markFile(client, recorded(pipeline, name, facts), state, reason);
}

/**
 * Records a landing of (a piece of) `name`, in the landing's transaction:
 * state `landed`, counts added, landed bytes and lines set.
 * @throws the database's error
 */
export async function recordFileLanding(
  client: Queryable,
  pipeline: PipelineConfig,
  name: string,
  facts: FileFacts & { landedBytes: number; landedLines: number },
  result: LandResult,
): Promise<void> {
  await recordLanding(client, recorded(pipeline, name, facts), {
    landedBytes: facts.landedBytes,
    landedLines: facts.landedLines,
    rows: result.landed,
    accepted: result.accepted,
    quarantined: result.quarantined,
  });
}
