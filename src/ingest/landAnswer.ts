/**
 * A landing's contract: what it is asked (`LandOptions`) and what it answers (`LandResult`), and the
 * answer of a source that landed before, read from its `landed_sources` record (or its conflict: the
 * same source key with another request body). src/ingest/copyToBronze.ts lands; groupCommit.ts too.
 */
import type { PoolClient, Queryable } from "../db/pool.js";
import { readLandedSource, type LandedSourceRow } from "../db/sql/ingest/readLandedSource.js";
import type { LandedIds } from "./landedIds.js";

export interface LandResult {
  pipeline: string;
  source: string;
  /** True when the source had landed before: nothing was written. */
  alreadyLanded: boolean;
  landed: number;
  accepted: number;
  quarantined: number;
  byReason: Record<string, number>;
  firstSeq: number | null;
  lastSeq: number | null;
}

export interface LandOptions {
  /** Ingestion time for records that carry none, epoch ms (set once per source). */
  landingTimeMs: number;
  /** Called every `progressEvery` records with the count so far. */
  onProgress?: (records: number) => void;
  progressEvery?: number;
  /** Runs inside the landing's transaction, after the source is recorded and before COMMIT (e.g. to record the file it came from). */
  beforeCommit?: (client: PoolClient, result: LandResult) => Promise<void>;
  /**
   * SHA-256 (hex) of the request body the records come from (HTTP). Recorded
   * with the source; a later landing of the same source with another hash is
   * refused (`SourceConflictError`).
   */
  requestSha256?: string;
  /**
   * The input the records come from (docs/DESIGN.md "Several inputs"), stamped on every
   * row; `default` when unset. A source may name any input (a log partition names its own);
   * HTTP and the CLI accept only the pipeline's declared inputs.
   */
  input?: string;
  /** The CSV header line the records were read by, once they are read: recorded with the source, so a rebuild can read its raw lines again. */
  csvHeader?: () => string | undefined;
  /** The source key was made up for this landing (`http:<uuid>`, `stdin:<uuid>`): no earlier landing to look up. */
  newSource?: boolean;
  /**
   * The landing's COMMIT returns without waiting for its WAL flush (src/db/sql/ingest/commitWithoutFlushWait.ts), set with
   * the transaction's first statements; for a caller whose next transaction waits for one (a replay's span and its
   * micro-batch: one flush for both).
   */
  commitWithoutFlushWait?: boolean;
  /**
   * The ids a replay has landed in the pipeline (landedIds.ts): a landing classified in memory whose ids it can
   * tell are new skips the probe of the event-id index; the landing tells it its outcome.
   */
  landedIds?: LandedIds;
  /**
   * Told, before COMMIT, when every row stays as it was classified (no dedupe changed one): the pipeline's highest
   * `seq` before the landing (read above `landedIds.floor()`, which a replay gives with it; without, or before the
   * replay's first row, 0 for an empty pipeline and -1 for one with rows, which no checkpoint equals) and the
   * landing's own range. A replay's micro-batch then streams the span from the span's summary (src/core/spanSummary.ts)
   * instead of reading it back.
   */
  onRowsAsClassified?: (range: { seqBefore: number; firstSeq: number; lastSeq: number }) => void;
}

/** A source key used again for a different request body (HTTP `Idempotency-Key`): nothing was landed. */
export class SourceConflictError extends Error {
  override name = "SourceConflictError";
  constructor(readonly source: string) {
    super(`${source} has already landed with a different request body; nothing was landed`);
  }
}

/**
 * A landing record answered as it was first answered (`alreadyLanded: true`).
 * @throws SourceConflictError when `requestSha256` is given and differs from the recorded one
 */
export function answerFromRecord(
  pipeline: string,
  source: string,
  r: LandedSourceRow,
  requestSha256: string | undefined,
): LandResult {
  // A landing recorded before request hashes were kept (request_sha256 null) cannot be compared: it answers as a retry.
  if (requestSha256 !== undefined && r.request_sha256 !== null && r.request_sha256 !== requestSha256)
    throw new SourceConflictError(source);
  return {
    pipeline,
    source,
    alreadyLanded: true,
    landed: r.rows,
    accepted: r.accepted,
    quarantined: r.quarantined,
    byReason: r.by_reason ?? {},
    firstSeq: r.first_seq,
    lastSeq: r.last_seq,
  };
}

/**
 * The landing recorded for `source`, answered as it was first answered
 * (`alreadyLanded: true`), or undefined when the source has not landed.
 * @throws SourceConflictError when `requestSha256` is given and differs from the recorded one
 */
export async function landedBefore(
  client: Queryable,
  pipeline: string,
  source: string,
  requestSha256: string | undefined,
): Promise<LandResult | undefined> {
  const r = await readLandedSource(client, pipeline, source);
  return r === undefined ? undefined : answerFromRecord(pipeline, source, r, requestSha256);
}
