/**
 * Load: sustained HTTP ingest from a local load generator (autocannon) while
 * the stream runs and corrections run concurrently. CI mode: 10 s; long mode
 * by hand: STRAGGLER_LOAD_SECONDS=60. Prints the events/s held and the p99
 * request latency; asserts that every acknowledged event is in bronze,
 * counted, streamed, and that reconcile is clean.
 *
 * Then the same load plus one large landing-folder file in the same
 * pipeline (CI: 200,000 rows; by hand: STRAGGLER_LOAD_BIG_ROWS=1000000
 * STRAGGLER_LOAD_SECONDS=40): prints the latency of `/health` and of reads of
 * another pipeline, probed every 20 ms while it lands; asserts that every
 * probe and every post was answered 2xx and that everything landed once.
 */
import { createWriteStream, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { describe, expect, it } from "vitest";
import { loadEnv } from "../../src/config/env.js";
import { runCorrection, type CorrectionSummary } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { createLogger } from "../../src/log.js";
import { startService } from "../../src/service.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();
const SECONDS = Number(process.env.STRAGGLER_LOAD_SECONDS ?? 10);
const BIG_ROWS = Number(process.env.STRAGGLER_LOAD_BIG_ROWS ?? 200_000);
const EVENTS_PER_REQUEST = 50;
const TOKEN = "load-token-0123456789abcdef";

describe("load", () => {
  it(
    `holds sustained HTTP ingest for ${SECONDS} s while corrections run; every acknowledged event is counted`,
    async () => {
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
      const service = await startService(
        env,
        { pool, url, kind: "external", close: async () => undefined },
        [p],
        createLogger("silent"),
      );
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
              const lines = Array.from(
                { length: EVENTS_PER_REQUEST },
                (_, i) =>
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

      // Stopping waits for the landings still queued (their clients are gone); then the stream
      // catches up on everything that landed, acknowledged or not.
      await service.stop();
      while ((await runBatch(pool, p, "once")) !== null);
      // Each acknowledged request is in bronze with all its events. (Requests still in flight when the
      // generator stopped may have landed too, unacknowledged: they count in the ledger, not here.)
      const acked = await pool.query(
        "SELECT count(*)::int AS n, coalesce(sum(rows), 0)::int AS rows FROM straggler.landed_sources WHERE pipeline = 'load' AND source = ANY($1)",
        [sources],
      );
      expect(acked.rows[0]).toEqual({ n: sources.length, rows: acknowledged });
      const ledger = (
        await pool.query(
          "SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = 'load'",
        )
      ).rows[0];
      const bySource = (
        await pool.query(
          "SELECT coalesce(sum(rows), 0)::int AS n FROM straggler.landed_sources WHERE pipeline = 'load'",
        )
      ).rows[0].n;
      expect(ledger).toEqual({ landed: bySource, accepted: bySource, quarantined: 0 });
      expect(bySource - acknowledged).toBeLessThanOrEqual(8 * EVENTS_PER_REQUEST); // at most one request in flight per connection
      const counted = (
        await pool.query(
          "SELECT coalesce(sum(num_input_rows), 0)::int AS n FROM straggler.stream_progress WHERE pipeline = 'load'",
        )
      ).rows[0].n;
      expect(counted).toBe(bySource);
      await runCorrection(pool, p, { trigger: "cli" });
      const report = await reconcile(pool, p);
      expect([report.ok, report.mismatches.length, report.ledger.balanced]).toEqual([true, 0, true]);
    },
    120_000 + SECONDS * 1000,
  );

  it(
    `keeps /health and reads of another pipeline answering while ${BIG_ROWS} rows land in the loaded pipeline`,
    async () => {
      const { pool, url } = await getDb();
      const dir = mkdtempSync(path.join(tmpdir(), "straggler-load-"));
      const fields = { eventTime: "t", groupKey: ["k"], value: "v" };
      const busy = pipeline({
        name: "busy",
        source: { landingDir: path.join(dir, "busy"), format: "jsonl" },
        fields,
        window: { type: "tumbling", size: "1 minute" },
        watermark: { delay: "10 seconds" },
        trigger: { interval: "1 second" },
      });
      const other = pipeline({
        name: "other",
        source: { landingDir: path.join(dir, "other"), format: "jsonl" },
        fields,
        window: { type: "tumbling", size: "1 minute" },
        watermark: { delay: "10 seconds" },
        trigger: { interval: "1 second" },
      });
      const env = { ...loadEnv({}), PORT: 0, STRAGGLER_API_TOKEN: TOKEN };
      const service = await startService(
        env,
        { pool, url, kind: "external", close: async () => undefined },
        [busy, other],
        createLogger("silent"),
      );
      const base = `http://127.0.0.1:${service.port}`;
      const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/x-ndjson" };
      try {
        // The other pipeline has windows to read.
        const seeded = await fetch(`${base}/pipelines/other/events`, {
          method: "POST",
          headers: auth,
          body: Array.from(
            { length: 100 },
            (_, i) => `{"t":"2026-01-01T00:${String(i % 60).padStart(2, "0")}:00Z","k":"k${i % 5}","v":1}`,
          ).join("\n"),
        });
        expect(seeded.status).toBe(201);
        // The large file is written beside the landing folder and renamed into it, so it lands whole.
        mkdirSync(busy.source.landingDir!, { recursive: true });
        const staged = path.join(dir, "big.jsonl");
        const out = createWriteStream(staged);
        for (let i = 0; i < BIG_ROWS; i++) {
          if (
            !out.write(
              `{"t":"2026-01-01T01:${String(Math.floor(i / 1000) % 60).padStart(2, "0")}:00Z","k":"k${i % 20}","v":${i % 100}}\n`,
            )
          )
            await new Promise<void>((r) => out.once("drain", () => r()));
        }
        await new Promise<void>((r) => out.end(() => r()));

        const health: number[] = [],
          reads: number[] = [],
          statuses = new Set<number>();
        let probing = true;
        const probe = async (route: string, into: number[]) => {
          const t = performance.now();
          const r = await fetch(`${base}${route}`);
          await r.arrayBuffer();
          into.push(performance.now() - t);
          statuses.add(r.status);
        };
        const prober = (async () => {
          while (probing) {
            await probe("/health", health);
            await probe("/pipelines/other/windows?limit=50", reads);
            await new Promise((r) => setTimeout(r, 20));
          }
        })();
        const landStarted = performance.now();
        renameSync(staged, path.join(busy.source.landingDir!, "big.jsonl"));
        let landMs = 0;
        const landed = (async () => {
          for (;;) {
            const { rows } = await pool.query(
              "SELECT rows FROM straggler.landed_sources WHERE pipeline = 'busy' AND source = 'big.jsonl'",
            );
            if (rows[0]) {
              landMs = performance.now() - landStarted;
              return rows[0].rows as number;
            }
            await new Promise((r) => setTimeout(r, 50));
          }
        })();
        let counter = 0;
        const load = await autocannon({
          url: base,
          connections: 8,
          duration: SECONDS,
          timeout: 300,
          requests: [
            {
              method: "POST",
              path: "/pipelines/busy/events",
              headers: auth,
              setupRequest: (req) => ({
                ...req,
                body: Array.from(
                  { length: EVENTS_PER_REQUEST },
                  (_, i) => `{"t":"2026-01-01T02:00:00Z","k":"k${(counter++ + i) % 20}","v":1}`,
                ).join("\n"),
              }),
            },
          ],
        });
        const bigRows = await landed;
        probing = false;
        await prober;
        const pct = (xs: number[], q: number) =>
          [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!.toFixed(1);
        console.log(
          `[load+landing] ${BIG_ROWS} rows landed from the landing folder in ${(landMs / 1000).toFixed(1)} s beside ${SECONDS} s of posts to the same pipeline ` +
            `(${load.requests.total} posts, p50 ${load.latency.p50} ms, p99 ${load.latency.p99} ms, max ${load.latency.max} ms); ` +
            `/health p50 ${pct(health, 0.5)} ms, p99 ${pct(health, 0.99)} ms, max ${pct(health, 1)} ms (${health.length} probes); ` +
            `reads of another pipeline p50 ${pct(reads, 0.5)} ms, p99 ${pct(reads, 0.99)} ms, max ${pct(reads, 1)} ms (${reads.length} probes)`,
        );
        expect([...statuses]).toEqual([200]);
        expect([load.non2xx, load.errors, load.timeouts]).toEqual([0, 0, 0]);
        expect(bigRows).toBe(BIG_ROWS);
        expect(health.length).toBeGreaterThan(0);
        // One statement, one snapshot: posts still queued when the generator stopped may land meanwhile.
        const { rows } = await pool.query(
          "SELECT l.landed::int, l.accepted::int, (SELECT sum(rows)::int FROM straggler.landed_sources WHERE pipeline = 'busy') AS by_source FROM straggler.ledger l WHERE l.pipeline = 'busy'",
        );
        expect(rows[0]).toEqual({
          landed: rows[0].by_source,
          accepted: rows[0].by_source,
          by_source: rows[0].by_source,
        });
      } finally {
        await service.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    300_000 + SECONDS * 1000,
  );
});
