/**
 * 9. The peers workload (`../shared/bench/peers-workload.mjs`: `id,t,a,k,v` in
 * arrival order, 100 keys over 7 days, 1 % of the events 1–3 hours late up to
 * 1M events; past that about 10,000 late events, as the issue's correction
 * table kept them, so that the 10M correction is set beside the 1M one),
 * at 300k, 1M and 10M events (× scale), three sides in one run, alternating
 * round by round:
 *
 * - Straggler end to end, as a user runs it: `straggler replay -p P
 *   events.csv --arrival-field a --batch-span "1 hour"`, then `straggler
 *   correct -p P`, each a child process of the built CLI; then `straggler
 *   reconcile -p P` (not timed) must be clean and every window's (count, sum)
 *   must equal the reference's;
 * - the minimal ledger: COPY of the same CSV into a narrow table with a
 *   primary key on the event id (no aggregate at all);
 * - plain COPY into a narrow table without an index, then one `REFRESH
 *   MATERIALIZED VIEW` of the 10-minute (count, sum) per key.
 *
 * Straggler's side runs in a database of its own each round (one pipeline,
 * `peers`, as the issue ran it); bronze's bytes per event are that database's
 * bronze (its partitions and their indexes) per landed event. 10M events run one round
 * (at about 20k events/s a round of Straggler takes minutes): the table says so.
 */
