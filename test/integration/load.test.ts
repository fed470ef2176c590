/**
 * Load: sustained HTTP ingest from a local load generator (autocannon) while
 * the stream runs and corrections run concurrently. CI mode: 10 s; long mode
 * by hand: STRAGGLER_LOAD_SECONDS=60. Prints the events/s held and the p99
 * request latency; asserts that every acknowledged event is in bronze,
 * counted, streamed, and that reconcile is clean.
 */
import autocannon from "autocannon";
import { describe, expect, it } from "vitest";
import { loadEnv } from "../../src/config/env.js";
import { runCorrection, type CorrectionSummary } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { createLogger } from "../../src/log.js";
import { startService } from "../../src/service.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const SECONDS = Number(process.env.STRAGGLER_LOAD_SECONDS ?? 10);
const EVENTS_PER_REQUEST = 50;
const TOKEN = "load-token-0123456789abcdef";

describe("load", () => {
  it(`holds sustained HTTP ingest for ${SECONDS} s while corrections run; every acknowledged event is counted`, async () => {
    const { pool, url } = await getDb();
    const p = pipeline({
      name: "load",
      source: { landingDir: "unused-load-landing", format: "jsonl" },
      fields: { eventTime: "t", groupKey: ["k"], value: "v" }, // made-up ids: every request's events are distinct
      window: { type: "tumbling", size: "1 minute" },
      watermark: { delay: "10 seconds" },
      trigger: { interval: "1 second" },
    });
    const env = { ...loadEnv({}), PORT: 0, STRAGGLER_API_TOKEN: TOKEN };
    const service = await startService(env, { pool, url, kind: "external", close: async () => undefined }, [p], createLogger("silent"));
    let acknowledged = 0;
    const sources: string[] = [];
    let counter = 0;
    const corrections: CorrectionSummary[] = [];
    let loading = true;
    const corrector = (async () => {
      while (loading) {
        corrections.push(await runCorrection(pool, p, { trigger: "api" }));
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const result = await autocannon({
      url: `http://127.0.0.1:${service.port}`,
      connections: 8,
      duration: SECONDS,
      requests: [
        {
          method: "POST",
          path: "/pipelines/load/events",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-ndjson" },
          setupRequest: (req) => {
            // Event times trail real time by 0–40 s: some events land behind the watermark.
            const now = Date.now();
            const lines = Array.from({ length: EVENTS_PER_REQUEST }, (_, i) =>
              `{"t":"${new Date(now - ((counter * 7 + i * 13) % 40_000)).toISOString()}","k":"k${(counter + i) % 20}","v":${(counter % 1000) / 100 + i}}`,
            );
            counter++;
            return { ...req, body: lines.join("\n") };
          },
          onResponse: (status, body) => {
            if (status !== 201) return;
            const r = JSON.parse(body) as { landed: number; source: string };
            acknowledged += r.landed;
            sources.push(r.source);
          },
        },
      ],
    });
    loading = false;
    await corrector;
    const eventsPerSecond = (acknowledged / SECONDS).toFixed(0);
    console.log(
      `[load] ${SECONDS} s, 8 connections: ${result.requests.total} requests, ${acknowledged} events acknowledged = ${eventsPerSecond} events/s; ` +
        `latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms; non-2xx ${result.non2xx}, errors ${result.errors}; ${corrections.length} corrections ran meanwhile`,
    );
    expect([result.non2xx, result.errors, result.timeouts]).toEqual([0, 0, 0]);
    expect(acknowledged).toBe(result["2xx"] * EVENTS_PER_REQUEST);
    expect(corrections.filter((c) => c.status !== "succeeded")).toEqual([]);

    // Every acknowledged event is in bronze once, counted, and streamed.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await pool.query(
        "SELECT (SELECT count(*)::int FROM straggler.bronze_events WHERE pipeline = 'load' AND seq > c.last_offset) AS backlog FROM straggler.checkpoints c WHERE pipeline = 'load'",
      );
      if (rows[0]?.backlog === 0) break;
      if (Date.now() > deadline) throw new Error("the stream did not catch up within 60 s");
      await new Promise((r) => setTimeout(r, 100));
    }
    await service.stop();
    // Each acknowledged request is in bronze with all its events. (Requests still in flight when the
    // generator stopped may have landed too, unacknowledged: they count in the ledger, not here.)
    const acked = await pool.query("SELECT count(*)::int AS n, coalesce(sum(rows), 0)::int AS rows FROM straggler.landed_sources WHERE pipeline = 'load' AND source = ANY($1)", [sources]);
    expect(acked.rows[0]).toEqual({ n: sources.length, rows: acknowledged });
    const ledger = (await pool.query("SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = 'load'")).rows[0];
    const bySource = (await pool.query("SELECT coalesce(sum(rows), 0)::int AS n FROM straggler.landed_sources WHERE pipeline = 'load'")).rows[0].n;
    expect(ledger).toEqual({ landed: bySource, accepted: bySource, quarantined: 0 });
    expect(bySource - acknowledged).toBeLessThanOrEqual(8 * EVENTS_PER_REQUEST); // at most one request in flight per connection
    const counted = (await pool.query("SELECT coalesce(sum(num_input_rows), 0)::int AS n FROM straggler.stream_progress WHERE pipeline = 'load'")).rows[0].n;
    expect(counted).toBe(bySource);
    await runCorrection(pool, p, { trigger: "cli" });
    const report = await reconcile(pool, p);
    expect([report.ok, report.mismatches.length, report.ledger.balanced]).toEqual([true, 0, true]);
  }, 120_000 + SECONDS * 1000);
});
