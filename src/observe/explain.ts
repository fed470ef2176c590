/**
 * Explain a window (`straggler explain`, `GET /pipelines/{p}/windows/history`): every revision
 * of one key's window in order with its value before and after, status and cause, the late
 * events each correction recovered and the quarantined rows that would have fallen in it.
 * Built from what the tables already record (docs/operations.md "Explain a window" says which
 * causes are shown from when); nothing is recorded for it on the micro-batch path. The
 * revisions are computed by src/core/windowHistory.ts (fixed-length and calendar windows) and
 * src/core/sessionHistory.ts (sessions).
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { sessionGapOf, windowSpecOf } from "../core/pipelineSpec.js";
import { keyIn, keyOut } from "../core/keys.js";
import { formatInstant, isoToUs } from "../core/instants.js";
import { parseInstant } from "../core/timestamps.js";
import { batchIndex } from "../core/historyParts.js";
import {
  windowHistory,
  type Aggregates,
  type HistoryBatch,
  type LateEvent,
  type Revision,
} from "../core/windowHistory.js";
import { assignWindows } from "../core/windows.js";
import { withTransaction, type Pool, type Queryable } from "../db/pool.js";
import { readBatchesOfSeqs, readHistoryBatches } from "../db/sql/explain/historyBatches.js";
import { readWindowAudit } from "../db/sql/explain/windowAudit.js";
import { readWindowEvents } from "../db/sql/explain/windowEvents.js";
import { readWindowQuarantine, type WindowQuarantineRow } from "../db/sql/explain/windowQuarantine.js";
import {
  readHolds,
  readLastCutover,
  readSessionAt,
  readWindowRow,
  type WindowStateRow,
} from "../db/sql/explain/windowState.js";
import { sessionHistory } from "../core/sessionHistory.js";

/** A window start or key that names no window of the pipeline (400 over REST, exit 2 in the CLI). */
export class ExplainRequestError extends Error {
  override name = "ExplainRequestError";
}

/** The window as it is now (as `straggler.window_results_table` holds it for the live version). */
interface WindowNow extends Aggregates {
  status: "open" | "final" | "corrected";
  revision: number;
  /** True while a hold keeps an older value published. */
  held: boolean;
}

/** A session of the key that was merged into the explained one or split from it, with its last value. */
interface RelatedSession extends Aggregates {
  start: string;
  end: string;
}

/** The answer: the window, its revisions (oldest first), late events and quarantined rows. */
export interface WindowExplanation {
  pipeline: string;
  /** The key as clients name it (null: the null group; "" for a pipeline without key fields). */
  key: string | null;
  windowType: "tumbling" | "sliding" | "calendar" | "session";
  window: { start: string; end: string };
  now: WindowNow | null;
  revisions: (Revision & { n: number })[];
  lateEvents: LateEvent[];
  /** Sessions only: the sessions of the key this one merged or split from (their bounds and last value). */
  sessionsMerged: RelatedSession[];
  quarantined: { total: number; rows: WindowQuarantineRow[] };
}

function windowTypeOf(p: PipelineConfig): WindowExplanation["windowType"] {
  if (p.window.type === "session") return "session";
  if ("calendar" in p.window) return "calendar";
  return p.window.type;
}

/**
 * Reads the stored key `--key`/`key=` names: a pipeline without key fields has the one key ""
 * (none may be given); with key fields one must be (`null` key: the null group).
 * @throws ExplainRequestError naming what to give
 */
function storedKeyOf(p: PipelineConfig, key: string | null | undefined): string {
  const fields = p.fields.groupKey;
  if (fields.length === 0) {
    if (key !== undefined && key !== "")
      throw new ExplainRequestError(`key: pipeline ${p.name} has no group key fields; leave the key out`);
    return "";
  }
  if (key === undefined)
    throw new ExplainRequestError(
      `key: pipeline ${p.name} groups by ${fields.join(", ")}; give the key (or the null group)`,
    );
  return keyIn(key);
}

/**
 * Explains the window of `pipeline` starting at `start` for `key`, every table read in one
 * snapshot (a read-only repeatable-read transaction on one connection): a micro-batch or
 * correction committing meanwhile is wholly in the history or wholly out of it.
 * @param start ISO 8601 instant with a zone: a window's start (for sessions: an instant inside the session)
 * @param key the key as clients name it (null: the null group); undefined for a pipeline without key fields
 * @throws ExplainRequestError for a start that is no window's start, a session that does not exist, or a missing key
 * @throws the database's error when it cannot be reached
 */
export async function explainWindow(
  pool: Pool,
  p: PipelineConfig,
  start: string,
  key?: string | null,
): Promise<WindowExplanation> {
  return withTransaction(
    pool,
    (client) => explainIn(client, p, start, key),
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
  );
}

