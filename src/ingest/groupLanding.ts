/**
 * One group's landing (src/ingest/groupCommit.ts forms the groups): the transaction that lands its
 * members' rows together and answers each after COMMIT, and what it does when that fails for one member
 * (it is answered alone and the others land again without it) or for any of them (each lands alone).
 */
import { policyVersion, type PipelineConfig } from "../config/pipelines.js";
import { dedupeModeOf } from "../core/admission.js";
import { classifyDbError } from "../db/errors.js";
import { rollback, type Pool } from "../db/pool.js";
import { copyBronzeLines } from "../db/sql/ingest/copyBronzeRows.js";
import { dedupeStatements } from "../db/sql/ingest/dedupeLanding.js";
import { analyzePipelineColumns } from "../db/sql/observe/plannerStatistics.js";
import { bronzeSeqHighWaterText, seqOf } from "../db/sql/ingest/bronzeSeqHighWater.js";
import { bronzeSourceIdsFrom, bronzeSourceIdsText, sourceIdFor } from "../db/sql/ingest/bronzeSourceIds.js";
import { landedSourcesFrom, readLandedSourcesText } from "../db/sql/ingest/readLandedSources.js";
import { recordGroupLanding } from "../db/sql/ingest/recordGroupLanding.js";
import { eventIdFound, probeEventIdsText } from "../db/sql/ingest/probeEventIds.js";
import { withAppendLockReading } from "./appendLock.js";
import { commitOutcome } from "./commitOutcome.js";
import { answerFromRecord, landedBefore, type LandResult } from "./landAnswer.js";

/** One request in a group: its classified lines and tallies, and how to answer it. */
export interface Member {
  source: string;
  /** The ingestion time its lines were classified with (epoch ms): its source records it (bronzeSourceIds.ts). */
  landingTimeMs: number;
  lines: string[];
  landed: number;
  accepted: number;
  byReason: Record<string, number>;
  /** SHA-256 (hex) of its records, one per line. */
  sha256: string;
  /** Its accepted rows' event ids, each once (`idsToProbe`); null when the pipeline dedupes nothing or one came twice. */
  acceptedIds: Iterable<string> | null;
  requestSha256: string | undefined;
  newSource: boolean;
  settled: boolean;
  resolve(r: LandResult): void;
  reject(e: unknown): void;
}

const totals = { groups: 0, requests: 0, rows: 0, deduped: 0 };

/**
 * Groups this process has committed so far, with the requests and rows they landed, and how many of those groups
 * ran the dedupe (the others' probe found none of their ids in bronze) — for the benchmark and diagnostics.
 */
export function groupCommitTotals(): { groups: number; requests: number; rows: number; deduped: number } {
  return { ...totals };
}

/** The member whose COPY line the server refused (`where`: "COPY bronze_events, line N"), when the error says. */
function memberOfCopyError(e: unknown, members: Member[]): Member | undefined {
  const where = (e as { where?: unknown }).where;
  const line = typeof where === "string" ? Number(/COPY bronze_events, line (\d+)/.exec(where)?.[1]) : NaN;
  if (!(line >= 1)) return undefined;
  let end = 0;
  for (const m of members) if (line <= (end += m.lines.length)) return m;
  return undefined;
}

/** An error in the group's transaction tied to one member. */
class MemberFailed extends Error {
  constructor(
    readonly member: Member,
    cause: unknown,
  ) {
    super((cause as Error)?.message ?? String(cause), { cause });
  }
}

/** True when `e` is the database refusing a statement (not the connection, the pool, a cancel or a conflict): it may come from one member's rows. */
function maybeOneMembersRows(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  if (typeof code !== "string" || code.length !== 5) return false;
  return !["unavailable", "busy", "query_canceled", "serialization", "lock_not_available"].includes(classifyDbError(e));
}

