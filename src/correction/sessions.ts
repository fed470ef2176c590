/**
 * The correction job for session windows (docs/DESIGN.md "Session windows"),
 * in the run's transaction under the results lock (src/correction/correct.ts):
 *
 *   collectSessionSpans (the late events awaiting correction, and on request
 *   the final sessions and closed events of a range, grown until nothing
 *   outside touches them) → recomputeSessions (batch sessionization of the
 *   accepted bronze rows up to the snapshot inside each span) →
 *   replaceSessions (audit before/after, retract the sessions that are gone,
 *   upsert the new ones, clear the late marks up to the snapshot).
 *
 * A late event that bridges two final sessions merges them into one; a
 * stored session bronze says is two is split. A merged session that reaches
 * past the watermark (it joins an open one) is written open: the stream goes
 * on extending it. Windows whose recompute fails are not isolated here: the
 * run fails and is recorded as failed (README "Session windows").
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { PoolClient } from "../db/pool.js";
import { recomputeSessions, replaceSessions } from "../db/sql/correction/sessionRecompute.js";
import { collectSessionSpans } from "../db/sql/stream/sessionSpans.js";
import type { WindowChange } from "../db/sql/correction/writeAudit.js";
import type { RunSnapshot } from "./isolateTargets.js";
import { dropArchivedSpans } from "../guards/index.js";

/** What a session correction did, as the run's summary counts it (`windowsExamined`: spans examined). */
export interface SessionCorrection {
  windowsExamined: number;
  windowsChanged: number;
  windowsFailed: number;
  eventsRecovered: number;
  changes: WindowChange[];
  /** Spans archived rows could be in: left as they are (present only when some were). */
  windowsPastHorizon?: number;
}

/**
 * Corrects the sessions of `pipeline` (gap `gapMs`) as run `run`.
 * @param range also recompute the final sessions overlapping `[from, to)` (ISO instants)
 * @param keys only these stored group keys; null: all
 * @throws the database's error; the run's transaction is rolled back
 */
export async function correctSessions(
  client: PoolClient,
  pipeline: PipelineConfig,
  gapMs: number,
  run: RunSnapshot,
  request: { range: { from: string; to: string } | null; keys: string[] | null },
): Promise<SessionCorrection> {
  const spans = await collectSessionSpans(client, pipeline.name, {
    snapshot: run.snapshot,
    watermark: run.watermark,
    gapMs,
    ...request,
  });
  // Spans archived rows could be in stay as they are, awaiting correction (src/guards/horizon.ts).
  const windowsPastHorizon = await dropArchivedSpans(client, pipeline.name);
  const windowsExamined = spans - windowsPastHorizon;
  await recomputeSessions(client, pipeline.name, run.snapshot, gapMs);
  const changes = await replaceSessions(client, pipeline.name, run, gapMs, pipeline.feed.enabled);
  const eventsRecovered = changes.reduce((n, change) => n + change.lateEventCount, 0);
  return {
    windowsExamined,
    windowsChanged: changes.length,
    windowsFailed: 0,
    eventsRecovered,
    changes,
    ...(windowsPastHorizon > 0 ? { windowsPastHorizon } : {}),
  };
}
