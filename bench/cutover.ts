/**
 * 10. Cutover and rollback on the peers workload (issue 30 item 3): at each
 * size of `--cutover-sizes` (× scale), a database of its own, the pipeline
 * `peers` replayed and corrected as a user runs it (`straggler replay … --batch-span
 * "1 hour"`, `straggler correct`), then rebuilt under a policy that changes no
 * row's classification (`admission.maxFutureSkew: 3650 days` instead of none:
 * every event of the workload is in the past), so the candidate serves the
 * same windows. Then, in the process, the cutover to the candidate and back
 * (a rollback), `rounds` times each, as `cutover()` runs them: the switch
 * (`switchVersion`, its one transaction) and then the count of the windows
 * served, each timed. Afterwards `straggler reconcile` must be clean and the
 * live windows the same as before the first cutover.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { loadPipelines } from "../src/config/pipelines.js";
import { createPool } from "../src/db/pool.js";
import { countVersionWindows } from "../src/db/sql/lifecycle/versionSwap.js";
import { switchVersion } from "../src/lifecycle/cutover.js";
import {
  dropDatabase,
  fmt,
  fmtStat,
  freshDatabase,
  now,
  peersConfig,
  peersEvents,
  ROOT,
  runNode,
  say,
  stat,
  tmp,
  type BenchContext,
} from "./common.js";

const LIVE_WINDOWS_SQL = `SELECT md5(string_agg(concat_ws('|', group_key, window_start, event_count, value_sum), ',' ORDER BY group_key, window_start)) AS h,
  count(*)::int AS n FROM straggler.window_results WHERE pipeline = $1`;

/** 10. Cutover and rollback of a pipeline of `--cutover-sizes` events; each size a database of its own. */
export async function measureCutover(ctx: BenchContext, sizes: number[]): Promise<void> {
  const at = new Map<number, number>();
  for (const base of sizes) {
    const n = Math.max(2000, Math.round(base * ctx.scale));
    const { file } = await peersEvents(base, n);
    const name = "peers";
    const own = `straggler_bench_cutover_${n}`;
    const config = path.join(tmp, `${own}.yaml`),
      candidate = path.join(tmp, `${own}-candidate.yaml`);
    writeFileSync(config, peersConfig(name));
    writeFileSync(candidate, peersConfig(name, "{ maxFutureSkew: 3650 days }"));
    const url = await freshDatabase(ctx.url, own);
    const pool = createPool(url, 2);
    try {
      const cli = (cfg: string, ...args: string[]) =>
        runNode([path.join(ROOT, "bin/straggler.mjs"), "-c", cfg, ...args], { DATABASE_URL: url });
      let t = now();
      await cli(config, "replay", "-p", name, file, "--arrival-field", "a", "--batch-span", "1 hour");
      await cli(config, "correct", "-p", name);
      const replayed = now() - t;
      t = now();
      await cli(candidate, "rebuild", "-p", name, "--limit", "0");
      const rebuilt = now() - t;
      const before = (await pool.query(LIVE_WINDOWS_SQL, [name])).rows[0];
      const pipeline = loadPipelines(candidate)[0]!;
      // As `cutover()` runs them: the switch (one transaction, the pipeline's locks held), then the count of windows served.
      const to: number[] = [],
        back: number[] = [],
        counts: number[] = [];
      let windows = 0,
        reclassified = 0;
      for (let r = 0; r < ctx.rounds; r++) {
        for (const version of [2, 1]) {
          t = now();
          const report = await switchVersion(pool, pipeline, version);
          (version === 2 ? to : back).push(now() - t);
          t = now();
          windows = await countVersionWindows(pool, name, version);
          counts.push(now() - t);
          reclassified += report.reclassifiedRows;
        }
      }
      const after = (await pool.query(LIVE_WINDOWS_SQL, [name])).rows[0];
      const reconciled = JSON.parse(await cli(config, "reconcile", "-p", name, "--json")) as { ok: boolean }[];
      const clean = reconciled.every((x) => x.ok) && after.h === before.h && after.n === before.n;
      const cut = stat(to),
        roll = stat(back),
        count = stat(counts);
      at.set(base, cut.median);
      say(
        `cutover ${n}: replay + correct ${fmt(replayed)} ms, rebuild ${fmt(rebuilt)} ms; cutover ${to.map(fmt).join(", ")} ms; rollback ${back.map(fmt).join(", ")} ms; the count of windows served ${counts.map(fmt).join(", ")} ms; ${windows} windows, ${reclassified} rows reclassified; ${clean ? "reconcile clean, the same windows" : "NOT the same windows or reconcile NOT clean"}`,
      );
      const label = `${n.toLocaleString("en-US")} events, ${windows.toLocaleString("en-US")} windows`;
      ctx.row(
        `cutover ${label}: the switch to a rebuilt candidate, one transaction (${clean ? "reconcile clean, live windows unchanged" : "RESULTS DIFFER"})`,
        fmtStat(cut, " ms"),
        `rollback ${fmtStat(roll, " ms")}`,
        "—",
        base === 1_000_000 ? "≤ 100 ms" : "—",
      );
      ctx.row(
        `cutover ${label}: then the report's count of the windows served (after the commit, no lock held)`,
        fmtStat(count, " ms"),
        "—",
        "—",
        "—",
      );
      const at1M = at.get(1_000_000);
      if (base > 1_000_000 && at1M !== undefined)
        ctx.row(
          `cutover ${label}: beside the 1,000,000-event one`,
          fmtStat(cut, " ms"),
          `${fmt(at1M)} ms`,
          `${(cut.median / at1M).toFixed(2)} × its time`,
          "≤ 1.5 ×",
        );
    } finally {
      await pool.end();
      await dropDatabase(ctx.url, own);
    }
  }
}