/** Lands `group`; every member is answered when this resolves (it never rejects). */
export async function landGroup(pool: Pool, pipeline: PipelineConfig, group: Member[]): Promise<void> {
  let rest = group;
  try {
    while (rest.length > 0) {
      let meanwhile: Member | undefined;
      try {
        meanwhile = await landOnce(pool, pipeline, rest);
      } catch (e) {
        if (e instanceof MemberFailed) {
          e.member.reject(e.cause);
          rest = rest.filter((m) => !m.settled);
          continue;
        }
        if (rest.length > 1 && maybeOneMembersRows(e)) {
          for (const m of rest) await landGroup(pool, pipeline, [m]);
          return;
        }
        throw e;
      }
      if (meanwhile !== undefined) {
        // Recorded by a writer that did not take the append lock: its record is the answer.
        const other = await landedBefore(pool, pipeline.name, meanwhile.source, meanwhile.requestSha256).catch(
          (e: unknown) => e,
        );
        if (other === undefined)
          meanwhile.reject(new Error(`${meanwhile.source}: recorded by another landing that then disappeared`));
        else if (other instanceof Error) meanwhile.reject(other);
        else meanwhile.resolve(other as LandResult);
      }
      rest = rest.filter((m) => !m.settled);
    }
  } catch (e) {
    for (const m of rest) m.reject(e);
  }
}

/**
 * The accepted event ids of every member of a group, to probe before its COPY (probeEventIds.ts), or null when the
 * probe cannot tell that the dedupe would change no row: a member's ids were not collected, or an id comes twice in
 * the group (in one member or in two). Members answered from their record later are probed too (a found id only
 * keeps the dedupe).
 */
function idsOfGroup(members: readonly Member[]): string[] | null {
  const all = new Set<string>();
  for (const m of members) {
    if (m.acceptedIds === null) return null;
    for (const id of m.acceptedIds) {
      if (all.has(id)) return null;
      all.add(id);
    }
  }
  return [...all];
}

const NOTHING = Symbol("nothing to land");

/**
 * One transaction for the unsettled `members`: answers those that landed
 * before (from their records), lands the others, and answers them after COMMIT.
 * @returns a member whose source was recorded meanwhile (the transaction was rolled back, nobody answered but the ones that landed before), else undefined
 * @throws MemberFailed (rolled back), or the database's error / CommitOutcomeUnknownError for the whole group
 */
