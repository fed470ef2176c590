/**
 * A completed replay's record in `straggler.landed_sources`, so that the same
 * replay run again knows in one query that every micro-batch was landed
 * (src/replay/replay.ts). The source is named
 * `replay:<dataset>:complete:span=<ms>ms:batches=<n>:rows=<n>:files=<stat fingerprint>`
 * (listed by `straggler sources` as a replay source of 0 rows: the rows count
 * under the `replay:<dataset>:<span start>` sources); its `sha256` column holds
 * the SHA-256 of the files' bytes, checked only when their size or modification
 * time differ from the fingerprint's.
 */
import type { Queryable } from "../../pool.js";

/** A completed replay as recorded. */
export interface ReplayCompletion {
  /** Micro-batch span, ms. */
  spanMs: number;
  /** Micro-batches the replay was made of (landed by it or before it). */
  batches: number;
  /** Rows read from the files. */
  rows: number;
  /** The files' names, sizes and modification times, hashed (16 hex digits). */
  statFingerprint: string;
  /** SHA-256 (hex) of the files' bytes, one after the other. */
  sha256: string;
  /** When it was recorded, ISO 8601. */
  completedAt: string;
}

const NAME = /:complete:span=(\d+)ms:batches=(\d+):rows=(\d+):files=([0-9a-f]+)$/;

/** The source name of a completed replay of dataset `replayTag` (`replay:<dataset>`). */
function completionSource(
  replayTag: string,
  c: Pick<ReplayCompletion, "spanMs" | "batches" | "rows" | "statFingerprint">,
): string {
  return `${replayTag}:complete:span=${c.spanMs}ms:batches=${c.batches}:rows=${c.rows}:files=${c.statFingerprint}`;
}

// left(…) = prefix rather than LIKE: a prefix is matched as written, `_` and `%` included.
const READ_COMPLETIONS_SQL = `SELECT source, sha256, landed_at FROM straggler.landed_sources
     WHERE pipeline = $1 AND left(source, length($2)) = $2`;

/**
 * @param replayTag `replay:<dataset>`
 * @returns the completed replays of that dataset recorded for `pipeline` (any span, any fingerprint)
 * @throws the database's error
 */
export async function readReplayCompletions(
  client: Queryable,
  pipeline: string,
  replayTag: string,
): Promise<ReplayCompletion[]> {
  const { rows } = await client.query<{ source: string; sha256: string; landed_at: string }>(READ_COMPLETIONS_SQL, [
    pipeline,
    `${replayTag}:complete:`,
  ]);
  return rows.flatMap((r) => {
    const m = NAME.exec(r.source);
    return m
      ? [
          {
            spanMs: Number(m[1]),
            batches: Number(m[2]),
            rows: Number(m[3]),
            statFingerprint: m[4]!,
            sha256: r.sha256,
            completedAt: r.landed_at,
          },
        ]
      : [];
  });
}

const RECORD_COMPLETION_SQL = `INSERT INTO straggler.landed_sources (pipeline, source, sha256, rows, accepted, quarantined)
     VALUES ($1, $2, $3, 0, 0, 0) ON CONFLICT DO NOTHING`;

/**
 * Records a completed replay (0 rows: the ledger counts its rows under its spans).
 * @throws the database's error
 */
export async function recordReplayCompletion(
  client: Queryable,
  pipeline: string,
  replayTag: string,
  c: Omit<ReplayCompletion, "completedAt">,
): Promise<void> {
  await client.query(RECORD_COMPLETION_SQL, [pipeline, completionSource(replayTag, c), c.sha256]);
}
