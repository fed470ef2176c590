/**
 * Migration 0053 (drizzle/0053_bronze_ingestion_time_of_source.sql): a bronze row whose ingestion time is its
 * landing's stores none; its source's record holds it, and every reader takes it from there: the views, the raw
 * text's layout, a micro-batch's latest ingestion time per input, the rebuild's and the archive's reads.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { to as copyTo } from "pg-copy-streams";
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../../src/core/admission.js";
import { isoToUs } from "../../src/core/instants.js";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { ensureBatchPairs, readBatch } from "../../src/db/sql/stream/readBatch.js";
import { readBronzePage } from "../../src/db/sql/stream/classifications.js";
import { landRecords } from "../../src/ingest/copyToBronze.js";
import { landFile } from "../../src/ingest/landFile.js";
import type { Pool } from "../../src/db/pool.js";
import { archiveCopySql } from "../../src/db/sql/retention/archiveRows.js";
import { useTestDatabase } from "../helpers/db.js";
import { pipeline } from "../helpers/fixtures.js";

const getDb = useTestDatabase();

const T = "2026-10-01T12:00:00.000Z";
const T_MS = Date.parse(T);

/** A pipeline summing `v` per 10-minute window; ingestion time from the field `it` when `withField`. */
function pipelineOf(name: string, withField: boolean, format: "jsonl" | "csv" = "jsonl"): PipelineConfig {
  return pipeline({
    name,
    source: { format },
    fields: { eventId: "id", eventTime: "t", value: "v", ...(withField ? { ingestionTime: "it" } : {}) },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "10 minutes" },
  });
}

/** The rows `sql` ($1: the pipeline) returns, each as the values of `columns`, in order. */
async function valuesOf(pool: Pool, sql: string, pipelineName: string, columns: string[]): Promise<unknown[][]> {
  const { rows } = await pool.query(sql, [pipelineName]);
  return rows.map((r) => columns.map((c) => r[c]));
}

async function* jsonl(rows: Record<string, string>[]): AsyncGenerator<RawRecord> {
  let line = 0;
  for (const fields of rows) yield { line: ++line, raw: JSON.stringify(fields), fields };
}