async function landOnce(pool: Pool, pipeline: PipelineConfig, members: Member[]): Promise<Member | undefined> {
  let committing: { txid: string; backendPid: number | undefined; results: Map<Member, LandResult> } | undefined;
  let deduped = false;
  let outcome: Map<Member, LandResult> | { meanwhile: Member } | typeof NOTHING;
  try {
    // One round trip opens the transaction: BEGIN, the lock, bronze's seq high water (every row this group writes
    // gets a seq above it, every row of the pipeline before has one at most it), the sources' ids (made if new), the
    // records of the sources that carry a key, and the probe of the group's accepted ids.
    const keyed = members.filter((m) => !m.newSource);
    const dedupe = dedupeModeOf(pipeline.admission.dedupe);
    const probe = idsOfGroup(members);
    const reads = [
      bronzeSeqHighWaterText(),
      bronzeSourceIdsText(
        pipeline.name,
        members.map((m) => ({ name: m.source, landingTimeMs: m.landingTimeMs })),
      ),
      ...(keyed.length > 0
        ? [
            readLandedSourcesText(
              pipeline.name,
              keyed.map((m) => m.source),
            ),
          ]
        : []),
      ...(probe !== null && probe.length > 0 ? [probeEventIdsText(pipeline.name, probe)] : []),
    ].join("; ");
    outcome = await withAppendLockReading<Map<Member, LandResult> | { meanwhile: Member } | typeof NOTHING>(
      pool,
      pipeline.name,
      reads,
      async (client, answers) => {
        const [highWater, ids] = answers;
        const sources = keyed.length > 0 ? answers[2] : undefined;
        const [sourceIds, seqBefore] = [bronzeSourceIdsFrom(ids!.rows), seqOf(highWater!.rows)];
        // Under the lock: a landing of the same source elsewhere has committed or never will.
        if (keyed.length > 0) {
          const recorded = landedSourcesFrom(sources!.rows);
          for (const m of keyed) {
            const r = recorded.get(m.source);
            if (r === undefined) continue;
            try {
              m.resolve(answerFromRecord(pipeline.name, m.source, r, m.requestSha256));
            } catch (e) {
              m.reject(e);
            }
          }
        }
        const landing = members.filter((m) => !m.settled);
        if (landing.length === 0) return rollback(NOTHING);
        const parts = landing.map((m) => ({ m, sourceId: sourceIdFor(sourceIds, m.source, m.landingTimeMs) }));
        // A source recorded by a landing of it that committed first: answered as one recorded meanwhile.
        const first = parts.find((p) => p.sourceId === null);
        if (first !== undefined) return rollback({ meanwhile: first.m });
        try {
          await copyBronzeLines(
            client,
            parts.map((p) => ({ sourceId: p.sourceId!, lines: p.m.lines })),
          );
        } catch (e) {
          const m = memberOfCopyError(e, landing);
          throw m === undefined ? e : new MemberFailed(m, e);
        }

        // The dedupe and the records in one round trip: the records read the dedupe's outcome from bronze. The
        // dedupe is skipped when the probe found none of the group's accepted ids in bronze (none comes twice in it).
        const mayRepeat = probe === null || (probe.length > 0 && eventIdFound(answers[answers.length - 1]!.rows));
        const before =
          dedupe !== "off" && mayRepeat && landing.some((m) => m.accepted > 0) ? dedupeStatements(dedupe) : [];
        const { recorded, txid } = await recordGroupLanding(
          client,
          pipeline.name,
          policyVersion(pipeline),
          seqBefore,
          landing.map((m) => ({
            source: m.source,
            sha256: m.sha256,
            rows: m.landed,
            accepted: m.accepted,
            byReason: m.byReason,
            requestSha256: m.requestSha256 ?? null,
          })),
          before,
        );
        const meanwhile = landing.find((m) => !recorded.has(m.source));
        if (meanwhile !== undefined) return rollback({ meanwhile });
        // As for one landing (copyToBronze.ts): more rows than one micro-batch refresh bronze's statistics first.
        if (landing.reduce((n, m) => n + m.landed, 0) >= pipeline.trigger.maxRowsPerBatch)
          await analyzePipelineColumns(client);
        const results = new Map(
          landing.map((m) => {
            const r = recorded.get(m.source)!;
            return [
              m,
              {
                pipeline: pipeline.name,
                source: m.source,
                alreadyLanded: false,
                landed: r.rows,
                accepted: r.accepted,
                quarantined: r.quarantined,
                byReason: r.byReason,
                firstSeq: r.firstSeq,
                lastSeq: r.lastSeq,
              },
            ];
          }),
        );
        deduped = before.length > 0;
        committing = { txid, backendPid: (client as unknown as { processID?: number }).processID, results };
        return results;
      },
    );
  } catch (e) {
    if (committing === undefined) throw e;
    // COMMIT was sent and no answer came: find out on another connection.
    const { txid, backendPid, results } = committing;
    const first = [...results.keys()][0]!;
    const status = await commitOutcome(
      pool,
      txid,
      backendPid,
      results.size === 1 ? first.source : `${first.source} (and ${results.size - 1} sources landed with it)`,
    );
    if (status === "aborted") throw e;
    if (status === "unknown" && !(await landedBefore(pool, pipeline.name, first.source, undefined))) throw e;
    outcome = results;
  }
  if (outcome === NOTHING) return undefined;
  if (!(outcome instanceof Map)) return outcome.meanwhile;
  totals.groups++;
  if (deduped) totals.deduped++;
  for (const [m, r] of outcome) {
    totals.requests++;
    totals.rows += r.landed;
    m.resolve(r);
  }
  return undefined;
}