import { createReadStream, existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import type { Pool } from "../src/db/pool.js";
import { createPool } from "../src/db/pool.js";
import {
  dropDatabase,
  fmt,
  fmtStat,
  freshDatabase,
  now,
  PEERS_WORKLOAD,
  peersConfig,
  peersEvents,
  ROOT,
  runNode as run,
  say,
  stat,
  tmp,
  type BenchContext,
} from "./common.js";

/** Bytes of bronze: every partition with its indexes. */
async function bronzeBytes(pool: Pool): Promise<number> {
  const { rows } = await pool.query(
    "SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint AS b FROM pg_inherits WHERE inhparent = 'straggler.bronze_events'::regclass",
  );
  return Number(rows[0].b);
}

/** COPYs the CSV `file` (with its header) into `table`. */
async function copyCsv(pool: Pool, table: string, file: string): Promise<void> {
  const client = await pool.connect();
  try {
    await pipe(
      createReadStream(file),
      client.query(copyFrom(`COPY ${table} (id, t, a, k, v) FROM STDIN WITH (FORMAT csv, HEADER true)`)),
    );
  } finally {
    client.release();
  }
}

interface Round {
  replay: number;
  /** `straggler correct` as a user runs it: the command's wall time, process start-up included. */
  correct: number;
  /** The correction run's own time, in the process (`correction_runs.duration_ms`): what the issue's table measured. */
  correctRun: number;
  ledger: number;
  refresh: number;
  /** The REFRESH MATERIALIZED VIEW alone (its share of `refresh`). */
  refreshOnly: number;
  bytesPerEvent: number;
  mismatches: number;
  reconcileClean: boolean;
}

/** Every window's (count, sum) with events, as `key|start|count|sum` lines (start as epoch ms). */
async function windowLines(pool: Pool, sql: string, params: unknown[] = []): Promise<Set<string>> {
  const { rows } = await pool.query(sql, params);
  return new Set(rows.map((r) => `${r.k}|${Date.parse(r.ws)}|${r.n}|${r.s}`));
}

/** How many lines of `a` are not in `b`, and of `b` not in `a`. */
function differing(a: Set<string>, b: Set<string>): number {
  let n = 0;
  for (const x of a) if (!b.has(x)) n++;
  for (const x of b) if (!a.has(x)) n++;
  return n;
}

/**
 * One round of the three sides at `n` events from `file`. Straggler's side runs in a database of its own, made
 * for the round and dropped after it, with one pipeline named `peers` (the issue's commands): its bronze holds
 * that pipeline alone, as a user's would (a bronze shared with earlier rounds grows by more: their keys' and ids'
 * index pages split again). The other two sides run in the bench's database, on the same server.
 */
async function oneRound(ctx: BenchContext, file: string, n: number, round: number): Promise<Round> {
  const { pool } = ctx;
  const name = "peers";
  const own = `straggler_bench_peers_${n}_${round}`;
  const config = path.join(tmp, `${own}.yaml`);
  writeFileSync(config, peersConfig(name));
  const ownUrl = await freshDatabase(ctx.url, own);
  const ownPool = createPool(ownUrl, 2);
  try {
    const cli = (...args: string[]) =>
      run([path.join(ROOT, "bin/straggler.mjs"), "-c", config, ...args], { DATABASE_URL: ownUrl });
    await cli("status"); // migrates the new database, outside the timed commands

    // The minimal ledger: a narrow table, a primary key on the event id.
    await pool.query(
      "DROP TABLE IF EXISTS bench_peers_ledger; CREATE TABLE bench_peers_ledger (id text PRIMARY KEY, t timestamptz, a timestamptz, k text, v numeric)",
    );
    await pool.query("CHECKPOINT");
    let t = now();
    await copyCsv(pool, "bench_peers_ledger", file);
    const ledger = now() - t;

    // Straggler, as a user runs it.
    await pool.query("CHECKPOINT");
    const started = now();
    await cli("replay", "-p", name, file, "--arrival-field", "a", "--batch-span", "1 hour");
    const replayed = now();
    await cli("correct", "-p", name);
    const corrected = now();
    const { rows: runs } = await ownPool.query(
      "SELECT duration_ms::int AS ms FROM straggler.correction_runs WHERE pipeline = $1 ORDER BY run_id DESC LIMIT 1",
      [name],
    );
    const bytesPerEvent = (await bronzeBytes(ownPool)) / n;
    const reconciled = JSON.parse(await cli("reconcile", "-p", name, "--json")) as {
      ok: boolean;
      mismatches: unknown[];
    }[];
    const reconcileClean = reconciled.length === 1 && reconciled.every((r) => r.ok && r.mismatches.length === 0);

    // Plain COPY (no index), then one REFRESH of the materialized view.
    await pool.query(`DROP MATERIALIZED VIEW IF EXISTS bench_peers_mv; DROP TABLE IF EXISTS bench_peers_plain;
      CREATE TABLE bench_peers_plain (id text, t timestamptz, a timestamptz, k text, v numeric);
      CREATE MATERIALIZED VIEW bench_peers_mv AS
        SELECT k, to_timestamp(floor(extract(epoch FROM t) / 600) * 600) AS window_start, count(*) AS n, sum(v) AS s FROM bench_peers_plain GROUP BY 1, 2 WITH NO DATA`);
    await pool.query("CHECKPOINT");
    t = now();
    await copyCsv(pool, "bench_peers_plain", file);
    const copied = now();
    await pool.query("REFRESH MATERIALIZED VIEW bench_peers_mv");
    const refresh = now() - t,
      refreshOnly = now() - copied;

    // Every window's (count, sum) the same on both sides (the two databases read apart, compared here).
    const mismatches = differing(
      await windowLines(
        ownPool,
        "SELECT group_key AS k, window_start AS ws, event_count AS n, trim_scale(value_sum)::text AS s FROM straggler.window_results WHERE pipeline = $1 AND event_count > 0",
        [name],
      ),
      await windowLines(pool, "SELECT k, window_start AS ws, n, trim_scale(s)::text AS s FROM bench_peers_mv"),
    );
    await pool.query(
      "DROP MATERIALIZED VIEW bench_peers_mv; DROP TABLE bench_peers_plain; DROP TABLE bench_peers_ledger",
    );
    return {
      replay: replayed - started,
      correct: corrected - replayed,
      correctRun: runs[0].ms,
      ledger,
      refresh,
      refreshOnly,
      bytesPerEvent,
      mismatches,
      reconcileClean,
    };
  } finally {
    await ownPool.end();
    await dropDatabase(ctx.url, own);
  }
}

/** 9. The peers comparison at 300k, 1M and 10M events (× scale; `--peers-sizes` picks others); skipped when the workload generator is not beside the repository. */
export async function measurePeers(ctx: BenchContext): Promise<void> {
  if (!existsSync(PEERS_WORKLOAD)) {
    say(`peers: ${PEERS_WORKLOAD} not found; section skipped`);
    return;
  }
  const correctRuns = new Map<number, number>();
  for (const base of ctx.peersSizes) {
    const n = Math.max(2000, Math.round(base * ctx.scale));
    const { file, late } = await peersEvents(base, n);
    const rounds = base >= 10_000_000 ? 1 : ctx.rounds;
    const results: Round[] = [];
    for (let r = 0; r < rounds; r++) {
      const one = await oneRound(ctx, file, n, r);
      results.push(one);
      say(
        `peers ${n} round ${r}: Straggler ${fmt(one.replay + one.correct)} ms (replay ${fmt(one.replay)}, correct ${fmt(one.correct)}, its run ${fmt(one.correctRun)}), minimal ledger ${fmt(one.ledger)} ms, COPY + REFRESH ${fmt(one.refresh)} ms (REFRESH ${fmt(one.refreshOnly)}), bronze ${fmt(one.bytesPerEvent)} B/event, mismatches ${one.mismatches}, reconcile ${one.reconcileClean ? "clean" : "NOT clean"}`,
      );
    }
    const total = stat(results.map((x) => x.replay + x.correct));
    const ledger = stat(results.map((x) => x.ledger));
    const refresh = stat(results.map((x) => x.refresh));
    const agree = results.every((x) => x.mismatches === 0 && x.reconcileClean)
      ? "same (count, sum) in every window, reconcile clean"
      : "RESULTS DIFFER";
    const label = `${n.toLocaleString("en-US")}${late === 0.01 ? "" : ` (${+(late * 100).toFixed(3)} % late)`}`;
    ctx.row(
      `peers ${label}: replay + correct, end to end (${fmt((n * 1000) / total.median)} ev/s; ${agree})`,
      fmtStat(total, " ms"),
      `minimal ledger (COPY, primary key on id) ${fmtStat(ledger, " ms")}`,
      `${(ledger.median / total.median).toFixed(3)} ×`,
      "≥ 0.3 ×",
    );
    ctx.row(
      `peers ${label}: the same beside COPY + REFRESH MATERIALIZED VIEW`,
      fmtStat(total, " ms"),
      `${fmtStat(refresh, " ms")}`,
      `${(refresh.median / total.median).toFixed(3)} ×`,
      "—",
    );
    ctx.row(
      `peers ${label}: of which correct`,
      fmtStat(stat(results.map((x) => x.correct)), " ms"),
      `replay ${fmtStat(stat(results.map((x) => x.replay)), " ms")}`,
      "—",
      "—",
    );
    const correct = stat(results.map((x) => x.correct)),
      refreshOnly = stat(results.map((x) => x.refreshOnly));
    const correctRun = stat(results.map((x) => x.correctRun));
    ctx.row(
      `peers ${label}: the correction run (in the process, its recorded duration) beside one full REFRESH MATERIALIZED VIEW (after the COPY)`,
      fmtStat(correctRun, " ms"),
      fmtStat(refreshOnly, " ms"),
      `${(correctRun.median / refreshOnly.median).toFixed(2)} × its time`,
      "faster than the REFRESH",
    );
    correctRuns.set(base, correctRun.median);
    const at1M = correctRuns.get(1_000_000);
    if (base > 1_000_000 && at1M !== undefined)
      ctx.row(
        `peers ${label}: the correction run beside the 1,000,000 one (about as many late events and windows)`,
        fmtStat(correctRun, " ms"),
        `${fmt(at1M)} ms`,
        `${(correctRun.median / at1M).toFixed(2)} × its time`,
        "≤ 1.5 ×",
      );
    ctx.row(
      `peers ${label}: \`straggler correct\` (the command, its start-up included) beside the same REFRESH`,
      fmtStat(correct, " ms"),
      fmtStat(refreshOnly, " ms"),
      `${(correct.median / refreshOnly.median).toFixed(2)} × its time`,
      "—",
    );
    ctx.row(
      `peers ${label}: bronze per event`,
      `${fmt(stat(results.map((x) => x.bytesPerEvent)).median)} B`,
      "narrow table with a primary key: about 106 B",
      "—",
      "≤ 200 B",
    );
  }
}