describe("a bronze row's ingestion time, its own or its source's (drizzle/0053)", () => {
  it("stores none where it is the landing's; the source records it and the views, a batch and the rebuild's page read it", async () => {
    const { pool } = await getDb();
    const p = pipelineOf("it-source", true);
    const r = await landRecords(
      pool,
      p,
      "test:1",
      jsonl([
        { id: "a", t: "2026-10-01T11:50:00Z", v: "1", it: "2026-10-01T11:00:00Z" }, // its own, earlier
        { id: "b", t: "2026-10-01T11:51:00Z", v: "2", it: T }, // the landing's
        { id: "c", t: "not a time", v: "3", it: T }, // quarantined, at the landing's
      ]),
      { landingTimeMs: T_MS },
    );
    expect([r.accepted, r.quarantined]).toEqual([2, 1]);
    const stored = `SELECT event_id, ingestion_time, status FROM straggler.bronze_events WHERE pipeline = $1 ORDER BY seq`;
    expect(await valuesOf(pool, stored, p.name, ["event_id", "ingestion_time", "status"])).toEqual([
      ["a", "2026-10-01T11:00:00.000Z", "accepted"],
      ["b", null, "accepted"],
      ["c", null, "quarantined"],
    ]);
    const source = await pool.query(
      `SELECT ingestion_time FROM straggler.bronze_sources WHERE pipeline = $1 AND name = 'test:1'`,
      [p.name],
    );
    expect(source.rows[0].ingestion_time).toBe(T);
    const view = `SELECT event_id, ingestion_time, source FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq`;
    expect(await valuesOf(pool, view, p.name, ["event_id", "ingestion_time", "source"])).toEqual([
      ["a", "2026-10-01T11:00:00.000Z", "test:1"],
      ["b", T, "test:1"],
      ["c", T, "test:1"],
    ]);
    const quarantine = `SELECT event_id, ingestion_time FROM straggler.quarantine WHERE pipeline = $1`;
    expect(await valuesOf(pool, quarantine, p.name, ["event_id", "ingestion_time"])).toEqual([["c", T]]);

    // The batch's latest ingestion time is the source's (row b), not the one row a stores.
    const client = await pool.connect();
    try {
      await ensureBatchPairs(client);
      await client.query("BEGIN");
      const read = await readBatch(client, p.name, { afterSeq: 0, maxRows: 100 });
      await client.query("ROLLBACK");
      expect(read!.inputs).toEqual([
        { input: "default", maxEventUs: isoToUs("2026-10-01T11:51:00Z"), maxIngestionUs: isoToUs(T) },
      ]);
      // The rebuild's page: every row's ingestion time, exact.
      const page = await readBronzePage(client, p.name, 0, Number.MAX_SAFE_INTEGER, 10);
      expect(page.map((x) => [x.ingestionUs, x.source])).toEqual([
        [isoToUs("2026-10-01T11:00:00Z"), "test:1"],
        [isoToUs(T), "test:1"],
        [isoToUs(T), "test:1"],
      ]);
      // An archive's rows stand on their own: each with its ingestion time, its source by name (columns 6 and 12).
      const partition = (
        await client.query(
          `SELECT DISTINCT tableoid::regclass::text AS t FROM straggler.bronze_events WHERE pipeline = $1`,
          [p.name],
        )
      ).rows[0].t.replace("straggler.", "");
      const chunks: Buffer[] = [];
      for await (const chunk of client.query(copyTo(archiveCopySql(`"${partition}"`, `'${p.name}'`))))
        chunks.push(chunk as Buffer);
      const archived = Buffer.concat(chunks)
        .toString("utf8")
        .trimEnd()
        .split("\n")
        .map((l) => l.split("\t"));
      expect(archived.map((f) => [f[2], f[5], f[11]])).toEqual([
        ["a", "2026-10-01 11:00:00+00", "test:1"],
        ["b", "2026-10-01 12:00:00+00", "test:1"],
        ["c", "2026-10-01 12:00:00+00", "test:1"],
      ]);
    } finally {
      client.release();
    }
  });

  it("gives back a raw line whose field is the ingestion time from the source's record", async () => {
    const { pool } = await getDb();
    const p = pipelineOf("it-raw", true, "csv");
    const dir = mkdtempSync(path.join(tmpdir(), "it-raw-"));
    try {
      const file = path.join(dir, "a.csv");
      const lines = [`e1,2026-10-01T11:50:00.000Z,${T},4.5`, `e2,2026-10-01T11:51:00.000Z,2026-10-01T11:59:00.000Z,5`];
      writeFileSync(file, ["id,t,it,v", ...lines].join("\n") + "\n");
      await landFile(pool, p, file, "a.csv", { landingTimeMs: T_MS });
      const { rows } = await pool.query(
        `SELECT b.raw AS stored, b.ingestion_time, v.raw FROM straggler.bronze_events b JOIN straggler.bronze v USING (seq)
          WHERE b.pipeline = $1 ORDER BY seq`,
        [p.name],
      );
      expect(rows.map((x) => [x.stored, x.ingestion_time, x.raw])).toEqual([
        [null, null, lines[0]],
        [null, "2026-10-01T11:59:00.000Z", lines[1]],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a source recorded otherwise holds the time it was recorded at, which never changes; one recorded with another time is not landed into", async () => {
    const { pool } = await getDb();
    const p = pipelineOf("it-recorded", false);
    // A row written by hand (docs/concepts-and-semantics.md) with no ingestion time: its source's, never none.
    const hand = await pool.query(
      `INSERT INTO straggler.bronze_events (pipeline, source_id, source_line, event_id, event_time, group_key, value, status, raw)
       VALUES ($1, straggler.bronze_source_id($1, 'by-hand'), 1, 'h', '2026-10-01T11:40:00Z', '', 1, 'accepted', '{}')
       RETURNING seq::int`,
      [p.name],
    );
    const recorded = await pool.query(
      `SELECT ingestion_time FROM straggler.bronze_sources WHERE pipeline = $1 AND name = 'by-hand'`,
      [p.name],
    );
    const view = await pool.query(`SELECT ingestion_time FROM straggler.bronze WHERE seq = $1`, [hand.rows[0].seq]);
    expect(view.rows[0].ingestion_time).toBe(recorded.rows[0].ingestion_time);
    expect(typeof recorded.rows[0].ingestion_time).toBe("string");
    await expect(
      pool.query(
        `UPDATE straggler.bronze_sources SET ingestion_time = ingestion_time + interval '1 hour' WHERE pipeline = $1 AND name = 'by-hand'`,
        [p.name],
      ),
    ).rejects.toThrow(
      "bronze source by-hand of pipeline it-recorded: its ingestion time (the one its rows that store none have) never changes",
    );
    // 'taken' holds another time and no landing: the rows would read 08:00, so nothing lands.
    await pool.query(
      `INSERT INTO straggler.bronze_sources (pipeline, name, ingestion_time) VALUES ($1, 'taken', '2026-10-01T08:00:00Z')`,
      [p.name],
    );
    await expect(
      landRecords(pool, p, "taken", jsonl([{ id: "y", t: "2026-10-01T11:51:00Z", v: "2" }]), { landingTimeMs: T_MS }),
    ).rejects.toThrow("taken: recorded by another landing that then disappeared");
    const n = await pool.query(`SELECT count(*)::int AS n FROM straggler.bronze_events WHERE pipeline = $1`, [p.name]);
    expect(n.rows[0].n).toBe(1);
  });
});
