/**
 * Bronze partitioned by landing month, archived past the correction horizon, restored
 * (src/retention/, README "Retention and archives"). A synthetic month of events is landed,
 * then backdated to the two months before this one (landed_at set as if each day's events
 * had landed five minutes after their event time; the raw-column trigger is off for that
 * fixture step only), so it spans two closed monthly partitions.
 */
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { gunzipSync, gzipSync } from "node:zlib";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCorrection } from "../../src/correction/correct.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { runMigrations, runMigrationsBefore } from "../../src/db/migrate.js";
import type { Pool } from "../../src/db/pool.js";
import { landFile } from "../../src/ingest/landFile.js";
import { rebuild, RebuildRefusedError } from "../../src/lifecycle/rebuild.js";
import { runArchive, type ArchiveManifest } from "../../src/retention/archive.js";
import { HorizonRefusedError } from "../../src/guards/index.js";
import { listPartitions } from "../../src/db/sql/retention/partitions.js";
import { restoreArchive, RestoreRefusedError } from "../../src/retention/restore.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { runUntilCaughtUp } from "../../src/stream/streamLoop.js";
import { useTestDatabase, withFreshDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";
import { retentionPipeline } from "../helpers/retention.js";

const getDb = useTestDatabase();

const HOUR = 3_600_000,
  DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();
const now = new Date();
/** The first instants (UTC) of the month before last and of last month. */
const m2 = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1);
const m1 = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
const partName = (ms: number) => `bronze_events_p${iso(ms).slice(0, 7).replace("-", "")}`;
/** The synthetic month starts 15 days before last month: days 0-14 land in the month before last, days 15-29 in last month. */
const S = m1 - 15 * DAY;

/** 30 days × keys a, b × 10 events (hours 1-10 of the day, value day + 1); 2 rows without an event time; 1 copy of the first event. */
function monthLines(): string[] {
  const lines: string[] = [];
  for (let d = 0; d < 30; d++) {
    for (const k of ["a", "b"]) {
      for (let j = 0; j < 10; j++)
        lines.push(JSON.stringify({ id: `e-${d}-${k}-${j}`, t: iso(S + d * DAY + (j + 1) * HOUR), k, v: d + 1 }));
    }
  }
  lines.push(
    JSON.stringify({ id: "no-ts-1", k: "a", v: 1 }),
    JSON.stringify({ id: "no-ts-2", k: "b", v: 1 }),
    JSON.stringify({ id: "e-0-a-0", t: iso(S + HOUR), k: "a", v: 1 }),
  );
  return lines;
}

/** Sets each row's landed_at as if it had landed 5 minutes after its event time (rows without one: day 1). Fixture only: the raw columns never change otherwise. */
async function backdate(pool: Pool, name: string): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query("SET session_replication_role = replica"); // the bronze_raw_unchanged trigger stays off for this session's statement
    await c.query(
      "UPDATE straggler.bronze_events SET landed_at = coalesce(event_time, $2::timestamptz) + interval '5 minutes' WHERE pipeline = $1",
      [name, iso(S + DAY)],
    );
    await c.query("RESET session_replication_role");
  } finally {
    c.release();
  }
}

const ledgerOf = async (pool: Pool, name: string) =>
  (
    await pool.query("SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = $1", [
      name,
    ])
  ).rows[0];
const windowOf = async (pool: Pool, name: string, key: string, day: number) =>
  (
    await pool.query(
      "SELECT event_count::int AS count, value_sum AS sum, revision FROM straggler.window_results WHERE pipeline = $1 AND group_key = $2 AND window_start = $3",
      [name, key, iso(S + day * DAY)],
    )
  ).rows[0];
const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");
const exists = async (pool: Pool, table: string) =>
  (await pool.query("SELECT to_regclass($1) IS NOT NULL AS e", [`straggler.${table}`])).rows[0].e as boolean;

