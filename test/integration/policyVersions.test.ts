/**
 * Policy versions (README "Policy versions"): the first run records the
 * pipeline's policy; a configured policy that differs from the live results'
 * is refused before any micro-batch (and correction), naming each changed
 * setting; settings that do not change results pass.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { createLogger } from "../../src/log.js";
import { checkPolicy, PolicyRefusedError } from "../../src/guards/index.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi } from "../helpers/api.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { futureOutlier, pipeline, seedDir } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

/** The seed's control run as pipeline `name`: the three files, a micro-batch after each. */
async function controlRun(pool: Pool, p: PipelineConfig): Promise<void> {
  for (const file of ["batch1.csv", "batch2.csv", "batch3.csv"]) {
    await landFile(pool, p, path.join(p.source.landingDir!, file), file);
    await runBatch(pool, p, "once");
  }
}

/** The future-outlier pipeline under `name`, with `extra` settings merged over its raw config. */
function outlier(name: string, extra: Record<string, unknown> = {}): PipelineConfig {
  return pipeline({
    name,
    source: { landingDir: seedDir("future-outlier"), format: "csv" },
    fields: { eventId: "RawID", eventTime: "EventTimestampRaw", ingestionTime: "IngestionTime", value: "Payload" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "5 minutes" },
    admission: { maxFutureSkew: null },
    ...extra,
  });
}

async function refusal(run: Promise<unknown>): Promise<PolicyRefusedError> {
  const e = await run.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(PolicyRefusedError);
  return e as PolicyRefusedError;
}

