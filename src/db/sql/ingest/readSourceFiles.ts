/** Reads every file record of a pipeline (`straggler.source_files`), for the landing folder's scan. */
import type { Queryable } from "../../pool.js";

export type SourceFileState = "landed" | "refused" | "changed_after_landing" | "waiting_to_settle";

/** One file as recorded. */
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

const READ_SOURCE_FILES_SQL = `SELECT name, state, reason, size_bytes, (extract(epoch FROM mtime) * 1000)::bigint AS mtime_ms, sha256, config_hash, landed_bytes, landed_lines
       FROM straggler.source_files WHERE pipeline = $1`;

const READ_SOURCE_FILE_SQL = `${READ_SOURCE_FILES_SQL} AND name = $2`;

/**
 * @returns the record of the file `name` of `pipeline`, or undefined when there is none
 * @throws the database's error
 */
export async function readSourceFile(
  client: Queryable,
  pipeline: string,
  name: string,
): Promise<SourceFileRecord | undefined> {
  const { rows } = await client.query(READ_SOURCE_FILE_SQL, [pipeline, name]);
  return rows.map(recordOf)[0];
}

function recordOf(r: Record<string, unknown>): SourceFileRecord {
  return {
    name: r.name as string,
    state: r.state as SourceFileState,
    reason: r.reason as string | null,
    sizeBytes: r.size_bytes as number | null,
    mtimeMs: r.mtime_ms as number | null,
    sha256: r.sha256 as string | null,
    configHash: r.config_hash as string | null,
    landedBytes: r.landed_bytes as number,
    landedLines: r.landed_lines as number,
  };
}

/**
 * @returns every file record of `pipeline`, by name
 * @throws the database's error
 */
export async function readSourceFiles(client: Queryable, pipeline: string): Promise<Map<string, SourceFileRecord>> {
  const { rows } = await client.query(READ_SOURCE_FILES_SQL, [pipeline]);
  return new Map(rows.map((r) => [r.name as string, recordOf(r)]));
}
