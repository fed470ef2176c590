/**
 * A configuration fixed before anything was accepted is adopted, not refused (README "Policy
 * versions"): when the live results hold nothing a policy change would invalidate — no window
 * results, no windows awaiting correction, no row accepted under another policy — the policy
 * guard of a micro-batch or a correction rewrites the live version's policy in place and says
 * so; once they hold something, the change is refused as before. Each way in: the CLI (`ingest
 * --stream`, `status`), a micro-batch, a correction over REST, a calendar window's zone, and a
 * rebuild's event-id check.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { loadPipelines, type PipelineConfig } from "../../src/config/pipelines.js";
import { runCorrection } from "../../src/correction/correct.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { rebuild, RebuildRefusedError } from "../../src/lifecycle/rebuild.js";
import { checkPolicy, PolicyRefusedError, type PolicyAdoption } from "../../src/guards/index.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { startApi } from "../helpers/api.js";
import { startCli } from "../helpers/cli.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { windowSummary } from "../helpers/results.js";

const getDb = useTestDatabase();

/** A folder of its own with `files` written in it. */
function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-adopt-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

/** Sum of amount per 10-minute window over JSON lines, with `fields` (and `extra` settings) given. */
const orders = (name: string, fields: Record<string, string>, extra: Record<string, unknown> = {}): PipelineConfig =>
  pipeline({
    name,
    source: { format: "jsonl" },
    fields,
    timestamps: { format: "iso8601", timeZone: "UTC" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
    ...extra,
  });

const liveVersions = async (pool: Pool, name: string) =>
  (
    await pool.query(
      "SELECT version, state, policy_version FROM straggler.policy_versions WHERE pipeline = $1 ORDER BY version",
      [name],
    )
  ).rows;
const ledger = async (pool: Pool, name: string) =>
  (
    await pool.query(
      "SELECT status, reason, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 GROUP BY 1, 2 ORDER BY 1, 2",
      [name],
    )
  ).rows;

/** Lands `text` as file `name` of pipeline `p`. */
async function land(pool: Pool, p: PipelineConfig, name: string, text: string): Promise<void> {
  const dir = folder({ [name]: text });
  await landFile(pool, p, path.join(dir, name), name);
}

async function refused(run: Promise<unknown>): Promise<PolicyRefusedError> {
  const e = await run.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(PolicyRefusedError);
  return e as PolicyRefusedError;
}

describe("a policy change with nothing to invalidate is adopted", () => {
  it("CLI: a CSV whose header is refused, then `fields` fixed: `ingest --stream` lands it, adopts the policy (saying so) and streams; status says so first", async () => {
    const { pool, url } = await getDb();
    const dir = folder({ "orders.csv": "Event_Time,Amount\n2026-10-01T12:01:00Z,5\n2026-10-01T12:02:00Z,7\n" });
    const config = (fields: string) =>
      `pipelines:\n  - name: orders\n    source: { format: csv }\n    fields: { ${fields} }\n    timestamps: { format: iso8601, timeZone: UTC }\n` +
      "    window: { type: tumbling, size: 10 minutes }\n    watermark: { delay: 10 minutes }\n";
    writeFileSync(path.join(dir, "before.yaml"), config("eventTime: event_time, value: amount"));
    writeFileSync(path.join(dir, "after.yaml"), config("eventTime: Event_Time, value: Amount"));
    const file = path.join(dir, "orders.csv");
    const cli = (args: string[], yaml: string) =>
      startCli(args, { DATABASE_URL: url, STRAGGLER_PIPELINES: path.join(dir, yaml) }).done;

    const first = await cli(["ingest", "-p", "orders", file, "--stream"], "before.yaml");
    expect({ code: first.code, stdout: first.stdout }).toEqual({
      code: 1,
      stdout: "orders: 0 sources landed, 1 refused\norders: nothing new in bronze\n",
    });
    expect(first.stderr).toBe(
      `orders: ${file} refused: CSV header (line 1) does not name the column(s) "event_time" (fields.eventTime), "amount" (fields.value); it names: "Event_Time", "Amount"; they differ only in case: set source.csv.headerCase: insensitive\n`,
    );
    const [recorded] = await liveVersions(pool, "orders"); // the empty batch recorded the first policy
    expect([recorded.version, recorded.state]).toEqual([1, "live"]);

    const after = loadPipelines(path.join(dir, "after.yaml"))[0]!;
    const configured = (await checkPolicy(pool, after)).policyVersion;
    const changes = ["fields.eventTime: event_time → Event_Time", "fields.value: amount → Amount"];
    const adoption =
      "pipeline orders: the configured policy is adopted as the policy of its live results (version 1), which hold nothing it would invalidate " +
      `(no window results, no rows accepted under another policy): ${changes.join("; ")}`;
    expect(await checkPolicy(pool, after)).toEqual({
      state: "unrecorded",
      policyVersion: configured,
      live: { version: 1, policyVersion: recorded.policy_version },
      changes,
      message: adoption,
    });
    const status = await cli(["status", "-p", "orders"], "after.yaml");
    expect(status.stdout.split("\n").filter((l) => l.includes("policy:"))).toEqual([
      `  policy:                unrecorded: results version 1 (policy ${recorded.policy_version}) holds no window results and no rows accepted under another policy; ` +
        `the next batch adopts policy ${configured} (${changes.join("; ")})`,
    ]);

    const fixed = await cli(["ingest", "-p", "orders", file, "--stream"], "after.yaml");
    expect({ code: fixed.code, stderr: fixed.stderr }).toEqual({ code: 0, stderr: "" });
    const lines = fixed.stdout.split("\n");
    expect(lines.slice(0, 4)).toEqual([
      "orders: 1 source landed (2 rows: 2 accepted, 0 quarantined)",
      "orders: orders.csv: landed 2, accepted 2, quarantined 0",
      adoption,
      "orders: 1 micro-batch, 2 rows, watermark 2026-10-01T11:52:00.000Z, 0 (event, window) pairs dropped by watermark",
    ]);
    expect(lines[4]).toMatch(
      /^orders batch 0: 2 rows in \d+ ms \(\d+ rows\/s\), watermark 2026-10-01T11:52:00\.000Z, numRowsDroppedByWatermark 0, numRowsUpdated 1, finalized 0, numRowsTotal 1$/,
    );
    expect(lines.length).toBe(6);
    expect(await windowSummary(pool, "orders")).toEqual(["[12:00,12:10)=12 open"]);
    expect(await liveVersions(pool, "orders")).toEqual([{ version: 1, state: "live", policy_version: configured }]);
    expect((await checkPolicy(pool, after)).state).toBe("live");
  }, 300_000);

  it("a micro-batch: rows quarantined under the old policy stay quarantined, the change is adopted and reported once; accepted rows under the old policy refuse it", async () => {
    const { pool } = await getDb();
    const before = orders("fix-fields", { eventTime: "ts", value: "amount" });
    await land(
      pool,
      before,
      "1.json",
      '{"event_time":"2026-10-01T12:01:00Z","amount":5}\n{"event_time":"2026-10-01T12:02:00Z","amount":7}\n',
    );
    expect(await runBatch(pool, before, "once")).toMatchObject({ numInputRows: 0, numQuarantinedRows: 2 });
    expect(await windowSummary(pool, "fix-fields")).toEqual([]);
    const [old] = await liveVersions(pool, "fix-fields");

    const after = orders("fix-fields", { eventTime: "event_time", value: "amount" });
    const seen: PolicyAdoption[] = [];
    await land(pool, after, "2.json", '{"event_time":"2026-10-01T12:03:00Z","amount":11}\n');
    const batch = await runBatch(pool, after, "once", { onPolicyAdopted: (a) => seen.push(a) });
    expect(batch).toMatchObject({ batchId: 1, numInputRows: 1 });
    const configured = (await checkPolicy(pool, after)).policyVersion;
    expect(seen).toEqual([
      {
        pipeline: "fix-fields",
        version: 1,
        from: old.policy_version,
        to: configured,
        changes: ["fields.eventTime: ts → event_time"],
        message:
          "pipeline fix-fields: the configured policy is adopted as the policy of its live results (version 1), which hold nothing it would invalidate " +
          "(no window results, no rows accepted under another policy): fields.eventTime: ts → event_time",
      },
    ]);
    expect(await runBatch(pool, after, "once", { onPolicyAdopted: (a) => seen.push(a) })).toBeNull();
    expect(seen.length).toBe(1);
    expect(await ledger(pool, "fix-fields")).toEqual([
      { status: "accepted", reason: null, n: 1 },
      { status: "quarantined", reason: "NULL_TS", n: 2 },
    ]);
    expect(await windowSummary(pool, "fix-fields")).toEqual(["[12:00,12:10)=11 open"]);

    // Now the results hold a window: the next change is refused, nothing written.
    const again = orders(
      "fix-fields",
      { eventTime: "event_time", value: "amount" },
      { window: { type: "tumbling", size: "5 minutes" } },
    );
    const e = await refused(runBatch(pool, again, "once"));
    expect(e.changes.map((c) => c.text)).toEqual(["window.size: 10 minutes → 5 minutes"]);
    expect(await liveVersions(pool, "fix-fields")).toEqual([{ version: 1, state: "live", policy_version: configured }]);
  });

  it("rows accepted under the old policy but not streamed yet refuse the change (the next batch would stream them under the new one)", async () => {
    const { pool } = await getDb();
    const before = orders("unstreamed", { eventTime: "event_time", value: "amount" });
    expect(await runBatch(pool, before, "once")).toBeNull(); // records the policy, nothing to read
    await land(pool, before, "1.json", '{"event_time":"2026-10-01T12:01:00Z","amount":5}\n');
    const after = orders(
      "unstreamed",
      { eventTime: "event_time", value: "amount" },
      { watermark: { delay: "1 minute" } },
    );
    expect((await checkPolicy(pool, after)).state).toBe("refused");
    const e = await refused(runBatch(pool, after, "once"));
    expect(e.changes.map((c) => c.text)).toEqual(["watermark.delay: 10 minutes → 1 minute"]);
    expect(await windowSummary(pool, "unstreamed")).toEqual([]);
  });

  it("a calendar window's zone changed before anything was accepted is adopted; an unknown zone is still refused first", async () => {
    const { pool } = await getDb();
    const daily = (timeZone: string) =>
      orders(
        "daily",
        { eventTime: "event_time", value: "amount" },
        { window: { type: "tumbling", size: "1 day", timeZone } },
      );
    expect(await runBatch(pool, daily("America/New_York"), "once")).toBeNull();
    const unknown = await runBatch(pool, daily("US/Pacific-New"), "once").then(
      () => undefined,
      (e: Error) => e.name,
    );
    expect(unknown).toBe("TimeZoneRefusedError");
    const seen: string[][] = [];
    const berlin = daily("Europe/Berlin");
    await land(pool, berlin, "1.json", '{"event_time":"2026-10-01T22:30:00Z","amount":5}\n');
    await runBatch(pool, berlin, "once", { onPolicyAdopted: (a) => seen.push(a.changes) });
    expect(seen).toEqual([["window.timeZone: America/New_York → Europe/Berlin"]]);
    // The Berlin day of 2026-10-02 (CEST, UTC+2) holds 22:30 UTC on 2026-10-01.
    expect(
      (
        await pool.query(
          "SELECT window_start, window_end, value_sum FROM straggler.window_results WHERE pipeline = 'daily'",
        )
      ).rows,
    ).toEqual([{ window_start: "2026-10-01T22:00:00.000Z", window_end: "2026-10-02T22:00:00.000Z", value_sum: "5" }]);
  });

  it("REST: GET /pipelines says unrecorded with the changes; POST recompute adopts the policy (logged at warn) and runs, where it answered 409", async () => {
    const { pool } = await getDb();
    const before = orders("rest-fix", { eventTime: "ts", value: "amount" });
    expect(await runBatch(pool, before, "once")).toBeNull();
    const dir = folder({});
    const yaml = path.join(dir, "p.yaml");
    writeFileSync(
      yaml,
      "pipelines:\n  - name: rest-fix\n    source: { format: jsonl }\n    fields: { eventTime: event_time, value: amount }\n" +
        "    timestamps: { format: iso8601, timeZone: UTC }\n    window: { type: tumbling, size: 10 minutes }\n    watermark: { delay: 10 minutes }\n",
    );
    const records: { level: number; msg: string; changes?: string[] }[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split("\n")) if (l) records.push(JSON.parse(l));
        done();
      },
    });
    const api = await startApi({
      pool,
      pipelines: loadPipelines(yaml),
      log: pino({ level: "warn" }, sink),
      token: "t0ken",
    });
    try {
      const rows = (await (await fetch(`${api.base}/pipelines`)).json()) as {
        pipeline: string;
        policy: { state: string; changes: string[] };
      }[];
      expect(rows.map((r) => [r.pipeline, r.policy.state, r.policy.changes])).toEqual([
        ["rest-fix", "unrecorded", ["fields.eventTime: ts → event_time"]],
      ]);
      const recompute = await fetch(`${api.base}/pipelines/rest-fix/recompute`, {
        method: "POST",
        headers: { authorization: "Bearer t0ken" },
      });
      const answer = (await recompute.json()) as { status: string; windowsChanged: number };
      expect([recompute.status, answer.status, answer.windowsChanged]).toEqual([200, "succeeded", 0]);
    } finally {
      await api.close();
    }
    expect(records.map((r) => [r.level, r.msg, r.changes])).toEqual([
      [
        40,
        "pipeline rest-fix: the configured policy is adopted as the policy of its live results (version 1), which hold nothing it would invalidate " +
          "(no window results, no rows accepted under another policy): fields.eventTime: ts → event_time",
        ["fields.eventTime: ts → event_time"],
      ],
    ]);
    expect((await checkPolicy(pool, loadPipelines(yaml)[0]!)).state).toBe("live");
    // A correction on a pipeline with results and a changed policy is still refused, with no run recorded.
    const live = loadPipelines(yaml)[0]!;
    await land(pool, live, "1.json", '{"event_time":"2026-10-01T12:01:00Z","amount":5}\n');
    await runBatch(pool, live, "once");
    const changed = orders(
      "rest-fix",
      { eventTime: "event_time", value: "amount" },
      { watermark: { delay: "1 minute" } },
    );
    await refused(runCorrection(pool, changed, { trigger: "cli" }));
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.correction_runs WHERE pipeline = 'rest-fix'")).rows[0]
        .n,
    ).toBe(1);
  });

  it("rebuild: a changed fields.eventId is refused once rows were accepted, and not before", async () => {
    const { pool } = await getDb();
    const before = orders("rebuild-id", { eventTime: "event_time", value: "amount", eventId: "id" });
    expect(await runBatch(pool, before, "once")).toBeNull();
    const after = orders("rebuild-id", { eventTime: "event_time", value: "amount", eventId: "order_id" });
    const report = await rebuild(pool, after);
    expect([report.liveVersion, report.windows, report.reconcile.ok]).toEqual([1, 0, true]);

    const other = orders("rebuild-id2", { eventTime: "event_time", value: "amount", eventId: "id" });
    await land(pool, other, "1.json", '{"id":"a","event_time":"2026-10-01T12:01:00Z","amount":5}\n');
    await runBatch(pool, other, "once");
    const e = await rebuild(
      pool,
      orders("rebuild-id2", { eventTime: "event_time", value: "amount", eventId: "order_id" }),
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(RebuildRefusedError);
    expect((e as Error).message).toBe(
      "fields.eventId: id → order_id: event ids are part of the ledger and are not rebuilt; put fields.eventId back",
    );
  });
});