async function explainIn(
  db: Queryable,
  p: PipelineConfig,
  start: string,
  key?: string | null,
): Promise<WindowExplanation> {
  const parsed = parseInstant(start, "iso8601", undefined);
  if (!parsed.ok)
    throw new ExplainRequestError(
      `start: expected an ISO 8601 instant with a zone, e.g. 2026-10-01T12:00:00Z (${parsed.detail})`,
    );
  const groupKey = storedKeyOf(p, key);
  const gap = sessionGapOf(p);
  if (gap !== undefined) return explainSession(db, p, parsed.us, groupKey, gap);
  const spec = windowSpecOf(p);
  const w = assignWindows(parsed.us, spec).find((b) => b.startUs === parsed.us);
  if (w === undefined) {
    const containing = assignWindows(parsed.us, spec).map((b) => formatInstant(b.startUs));
    throw new ExplainRequestError(
      `start: ${formatInstant(parsed.us)} is not the start of a window of pipeline ${p.name}; the windows holding it start at ${containing.join(", ")}`,
    );
  }
  const ws = formatInstant(w.startUs),
    we = formatInstant(w.endUs);
  const events = await readWindowEvents(db, p.name, groupKey, ws, we);
  const firstSeq = events.reduce((m, e) => Math.min(m, e.seq, e.supersededBy ?? Infinity), Infinity);
  const batches = await readHistoryBatches(
    db,
    p.name,
    Number.isFinite(firstSeq) ? firstSeq - 1 : Number.MAX_SAFE_INTEGER,
    we,
  );
  const audit = await readWindowAudit(db, p.name, groupKey, ws, we, true);
  const holds = await readHolds(db, p.name);
  const cutover = await readLastCutover(db, p.name, groupKey, ws, we);
  const row = await readWindowRow(db, p.name, groupKey, ws, we);
  const quarantined = await readWindowQuarantine(db, p.name, groupKey, ws, we);
  // Batches that read a late row after the window was final are not among the batches above.
  const lateBatches = await readBatchesOfSeqs(db, p.name, unread(events, batches));
  const now = row === undefined ? null : { count: row.count, sum: row.sum, min: row.min, max: row.max };
  const history = windowHistory({
    windowEnd: we,
    events,
    batches: [...batches, ...lateBatches].sort((a, b) => a.batchId - b.batchId),
    corrections: audit,
    holds,
    cutover,
    now,
    ...(row === undefined
      ? {}
      : { nowStatus: row.corrected ? ("corrected" as const) : row.isFinal ? ("final" as const) : ("open" as const) }),
  });
  return finish(
    p,
    key,
    { start: ws, end: we },
    row,
    holds.some((h) => h.releasedAt === null),
    history.revisions,
    history.lateEvents,
    [],
    quarantined,
  );
}

async function explainSession(
  db: Queryable,
  p: PipelineConfig,
  atUs: bigint,
  groupKey: string,
  gapMs: number,
): Promise<WindowExplanation> {
  const at = formatInstant(atUs);
  const row = await readSessionAt(db, p.name, groupKey, at);
  if (row === undefined)
    throw new ExplainRequestError(`start: no session of pipeline ${p.name} for this key holds ${at}`);
  const audit = await readWindowAudit(db, p.name, groupKey, row.windowStart, row.windowEnd, false);
  // The span: the session and every session a correction replaced inside or around it.
  let spanStart = isoToUs(row.windowStart),
    spanEnd = isoToUs(row.windowEnd);
  for (const a of audit) {
    spanStart = isoToUs(a.windowStart) < spanStart ? isoToUs(a.windowStart) : spanStart;
    spanEnd = isoToUs(a.windowEnd) > spanEnd ? isoToUs(a.windowEnd) : spanEnd;
  }
  const ss = formatInstant(spanStart),
    se = formatInstant(spanEnd);
  const events = await readWindowEvents(db, p.name, groupKey, ss, se);
  const firstSeq = events.reduce((m, e) => Math.min(m, e.seq), Infinity);
  const batches = await readHistoryBatches(
    db,
    p.name,
    Number.isFinite(firstSeq) ? firstSeq - 1 : Number.MAX_SAFE_INTEGER,
    row.windowEnd,
  );
  const holds = await readHolds(db, p.name);
  const quarantined = await readWindowQuarantine(db, p.name, groupKey, row.windowStart, row.windowEnd);
  const lateBatches = await readBatchesOfSeqs(db, p.name, unread(events, batches));
  const all = [...batches, ...lateBatches].sort((a, b) => a.batchId - b.batchId);
  const history = sessionHistory({
    gapMs,
    target: { start: row.windowStart, end: row.windowEnd },
    events,
    batches: all,
    corrections: audit,
    holds,
  });
  return finish(
    p,
    keyOut(groupKey),
    { start: row.windowStart, end: row.windowEnd },
    row,
    holds.some((h) => h.releasedAt === null),
    history.revisions,
    history.lateEvents,
    history.merged,
    quarantined,
  );
}

/** The `seq` of each row no batch among `batches` read (a late row, read by a later batch, or one no batch read yet). */
function unread(events: { seq: number }[], batches: HistoryBatch[]): number[] {
  const indexOf = batchIndex(batches);
  return events.filter((e) => indexOf(e.seq) < 0).map((e) => e.seq);
}

function finish(
  p: PipelineConfig,
  key: string | null | undefined,
  window: { start: string; end: string },
  row: WindowStateRow | undefined,
  held: boolean,
  revisions: Revision[],
  lateEvents: LateEvent[],
  merged: RelatedSession[],
  quarantined: WindowExplanation["quarantined"],
): WindowExplanation {
  return {
    pipeline: p.name,
    key: key === undefined ? "" : key,
    windowType: windowTypeOf(p),
    window,
    now:
      row === undefined
        ? null
        : {
            count: row.count,
            sum: row.sum,
            min: row.min,
            max: row.max,
            revision: row.revision,
            status: row.corrected ? "corrected" : row.isFinal ? "final" : "open",
            held,
          },
    revisions: revisions.map((r, i) => ({ n: i + 1, ...r })),
    lateEvents,
    sessionsMerged: merged,
    quarantined,
  };
}