describe("bronze partitions and the correction horizon", () => {
  it("a synthetic month: the partition past the horizon is archived (file, manifest, checksum) and dropped, counts unchanged; corrections, reconcile and rebuild of its windows are refused and change nothing; a late event for them stays recorded; a damaged archive is refused; restored, the recompute equals the value before archival; archived again with the same checksum; an archive written with the old policy_version column is restored too", async () => {
    const { pool } = await getDb();
    const work = mkdtempSync(path.join(os.tmpdir(), "straggler-retention-"));
    const landing = path.join(work, "landing"),
      archive = path.join(work, "archive");
    mkdirSync(landing);
    const p = retentionPipeline(landing, archive);
    await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $2::date)", [
      iso(m2).slice(0, 10),
      iso(m1).slice(0, 10),
    ]);
    writeFileSync(path.join(landing, "month.jsonl"), monthLines().join("\n") + "\n");
    const landed = await landFile(pool, p, path.join(landing, "month.jsonl"), "month.jsonl");
    expect([landed.landed, landed.accepted, landed.quarantined, landed.byReason]).toEqual([
      603,
      600,
      3,
      { DUPLICATE: 1, NULL_TS: 2 },
    ]);
    await backdate(pool, p.name);
    const perPartition = await pool.query(
      "SELECT tableoid::regclass::text AS t, count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1 GROUP BY 1 ORDER BY 1",
      [p.name],
    );
    expect(perPartition.rows).toEqual([
      { t: `straggler.${partName(m2)}`, n: 303 },
      { t: `straggler.${partName(m1)}`, n: 300 },
    ]);
    await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");
    const before = {
      ledger: await ledgerOf(pool, p.name),
      day3: await windowOf(pool, p.name, "a", 3),
      day5: await windowOf(pool, p.name, "a", 5),
    };
    expect(before).toEqual({
      ledger: { landed: 603, accepted: 600, quarantined: 3 },
      day3: { count: 10, sum: "40", revision: 1 },
      day5: { count: 10, sum: "60", revision: 1 },
    });
    const windowsBefore = (
      await pool.query(
        "SELECT group_key, window_start, event_count, value_sum FROM straggler.window_results WHERE pipeline = $1 ORDER BY 2, 1",
        [p.name],
      )
    ).rows;
    expect(windowsBefore).toHaveLength(60);

    const seqs = (
      await pool.query(
        `SELECT min(seq)::int AS lo, max(seq)::int AS hi FROM straggler.${partName(m2)} WHERE pipeline = $1`,
        [p.name],
      )
    ).rows[0];
    // Archive: the month before last is wholly past the horizon (watermark S+29d+9h − 10 days); last month is not.
    const run = await runArchive(pool, [p], { includeRestored: true });
    const manifestFile = path.join(archive, `${partName(m2)}.ret.manifest.json`);
    const dataFile = path.join(archive, `${partName(m2)}.ret.copy.gz`);
    expect(run.archived.map((a) => [a.partition, a.rows, a.archives.map((w) => w.manifestFile)])).toEqual([
      [partName(m2), 303, [manifestFile]],
    ]);
    expect(run.kept.map((k) => [k.partition, k.reasons])).toEqual([
      [
        partName(m1),
        [
          `ret: event times up to ${iso(S + 29 * DAY + 10 * HOUR)} are within the correction horizon (10 days behind the watermark ${iso(S + 29 * DAY + 9 * HOUR)}, i.e. from ${iso(S + 19 * DAY + 9 * HOUR)})`,
        ],
      ],
    ]);
    const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as ArchiveManifest;
    expect({ ...manifest, archivedAt: "-", bytes: 0, sha256: "-" }).toEqual({
      format: "straggler-bronze-archive/1: PostgreSQL COPY text of the listed columns, rows in seq order, gzip",
      partition: partName(m2),
      pipeline: "ret",
      rangeStart: iso(m2),
      rangeEnd: iso(m1),
      columns: [
        "seq",
        "pipeline",
        "event_id",
        "raw",
        "event_time",
        "ingestion_time",
        "group_key",
        "value",
        "status",
        "reason",
        "detail",
        "source",
        "source_line",
        "landed_at",
        "input",
      ],
      rows: 303,
      byStatus: { accepted: 300, quarantined: 3 },
      byReason: { DUPLICATE: 1, NULL_TS: 2 },
      eventTime: { min: iso(S + HOUR), max: iso(S + 14 * DAY + 10 * HOUR) },
      seq: { min: seqs.lo, max: seqs.hi },
      file: `${partName(m2)}.ret.copy.gz`,
      bytes: 0,
      sha256: "-",
      correctionHorizon: "10 days",
      watermark: iso(S + 29 * DAY + 9 * HOUR),
      archivedAt: "-",
    });
    expect(manifest.sha256).toBe(sha256(dataFile));
    expect(manifest.bytes).toBe(readFileSync(dataFile).length);
    expect(await exists(pool, partName(m2))).toBe(false);
    expect(await exists(pool, partName(m1))).toBe(true);
    // Counts survive: the ledger, quarantine reasons; bronze itself holds last month's rows only.
    expect(await ledgerOf(pool, p.name)).toEqual(before.ledger);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1", [p.name])).rows[0]
        .n,
    ).toBe(300);
    expect(
      (
        await pool.query(
          "SELECT status, reason, rows::int FROM straggler.archived_rows WHERE pipeline = $1 ORDER BY 1, 2",
          [p.name],
        )
      ).rows,
    ).toEqual([
      { status: "accepted", reason: "", rows: 300 },
      { status: "quarantined", reason: "DUPLICATE", rows: 1 },
      { status: "quarantined", reason: "NULL_TS", rows: 2 },
    ]);

    // The horizon guard: a range reaching archived rows is refused with the message; the window keeps its value (not 0).
    const day3 = { from: iso(S + 3 * DAY), to: iso(S + 4 * DAY) };
    const refusal = (what: string, range: { from: string; to: string } | null) =>
      `ret: ${what} ${range ? `[${range.from}, ${range.to})` : "over all time"} refused: it could hold rows archived past the correction horizon (correction horizon 10 days), which are no longer in bronze: ` +
      `${partName(m2)} (event times ${iso(S + HOUR)} to ${iso(S + 14 * DAY + 10 * HOUR)}). Nothing was recomputed. To recompute it, restore the archive first: straggler restore --archive ${manifestFile}` +
      (range ? "" : `; or give a range (--from, --to) whose windows start after ${iso(S + 14 * DAY + 10 * HOUR)}`);
    await expect(runCorrection(pool, p, { trigger: "cli", range: day3 })).rejects.toBeInstanceOf(HorizonRefusedError);
    await expect(runCorrection(pool, p, { trigger: "cli", range: day3 })).rejects.toThrow(
      refusal("correction of the windows in", day3),
    );
    await expect(reconcile(pool, p, day3)).rejects.toThrow(refusal("reconcile of the final windows", day3));
    await expect(reconcile(pool, p)).rejects.toThrow(refusal("reconcile of the final windows", null));
    const rebuilt = rebuild(pool, p);
    await expect(rebuilt).rejects.toBeInstanceOf(RebuildRefusedError);
    await expect(rebuilt).rejects.toThrow(refusal("rebuild of the windows", null));
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.correction_runs WHERE pipeline = $1", [p.name]))
        .rows[0].n,
    ).toBe(0);
    expect(await windowOf(pool, p.name, "a", 3)).toEqual(before.day3);
    // A range after the archived event times is reconciled as usual, the ledger balanced with the archived rows.
    const recent = await reconcile(pool, p, { from: iso(S + 20 * DAY), to: iso(S + 22 * DAY) });
    expect([recent.windowsChecked, recent.mismatches, recent.ledger, recent.ok]).toEqual([
      4,
      [],
      { landed: 603, accepted: 600, quarantined: 3, landedBySource: 603, balanced: true },
      true,
    ]);

    // A late event for an archived window: recorded and counted, awaiting correction; the correction job leaves the window as it is.
    writeFileSync(
      path.join(landing, "late.jsonl"),
      JSON.stringify({ id: "late-1", t: iso(S + 5 * DAY + 2 * HOUR), k: "a", v: 100 }) + "\n",
    );
    await landFile(pool, p, path.join(landing, "late.jsonl"), "late.jsonl");
    await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");
    const job = await runCorrection(pool, p, { trigger: "cli" });
    expect([job.status, job.windowsExamined, job.windowsChanged, job.windowsPastHorizon, job.changes]).toEqual([
      "succeeded",
      0,
      0,
      1,
      [],
    ]);
    expect(await windowOf(pool, p.name, "a", 5)).toEqual(before.day5);
    expect(
      (
        await pool.query(
          "SELECT group_key, window_start, dropped_rows::int FROM straggler.windows_awaiting_correction WHERE pipeline = $1",
          [p.name],
        )
      ).rows,
    ).toEqual([{ group_key: "a", window_start: iso(S + 5 * DAY), dropped_rows: 1 }]);
    expect(await ledgerOf(pool, p.name)).toEqual({ landed: 604, accepted: 601, quarantined: 3 });

    // A damaged copy of the archive is refused before anything is written.
    const damaged = path.join(work, "damaged");
    mkdirSync(damaged);
    copyFileSync(manifestFile, path.join(damaged, path.basename(manifestFile)));
    const bytes = readFileSync(dataFile);
    const mid = bytes.length >> 1;
    bytes[mid] = bytes[mid]! ^ 0xff;
    writeFileSync(path.join(damaged, path.basename(dataFile)), bytes);
    const damagedRestore = restoreArchive(pool, path.join(damaged, path.basename(manifestFile)));
    await expect(damagedRestore).rejects.toBeInstanceOf(RestoreRefusedError);
    await expect(damagedRestore).rejects.toThrow(
      `${path.join(damaged, path.basename(dataFile))}: SHA-256 ${createHash("sha256").update(bytes).digest("hex")} does not match the manifest's ${manifest.sha256}: the file is damaged or not this archive's; nothing was restored`,
    );
    expect(await exists(pool, partName(m2))).toBe(false);

    // Restored: the rows are back in their partition, counted once; the recompute equals the value before archival.
    expect(await restoreArchive(pool, dataFile)).toEqual({
      partition: partName(m2),
      pipeline: "ret",
      rows: 303,
      sha256: manifest.sha256,
      partitionMade: true,
    });
    expect(await exists(pool, partName(m2))).toBe(true);
    await expect(restoreArchive(pool, manifestFile)).rejects.toThrow(
      /^bronze_events_p\d{6} of ret: restored already \(at .+\); `straggler archive` archives it again$/,
    );
    // With its record cleared by hand, the same archive is still refused: its 303 seqs are in bronze already
    // (bronze's (pipeline, seq) index is not unique, so the restore checks), and nothing is written.
    await pool.query("UPDATE straggler.bronze_archives SET restored_at = NULL WHERE pipeline = 'ret'");
    const twice = restoreArchive(pool, manifestFile);
    await expect(twice).rejects.toBeInstanceOf(RestoreRefusedError);
    await expect(twice).rejects.toThrow(
      `${dataFile}: 303 of its rows have a seq that ret's bronze holds already; nothing was restored`,
    );
    await pool.query("UPDATE straggler.bronze_archives SET restored_at = now() WHERE pipeline = 'ret'");
    expect(await ledgerOf(pool, p.name)).toEqual({ landed: 604, accepted: 601, quarantined: 3 });
    const again = await reconcile(pool, p, day3);
    expect([again.windowsChecked, again.mismatches, again.ok]).toEqual([2, [], true]);
    const day3Run = await runCorrection(pool, p, { trigger: "cli", range: day3 });
    expect([day3Run.status, day3Run.windowsExamined, day3Run.windowsChanged]).toEqual(["succeeded", 2, 0]);
    expect(await windowOf(pool, p.name, "a", 3)).toEqual(before.day3);
    const day5Run = await runCorrection(pool, p, {
      trigger: "cli",
      range: { from: iso(S + 5 * DAY), to: iso(S + 6 * DAY) },
    });
    expect(day5Run.changes.map((c) => [c.groupKey, c.windowStart, c.before, c.after, c.lateEventCount])).toEqual([
      [
        "a",
        iso(S + 5 * DAY),
        { count: 10, sum: "60", min: "6", max: "6" },
        { count: 11, sum: "160", min: "6", max: "100" },
        1,
      ],
    ]);
    expect(
      (
        await pool.query("SELECT count(*)::int AS n FROM straggler.windows_awaiting_correction WHERE pipeline = $1", [
          p.name,
        ])
      ).rows[0].n,
    ).toBe(0);

    // Archived again: the same rows, the same checksum; the partition is gone again and the counts stay.
    const rerun = await runArchive(pool, [p], { includeRestored: true });
    expect(rerun.archived.map((a) => [a.partition, a.rows, a.archives.map((w) => w.manifest.sha256)])).toEqual([
      [partName(m2), 303, [manifest.sha256]],
    ]);
    expect(await exists(pool, partName(m2))).toBe(false);
    expect(await ledgerOf(pool, p.name)).toEqual({ landed: 604, accepted: 601, quarantined: 3 });
    expect(existsSync(dataFile)).toBe(true);

    // An archive written before migration 0037 lists policy_version after detail: restored, that column left out.
    const legacyDir = path.join(work, "legacy");
    mkdirSync(legacyDir);
    const legacyData = path.join(legacyDir, path.basename(dataFile));
    const stamped = gunzipSync(readFileSync(dataFile))
      .toString("utf8")
      .split("\n")
      .map((l) => (l === "" ? l : [...l.split("\t").slice(0, 11), "v", ...l.split("\t").slice(11)].join("\t")));
    writeFileSync(legacyData, gzipSync(stamped.join("\n")));
    const legacyColumns = [...manifest.columns.slice(0, 11), "policy_version", ...manifest.columns.slice(11)];
    const legacyManifest = path.join(legacyDir, path.basename(manifestFile));
    writeFileSync(
      legacyManifest,
      JSON.stringify({
        ...manifest,
        columns: legacyColumns,
        sha256: sha256(legacyData),
        bytes: readFileSync(legacyData).length,
      }),
    );
    await pool.query("UPDATE straggler.bronze_archives SET sha256 = $1 WHERE partition = $2 AND pipeline = $3", [
      sha256(legacyData),
      partName(m2),
      p.name,
    ]);
    expect(await restoreArchive(pool, legacyManifest)).toEqual({
      partition: partName(m2),
      pipeline: "ret",
      rows: 303,
      sha256: sha256(legacyData),
      partitionMade: true,
    });
    expect(await ledgerOf(pool, p.name)).toEqual({ landed: 604, accepted: 601, quarantined: 3 });
    expect(
      (await pool.query(`SELECT count(*)::int AS n FROM straggler.${partName(m2)} WHERE pipeline = $1`, [p.name]))
        .rows[0].n,
    ).toBe(303);
    // Archived once more (the tests after this one find the month archived, as before the legacy restore).
    expect((await runArchive(pool, [p], { includeRestored: true })).archived.map((a) => [a.partition, a.rows])).toEqual(
      [[partName(m2), 303]],
    );
    expect(await exists(pool, partName(m2))).toBe(false);
  });

  it("the DEFAULT partition takes a row landed outside every partition; making its month's partition moves the row there", async () => {
    const { pool } = await getDb();
    const names = (await listPartitions(pool)).map((x) => x.name);
    expect(names).toContain("bronze_events_default");
    await pool.query(
      `INSERT INTO straggler.bronze_events (pipeline, source_id, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, landed_at)
       VALUES ('old', straggler.bronze_source_id('old', 'old.jsonl'), 1, 'o-1', '{}', '2000-01-15T00:00:00Z', '2000-01-15T00:00:00Z', '""', 1, 'accepted', '2000-01-15T00:00:00Z')`,
    );
    const where = async () =>
      (
        await pool.query(
          "SELECT tableoid::regclass::text AS t, seq::int FROM straggler.bronze_events WHERE pipeline = 'old'",
        )
      ).rows;
    const [row] = await where();
    expect(row!.t).toBe("straggler.bronze_events_default");
    expect(
      (await pool.query("SELECT straggler.ensure_bronze_partitions('2000-01-01', '2000-01-31') AS made")).rows[0].made,
    ).toBe(1);
    expect(await where()).toEqual([{ t: "straggler.bronze_events_p200001", seq: row!.seq }]);
    expect((await pool.query("SELECT count(*)::int AS n FROM straggler.bronze_events_default")).rows[0].n).toBe(0);
    const made = (await listPartitions(pool)).find((x) => x.name === "bronze_events_p200001");
    expect(made).toEqual({
      name: "bronze_events_p200001",
      rangeStart: "2000-01-01T00:00:00.000Z",
      rangeEnd: "2000-02-01T00:00:00.000Z",
    });
    // A partition of that name exists: nothing is made twice.
    expect(
      (await pool.query("SELECT straggler.ensure_bronze_partitions('2000-01-01', '2000-01-31') AS made")).rows[0].made,
    ).toBe(0);
  });

  it("migration 0023 converts an existing bronze: every row in its landing month's partition with its seq, the sequence continued, the views and the raw-column trigger in place", async () => {
    await withFreshDatabase(async (pool) => {
      await runMigrationsBefore(pool, 23);
      expect(
        (await pool.query("SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass")).rows[0]
          .relkind,
      ).toBe("r");
      // A row written by hand: as bronze was before 0037 (a policy_version column, the source by name), or now (the source by id).
      const insert = (seqAt: string, now = false) =>
        pool.query(
          `INSERT INTO straggler.bronze_events (pipeline, ${now ? "source_id" : "policy_version, source"}, source_line, event_id, raw, event_time, ingestion_time, group_key, value, status, reason, landed_at)
         VALUES ('old', ${now ? "straggler.bronze_source_id('old', 'old.jsonl')" : "'v', 'old.jsonl'"}, 1, $1, '{}', $2, $2, '""', 1, 'accepted', NULL, $2) RETURNING seq::int`,
          [`id-${seqAt}`, seqAt],
        );
      const seqs: number[] = [];
      for (const at of ["2026-03-31T23:59:59.999999Z", "2026-04-01T00:00:00Z", "2026-06-15T12:00:00Z"])
        seqs.push((await insert(at)).rows[0].seq);
      await pool.query("DELETE FROM straggler.bronze_events WHERE seq = $1", [seqs[1]]); // a gap in seq stays a gap
      await runMigrations(pool);
      expect(
        (await pool.query("SELECT relkind FROM pg_class WHERE oid = 'straggler.bronze_events'::regclass")).rows[0]
          .relkind,
      ).toBe("p");
      const rows = (
        await pool.query(
          "SELECT seq::int, tableoid::regclass::text AS t, landed_at FROM straggler.bronze_events ORDER BY seq",
        )
      ).rows;
      expect(rows).toEqual([
        { seq: seqs[0], t: "straggler.bronze_events_p202603", landed_at: "2026-03-31T23:59:59.999999Z" },
        { seq: seqs[2], t: "straggler.bronze_events_p202606", landed_at: "2026-06-15T12:00:00.000Z" },
      ]);
      // The months between the rows' get partitions too, and this month and the next.
      const names = (await listPartitions(pool)).map((x) => x.name);
      const thisMonth = `bronze_events_p${iso(Date.now()).slice(0, 7).replace("-", "")}`;
      expect(names.filter((n) => n.startsWith("bronze_events_p") && n < "bronze_events_p202607")).toEqual([
        "bronze_events_p202603",
        "bronze_events_p202604",
        "bronze_events_p202605",
        "bronze_events_p202606",
      ]);
      expect(names).toContain(thisMonth);
      expect(names).toContain("bronze_events_default");
      // The sequence goes on after the copied rows; the views read the partitioned table.
      expect((await insert("2026-06-16T00:00:00Z", true)).rows[0].seq).toBe(seqs[2]! + 1);
      expect(await ledgerOf(pool, "old")).toEqual({ landed: 3, accepted: 3, quarantined: 0 });
      expect((await pool.query("SELECT pg_get_serial_sequence('straggler.bronze_events', 'seq') AS s")).rows[0].s).toBe(
        "straggler.bronze_events_seq_seq",
      );
      await expect(
        pool.query("UPDATE straggler.bronze_events SET raw = 'x' WHERE seq = $1", [seqs[0]]),
      ).rejects.toThrow(
        `bronze row ${seqs[0]} of pipeline old: the raw columns (seq, pipeline, event_id, raw, raw_rest, raw_at, ingestion_time, source_id, source_line, landed_at) never change`,
      );
      // A seq still comes from the one sequence; since 0050 no primary key holds it (0023's (seq, landed_at), 0038's
      // (pipeline, seq, landed_at)): the (pipeline, seq) index serves every read by seq.
      expect(
        (
          await pool.query(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = 'straggler' AND indexname = 'bronze_events_pipeline_seq'",
          )
        ).rows,
      ).toEqual([
        {
          indexdef:
            "CREATE INDEX bronze_events_pipeline_seq ON ONLY straggler.bronze_events USING btree (pipeline, seq)",
        },
      ]);
    });
  });

  it("session windows: a late event bridging two archived sessions is recorded and left awaiting correction; the sessions keep their values", async () => {
    const { pool } = await getDb();
    const work = mkdtempSync(path.join(os.tmpdir(), "straggler-retention-sessions-"));
    const landing = path.join(work, "landing");
    mkdirSync(landing);
    const p = pipeline({
      name: "ret-sessions",
      source: { landingDir: landing, format: "jsonl" },
      fields: { eventId: "id", eventTime: "t", groupKey: "k", value: "v" },
      window: { type: "session", gap: "30 minutes" },
      watermark: { delay: "1 hour" },
      admission: { dedupe: "first" },
      retention: { correctionHorizon: "10 days", archive: path.join(work, "archive") },
    });
    await pool.query("SELECT straggler.ensure_bronze_partitions($1::date, $2::date)", [
      iso(m2).slice(0, 10),
      iso(m1).slice(0, 10),
    ]);
    // Two sessions 40 minutes apart in the month before last; one event 20 days later (last month) moves the watermark on.
    const t0 = m1 - 5 * DAY;
    const events = [
      [0, 1],
      [10, 2],
      [50, 4],
      [60, 8],
    ].map(([min, v]) => ({ id: `s-${min}`, t: iso(t0 + min! * 60_000), k: "a", v }));
    events.push({ id: "later", t: iso(m1 + 15 * DAY), k: "a", v: 100 });
    writeFileSync(path.join(landing, "sessions.jsonl"), events.map((e) => JSON.stringify(e)).join("\n") + "\n");
    await landFile(pool, p, path.join(landing, "sessions.jsonl"), "sessions.jsonl");
    await backdate(pool, p.name);
    await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");
    const sessions = async () =>
      (
        await pool.query(
          "SELECT window_start, window_end, event_count::int AS n, value_sum AS sum FROM straggler.window_results WHERE pipeline = $1 ORDER BY window_start",
          [p.name],
        )
      ).rows;
    const before = await sessions();
    expect(before).toEqual([
      { window_start: iso(t0), window_end: iso(t0 + 40 * 60_000), n: 2, sum: "3" },
      { window_start: iso(t0 + 50 * 60_000), window_end: iso(t0 + 90 * 60_000), n: 2, sum: "12" },
      { window_start: iso(m1 + 15 * DAY), window_end: iso(m1 + 15 * DAY + 30 * 60_000), n: 1, sum: "100" },
    ]);
    const run = await runArchive(pool, [p], { includeRestored: false });
    expect(run.archived.map((a) => [a.partition, a.rows])).toEqual([[partName(m2), 4]]);
    // 00:30 bridges the two archived sessions: the stream drops it (late); the correction job leaves them as they are.
    writeFileSync(
      path.join(landing, "bridge.jsonl"),
      JSON.stringify({ id: "bridge", t: iso(t0 + 30 * 60_000), k: "a", v: 16 }) + "\n",
    );
    await landFile(pool, p, path.join(landing, "bridge.jsonl"), "bridge.jsonl");
    await runUntilCaughtUp((t) => runBatch(pool, p, t), "available-now");
    const job = await runCorrection(pool, p, { trigger: "cli" });
    expect([job.status, job.windowsExamined, job.windowsChanged, job.windowsPastHorizon]).toEqual([
      "succeeded",
      0,
      0,
      1,
    ]);
    expect(await sessions()).toEqual(before);
    expect(
      (await pool.query("SELECT count(*)::int AS n FROM straggler.late_events WHERE pipeline = $1", [p.name])).rows[0]
        .n,
    ).toBe(1);
    await expect(
      runCorrection(pool, p, { trigger: "cli", range: { from: iso(t0), to: iso(t0 + DAY) } }),
    ).rejects.toBeInstanceOf(HorizonRefusedError);
  });
});
