/**
 * Runs a scenario through the real system on PostgreSQL, through its public
 * entry points: `landStream` (JSONL, as `straggler ingest -` lands it),
 * `runUntilCaughtUp` over `runBatch` (as the service's loop does), and
 * `runCorrection`. After every step it reads what a user can see: the
 * results, the late (event, window) pairs and the windows awaiting correction.
 */
import { Readable } from "node:stream";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import type { Pool } from "../../src/db/pool.js";
import { landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../../src/stream/streamLoop.js";
import {
  PROGRESS_FIELDS,
  Reference,
  rowsOf,
  sortLatePairs,
  sortWindows,
  type Correction,
  type LatePair,
  type LateWindow,
  type Progress,
  type WindowResult,
} from "./reference.js";
import { eventId, type Scenario } from "./scenario.js";

const pick = <T, K extends keyof T>(o: T, keys: readonly K[]) =>
  Object.fromEntries(keys.map((k) => [k, o[k]])) as Pick<T, K>;

/** What one step showed: a landing's batches or a correction, then the read model. */
export interface Observation {
  step: string;
  batches?: Progress[];
  correction?: Correction;
  windows: WindowResult[];
  latePairs: LatePair[];
  awaitingCorrection: LateWindow[];
}

/** The steps of a scenario: each landing, and a correction after it when asked and after the last one. */
export function stepsOf(s: Scenario): ({ kind: "land"; landing: number; firstSeq: number } | { kind: "correct" })[] {
  const steps: ReturnType<typeof stepsOf> = [];
  let firstSeq = 0;
  s.landings.forEach((l, landing) => {
    steps.push({ kind: "land", landing, firstSeq });
    firstSeq += l.events.length;
    if (l.correctAfter || landing === s.landings.length - 1) steps.push({ kind: "correct" });
  });
  return steps;
}

/** The step's observation by the pure reference (mutates `ref`). */
export function expectedStep(ref: Reference, s: Scenario, step: ReturnType<typeof stepsOf>[number]): Observation {
  const readModel = () => ({
    windows: ref.windows(),
    latePairs: ref.latePairs(),
    awaitingCorrection: ref.awaitingCorrection(),
  });
  if (step.kind === "correct") return { step: "correction", correction: ref.correct(), ...readModel() };
  const rows = rowsOf(s.landings[step.landing]!.events, step.firstSeq, eventId);
  const batches: Progress[] = [];
  // The stream cuts bronze into batches of at most maxRowsPerBatch rows, quarantined ones included.
  for (let i = 0; i < rows.length; i += s.maxRowsPerBatch)
    batches.push(ref.batch(rows.slice(i, i + s.maxRowsPerBatch)));
  return { step: `landing ${step.landing + 1}`, batches, ...readModel() };
}

const jsonl = (s: Scenario, landing: number, firstSeq: number) =>
  Readable.from([
    s.landings[landing]!.events.map((e, i) =>
      JSON.stringify({ id: eventId(firstSeq + i), t: e.t, k: e.k, v: e.v }),
    ).join("\n") + "\n",
  ]);

/** The step run for real, and its observation. */
export async function realStep(
  pool: Pool,
  pipeline: PipelineConfig,
  s: Scenario,
  step: ReturnType<typeof stepsOf>[number],
): Promise<Observation> {
  let head: Pick<Observation, "step" | "batches" | "correction">;
  if (step.kind === "correct") {
    const run = await runCorrection(pool, pipeline, { trigger: "cli" });
    if (run.status !== "succeeded") throw new Error(`correction ${run.status}: ${run.error}`);
    const { windowsExamined, windowsChanged, eventsRecovered, changes } = run;
    head = { step: "correction", correction: { windowsExamined, windowsChanged, eventsRecovered, changes } };
  } else {
    await landStream(pool, pipeline, jsonl(s, step.landing, step.firstSeq), "property");
    const progress = await runUntilCaughtUp((trigger) => runBatch(pool, pipeline, trigger), "once");
    head = {
      step: `landing ${step.landing + 1}`,
      batches: progress.map((p) => ({ ...pick(p, PROGRESS_FIELDS), watermark: p.eventTime.watermark })),
    };
  }
  return { ...head, ...(await readModel(pool, pipeline.name)) };
}

async function readModel(
  pool: Pool,
  pipeline: string,
): Promise<Pick<Observation, "windows" | "latePairs" | "awaitingCorrection">> {
  const windows = await pool.query(
    `SELECT group_key AS key, window_start AS start, window_end AS "end", event_count AS count, value_sum AS sum, value_min AS min, value_max AS max, status, revision
       FROM straggler.window_results WHERE pipeline = $1`,
    [pipeline],
  );
  const late = await pool.query(
    `SELECT b.event_id AS id, straggler.key_out(l.group_key) AS key, l.window_start AS start, l.window_end AS "end", l.batch_id AS "batchId"
       FROM straggler.late_events l JOIN straggler.bronze_events b ON b.seq = l.seq WHERE l.pipeline = $1`,
    [pipeline],
  );
  const awaiting = await pool.query(
    `SELECT group_key AS key, window_start AS start, window_end AS "end", dropped_rows AS "droppedRows", first_batch_id AS "firstBatchId", last_batch_id AS "lastBatchId"
       FROM straggler.windows_awaiting_correction WHERE pipeline = $1`,
    [pipeline],
  );
  return {
    windows: sortWindows(windows.rows),
    latePairs: sortLatePairs(late.rows),
    awaitingCorrection: sortWindows(awaiting.rows),
  };
}
