/**
 * Group commit for small landings (HTTP requests): the requests of one
 * pipeline that wait for its append lock at the same time land in one
 * transaction — one lock, one COPY, one NOTIFY, one COMMIT — and each is
 * answered once that COMMIT is answered, with its own counts and `seq` range
 * and its own `landed_sources` record (as if it had landed alone, in arrival
 * order).
 *
 * - A request is read and classified before it joins (its bad records are
 *   quarantined rows, its unreadable body an error of its own): joining is
 *   only for work that cannot fail on its own input.
 * - Four exchanges with the server per group: BEGIN, the lock, bronze's seq
 *   high water, the sources' ids, the keyed sources' records and the probe of
 *   the group's accepted event ids in one simple-protocol query; the COPY of
 *   every member's rows (one write); the statement that records each source,
 *   reads its seq range and queues the NOTIFY (prepared), preceded in the
 *   same query by the dedupe only where an id may repeat (found by the probe,
 *   or twice in the group: parameters written in, `inlineParams`); COMMIT.
 * - No wait is added. While a pipeline's landing runs, the requests that
 *   arrive queue; when the lock is free, all of them (at most 64 requests or
 *   20,000 rows, in arrival order) form the next group. An idle pipeline
 *   lands a lone request at once.
 * - A request whose source (Idempotency-Key) is already in the forming group
 *   waits for the next one, where it is answered from the first's record
 *   (200, or 422 for another body) exactly as before.
 * - When the group's transaction fails for a reason tied to one request (the
 *   server refuses one of its COPY lines, or its source was recorded
 *   meanwhile by a writer outside the lock), that request gets the error (or
 *   the recorded answer) and the others land again without it. Any other
 *   database error that could come from one request's rows makes each
 *   request land alone; a connection error fails them all (nothing landed:
 *   503, retry). A lost answer to COMMIT is looked up as for one landing
 *   (`commitOutcome.ts`).
 *
 * This module forms the groups (the queue of requests waiting for a turn in the append queue);
 * src/ingest/groupLanding.ts lands one.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { dedupeModeOf, type RawRecord } from "../core/admission.js";
import type { Pool } from "../db/pool.js";
import { inAppendQueue } from "./appendLock.js";
import { classifyLines, idsToProbe } from "./classifyLines.js";
import { landedBefore, type LandResult } from "./landAnswer.js";
import { landGroup, type Member } from "./groupLanding.js";

/** Most requests in one group. */
const MAX_MEMBERS = 64;
/** Most rows in one group (a request that would pass it waits for the next group; a group always takes its first). */
const MAX_ROWS = 20_000;

interface GroupQueue {
  pending: Member[];
  /** A turn in the pipeline's append queue is booked and has not started. */
  booked: boolean;
}

const queues = new WeakMap<Pool, Map<string, GroupQueue>>();

export interface GroupLandOptions {
  /** Ingestion time for records that carry none, epoch ms. */
  landingTimeMs: number;
  /** SHA-256 (hex) of the request body, recorded with the source (Idempotency-Key check; `SourceConflictError`). */
  requestSha256?: string;
  /** The source key was made up for this landing (`http:<uuid>`): no earlier landing to look up. */
  newSource?: boolean;
  /** The input the records come from (docs/DESIGN.md "Several inputs"); `default` when unset. */
  input?: string;
}

/**
 * Lands one small source (a request body: its records are held in memory
 * while it waits) in the next group of `pipeline`. Same contract as
 * `landRecords` (copyToBronze.ts): a source that landed before is answered
 * from its record; otherwise the answer comes after the group's COMMIT.
 * @returns counts per outcome and this source's bronze `seq` range; `alreadyLanded` with the recorded counts when it had landed before
 * @throws SourceConflictError (same source, another request body), CommitOutcomeUnknownError, what reading `records` throws, or the database's error (nothing of this source landed)
 */
export async function landInGroup(
  pool: Pool,
  pipeline: PipelineConfig,
  source: string,
  records: AsyncIterable<RawRecord>,
  opts: GroupLandOptions,
): Promise<LandResult> {
  const earlier = opts.newSource ? undefined : await landedBefore(pool, pipeline.name, source, opts.requestSha256);
  if (earlier) return earlier;
  const dedupes = dedupeModeOf(pipeline.admission.dedupe) !== "off";
  const { lines: classified, tally } = classifyLines(pipeline, source, records, {
    landingTimeMs: opts.landingTimeMs,
    ...(opts.input === undefined ? {} : { input: opts.input }),
    // Its accepted ids, probed before the group's COPY: the dedupe after it is skipped where none can repeat.
    ...(dedupes ? { collectIds: MAX_ROWS } : {}),
  });
  const lines: string[] = [];
  for await (const line of classified) lines.push(line);
  return new Promise<LandResult>((resolve, reject) => {
    const member: Member = {
      source,
      landingTimeMs: opts.landingTimeMs,
      lines,
      landed: tally.landed,
      accepted: tally.accepted,
      byReason: tally.byReason,
      sha256: tally.hash.digest("hex"),
      acceptedIds: idsToProbe(pipeline, { lines, rest: null, tally }),
      requestSha256: opts.requestSha256,
      newSource: opts.newSource ?? false,
      settled: false,
      resolve: (r) => void (member.settled || ((member.settled = true), resolve(r))),
      reject: (e) => void (member.settled || ((member.settled = true), reject(e))),
    };
    const q = queueOf(pool, pipeline.name);
    q.pending.push(member);
    book(pool, pipeline, q);
  });
}

/** Requests of `pipeline` classified and waiting for their group (for tests and diagnostics). */
export function waitingInGroup(pool: Pool, pipeline: string): number {
  return queues.get(pool)?.get(pipeline)?.pending.length ?? 0;
}

function queueOf(pool: Pool, pipeline: string): GroupQueue {
  let byPipeline = queues.get(pool);
  if (!byPipeline) queues.set(pool, (byPipeline = new Map()));
  let q = byPipeline.get(pipeline);
  if (!q) byPipeline.set(pipeline, (q = { pending: [], booked: false }));
  return q;
}

/** Books one turn in the pipeline's append queue (appendLock.ts) unless one is booked; the turn takes whatever waits then. */
function book(pool: Pool, pipeline: PipelineConfig, q: GroupQueue): void {
  if (q.booked) return;
  q.booked = true;
  void inAppendQueue(pool, pipeline.name, async () => {
    q.booked = false;
    const group = take(q);
    if (q.pending.length > 0) book(pool, pipeline, q);
    await landGroup(pool, pipeline, group);
  });
}

/** Takes the next group from `q.pending`, in arrival order: one member per source, within the limits. */
function take(q: GroupQueue): Member[] {
  const group: Member[] = [],
    sources = new Set<string>(),
    left: Member[] = [];
  let rows = 0;
  for (const m of q.pending) {
    const fits = group.length === 0 || (group.length < MAX_MEMBERS && rows + m.landed <= MAX_ROWS);
    if (!fits || sources.has(m.source)) {
      left.push(m);
      continue;
    }
    group.push(m);
    sources.add(m.source);
    rows += m.landed;
  }
  q.pending = left;
  return group;
}
