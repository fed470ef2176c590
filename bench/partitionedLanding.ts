/**
 * `node --import tsx bench/partitionedLanding.ts [--events 200000] [--history 1000000] [--days 30] [--rounds 3]`:
 * landing into bronze partitioned by month beside bronze as one table (bench/landing.ts
 * `measurePartitionedLanding`), on the server of DATABASE_URL. Prints one markdown row.
 */
import { Command } from "commander";
import { loadEnv } from "../src/config/env.js";
import { openDatabase } from "../src/db/open.js";
import { fmtStat, log, say } from "./common.js";
import { measurePartitionedLanding } from "./landing.js";

const opts = new Command("partitioned-landing")
  .option("--events <n>", "events landed per round", "200000")
  .option("--history <n>", "rows of history in bronze", "1000000")
  .option("--days <n>", "days the history spans", "30")
  .option("--rounds <n>", "rounds", "3")
  .parse()
  .opts();
const server = await openDatabase(loadEnv(), log, { migrate: false });
const n = Number(opts.events),
  historyRows = Number(opts.history),
  days = Number(opts.days),
  rounds = Number(opts.rounds);
const r = await measurePartitionedLanding(server.url, { n, rounds, historyRows, days });
say(`partitioned ${fmtStat(r.partitioned, " ev/s")}, unpartitioned ${fmtStat(r.unpartitioned, " ev/s")}`);
console.log(
  `| landing ${n.toLocaleString("en-US")} events, bronze with ${historyRows.toLocaleString("en-US")} rows over ${days} days | ${fmtStat(r.partitioned, " ev/s")} (${r.partitions} partitions) | ${fmtStat(r.unpartitioned, " ev/s")} (one table) | ${(r.partitioned.median / r.unpartitioned.median).toFixed(2)} × |`,
);
await server.close();
