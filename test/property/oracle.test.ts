/**
 * The pure core as the oracle of the SQL fast path (issue 12): random events,
 * windows and micro-batch cuts run through the real landing, stream and
 * correction on PostgreSQL, and after every step each window result, late
 * (event, window) pair, window awaiting correction and batch watermark must
 * equal the reference built from `src/core` (`reference.ts`).
 *
 * CI: a fixed seed and a modest number of runs. By hand, a long run:
 *   STRAGGLER_PROPERTY_RUNS=500 npx vitest run test/property
 * prints its (random) seed; `STRAGGLER_PROPERTY_SEED=<seed>` replays it.
 * A failure prints the shrunk scenario (a pipeline's window and delay, and
 * its input in arrival order) and the first step where the two disagree.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { useTestDatabase } from "../helpers/db.js";
import { expectedStep, realStep, stepsOf } from "./realRun.js";
import { Reference } from "./reference.js";
import { pipelineFor, scenarios, type Scenario } from "./scenario.js";

const getDb = useTestDatabase();

const RUNS_SET = process.env.STRAGGLER_PROPERTY_RUNS !== undefined;
const RUNS = Number(process.env.STRAGGLER_PROPERTY_RUNS ?? 40);
const SEED =
  process.env.STRAGGLER_PROPERTY_SEED !== undefined
    ? Number(process.env.STRAGGLER_PROPERTY_SEED)
    : RUNS_SET
      ? Date.now() % 2 ** 31
      : 20261130;

/** Searching and shrinking stop after this long (ms); a counterexample found by then is reported as shrunk so far. */
const TIME_LIMIT_MS = 60_000 + RUNS * 2_000;

let pipelines = 0;

/** Runs `s` for real and by the reference, step by step; throws at the first step where they differ. */
async function agree(pool: Pool, s: Scenario): Promise<void> {
  const pipeline = pipelineFor(`oracle-${++pipelines}`, s);
  const ref = new Reference(pipeline);
  for (const step of stepsOf(s)) {
    const expected = expectedStep(ref, s, step);
    expect(await realStep(pool, pipeline, s, step), expected.step).toEqual(expected);
  }
}

describe("property: stream and correction against the pure core", () => {
  it(
    `agree on every window, late pair and watermark (seed ${SEED}, ${RUNS} runs)`,
    { timeout: TIME_LIMIT_MS + 30_000 },
    async () => {
      const { pool } = await getDb();
      console.log(
        `[property] seed ${SEED}, ${RUNS} runs (replay: STRAGGLER_PROPERTY_SEED=${SEED} STRAGGLER_PROPERTY_RUNS=${RUNS} npx vitest run test/property)`,
      );
      await fc.assert(
        fc.asyncProperty(scenarios, (s) => agree(pool, s)),
        { seed: SEED, numRuns: RUNS, plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_MS)] },
      );
    },
  );
});