describe("policy versions", () => {
  it("the seed's control run, then the 1-hour guard added: refused, naming admission.maxFutureSkew: null → 1 hour; results untouched", async () => {
    const { pool } = await getDb();
    const control = futureOutlier(false, "policy-guard");
    await controlRun(pool, control);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
    const recorded = await pool.query(
      "SELECT version, state, policy_version, policy FROM straggler.results_versions WHERE pipeline = $1",
      [control.name],
    );
    expect(recorded.rows).toEqual([
      {
        version: 1,
        state: "live",
        policy_version: (await checkPolicy(pool, control)).policyVersion,
        policy: expect.objectContaining({ admission: expect.objectContaining({ maxFutureSkew: null }) }),
      },
    ]);
    const live = await pool.query(
      "SELECT DISTINCT results_version, policy_version FROM straggler.window_results WHERE pipeline = $1",
      [control.name],
    );
    expect(live.rows).toEqual([{ results_version: 1, policy_version: recorded.rows[0].policy_version }]);

    const guarded = futureOutlier(true, "policy-guard");
    const e = await refusal(runBatch(pool, guarded, "once"));
    expect(e.changes.map((c) => c.text)).toEqual(["admission.maxFutureSkew: null → 1 hour"]);
    expect(e.message).toBe(
      `pipeline policy-guard is not streamed: its configured policy differs from the policy of its live results (version 1, policy ${recorded.rows[0].policy_version}) in 1 setting:\n` +
        "  admission.maxFutureSkew: null → 1 hour\n" +
        "Either put the setting back in the pipelines file, or rebuild the results under the new policy with `straggler rebuild -p policy-guard` and serve them with `straggler cutover`.",
    );
    // A correction under the changed policy is refused too, with the same message: a known state, so no run is recorded, and nothing changes.
    const refusedRun = await refusal(runCorrection(pool, guarded, { trigger: "cli" }));
    expect(refusedRun.message).toBe(e.message);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.correction_runs WHERE pipeline = $1", [control.name]))
        .rows[0].n,
    ).toBe(0);
    expect(await windowSummary(pool, control.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
    expect(await checkPolicy(pool, guarded)).toEqual({
      state: "refused",
      policyVersion: expect.not.stringMatching(recorded.rows[0].policy_version),
      live: { version: 1, policyVersion: recorded.rows[0].policy_version },
      changes: ["admission.maxFutureSkew: null → 1 hour"],
      message: e.message,
    });
    // The original config still streams.
    expect(await runBatch(pool, control, "once")).toBeNull();
  });

  it("a changed trigger interval (or batch size) is not a policy change: the pipeline streams", async () => {
    const { pool } = await getDb();
    const before = outlier("policy-trigger");
    await landFile(pool, before, path.join(seedDir("future-outlier"), "batch1.csv"), "batch1.csv");
    expect((await runBatch(pool, before, "once"))!.numInputRows).toBe(2);
    const after = outlier("policy-trigger", {
      trigger: { interval: "1 minute", maxRowsPerBatch: 10 },
      correction: { schedule: "*/5 * * * *" },
    });
    await landFile(pool, after, path.join(seedDir("future-outlier"), "batch2.csv"), "batch2.csv");
    expect((await runBatch(pool, after, "once"))!.numInputRows).toBe(2);
    expect((await checkPolicy(pool, after)).state).toBe("live");
    expect(await windowSummary(pool, after.name, "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
  });

  it("a changed window size is refused, naming window.size old → new", async () => {
    const { pool } = await getDb();
    const before = outlier("policy-window");
    await landFile(pool, before, path.join(seedDir("future-outlier"), "batch1.csv"), "batch1.csv");
    await runBatch(pool, before, "once");
    const after = outlier("policy-window", {
      window: { type: "sliding", size: "20 minutes", slide: "10 minutes" },
      watermark: { delay: "5 minutes" },
    });
    const e = await refusal(runBatch(pool, after, "once"));
    expect(e.changes.map((c) => c.text)).toEqual([
      "window.size: 10 minutes → 20 minutes",
      "window.slide: (not set) → 10 minutes",
      "window.type: tumbling → sliding",
    ]);
    const sizeOnly = await refusal(
      runBatch(pool, outlier("policy-window", { window: { type: "tumbling", size: "1 hour" } }), "once"),
    );
    expect(sizeOnly.changes.map((c) => c.text)).toEqual(["window.size: 10 minutes → 1 hour"]);
    // The same settings written differently are the same policy.
    expect(
      (
        await checkPolicy(
          pool,
          outlier("policy-window", { window: { type: "tumbling", size: "600 seconds", offset: "0 seconds" } }),
        )
      ).state,
    ).toBe("live");
    expect(await windowSummary(pool, before.name, "count")).toEqual(["[12:00,12:10)=2 open"]);
  });

  it("CLI: a restart with the same config streams; a changed policy makes `stream` and `correct` exit 1 naming the setting, `status` and GET /pipelines say refused, POST recompute answers 409; no failed run", async () => {
    const { url, pool } = await getDb();
    const dir = mkdtempSync(path.join(tmpdir(), "straggler-policy-"));
    const config = path.join(dir, "pipelines.yaml");
    const write = (skew: string, interval: string) =>
      writeFileSync(
        config,
        `pipelines:
  - name: policy-cli
    source: { landingDir: ${JSON.stringify(seedDir("future-outlier"))}, format: csv }
    fields: { eventId: RawID, eventTime: EventTimestampRaw, ingestionTime: IngestionTime, value: Payload }
    window: { type: tumbling, size: 10 minutes }
    watermark: { delay: 5 minutes }
    admission: { maxFutureSkew: ${skew} }
    trigger: { interval: ${interval} }
`,
      );
    const cli = (...args: string[]) => startCli(["-c", config, ...args], { DATABASE_URL: url }).done;
    const file = (f: string) => path.join(seedDir("future-outlier"), f);
    write("null", "5 seconds");
    expect((await cli("ingest", "-p", "policy-cli", file("batch1.csv"))).code).toBe(0);
    const first = await cli("stream", "-p", "policy-cli");
    expect([first.code, first.stdout]).toEqual([
      0,
      expect.stringMatching(/^policy-cli: 1 micro-batch, 2 rows, .*\npolicy-cli batch 0: 2 rows/),
    ]);
    // Restart with the same config (and another trigger interval): it streams.
    write("null", "1 second");
    expect((await cli("ingest", "-p", "policy-cli", file("batch2.csv"))).code).toBe(0);
    const second = await cli("stream", "-p", "policy-cli");
    expect([second.code, second.stdout]).toEqual([
      0,
      expect.stringMatching(/^policy-cli: 1 micro-batch, 2 rows, .*\npolicy-cli batch 1: 2 rows/),
    ]);

    write("1 hour", "1 second");
    const refused = await cli("stream", "-p", "policy-cli");
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toContain(
      "\n  admission.maxFutureSkew: null → 1 hour\nEither put the setting back in the pipelines file, or rebuild the results under the new policy with `straggler rebuild -p policy-cli` and serve them with `straggler cutover`.\n",
    );
    const correct = await cli("correct", "-p", "policy-cli");
    expect([correct.code, correct.stdout]).toEqual([1, ""]);
    expect(correct.stderr).toContain(
      "pipeline policy-cli is not streamed: its configured policy differs from the policy of its live results (version 1, policy ",
    );
    expect(correct.stderr).toContain("\n  admission.maxFutureSkew: null → 1 hour\nEither put the setting back");
    const status = await cli("status", "-p", "policy-cli", "--json");
    expect(JSON.parse(status.stdout)[0].policy).toMatchObject({
      state: "refused",
      live: { version: 1 },
      changes: ["admission.maxFutureSkew: null → 1 hour"],
    });

    const { loadPipelines } = await import("../../src/config/pipelines.js");
    const api = await startApi({ pool, pipelines: loadPipelines(config), log: createLogger("silent"), token: "t0ken" });
    try {
      const rows = (await (await fetch(`${api.base}/pipelines`)).json()) as {
        pipeline: string;
        policy: { state: string; changes: string[] };
      }[];
      expect(rows.map((r) => [r.pipeline, r.policy.state, r.policy.changes])).toEqual([
        ["policy-cli", "refused", ["admission.maxFutureSkew: null → 1 hour"]],
      ]);
      const recompute = await fetch(`${api.base}/pipelines/policy-cli/recompute`, {
        method: "POST",
        headers: { authorization: "Bearer t0ken" },
      });
      const answer = (await recompute.json()) as { error: string; message: string };
      expect([recompute.status, answer.error]).toEqual([409, "policy_refused"]);
      expect(answer.message).toMatch(
        /^pipeline policy-cli is not streamed: .*\n  admission\.maxFutureSkew: null → 1 hour\nEither put the setting back in the pipelines file, or rebuild the results under the new policy with `straggler rebuild -p policy-cli` and serve them with `straggler cutover`\.$/,
      );
      expect(
        (await pool.query("SELECT count(*)::int AS n FROM straggler.correction_runs WHERE pipeline = 'policy-cli'"))
          .rows[0].n,
      ).toBe(0);
    } finally {
      await api.close();
    }
    expect(await windowSummary(pool, "policy-cli", "count")).toEqual(["[12:00,12:10)=3 final", "[14:00,14:10)=1 open"]);
  }, 180_000); // several CLI processes, each starting and migrating
});
