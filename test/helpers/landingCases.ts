/**
 * The harness of the landing-case suites (hostileInput.test.ts,
 * producerInputs.test.ts): a case is input batches landed for real into
 * PostgreSQL (`landStream`, or `landFile` from real bytes on disk) and the
 * exact bronze rows expected; every case also checks that the ledger
 * balances against the record lines counted here without the project's
 * reader, runs one micro-batch and reconciles.
 *
 * Call `landingCases(prefix)` once at the top of a test file: it registers the
 * test database's hooks and a temporary folder removed after the file.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, expect } from "vitest";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { reconcile } from "../../src/correction/reconcile.js";
import { landFile, landStream } from "../../src/ingest/landFile.js";
import { runBatch } from "../../src/stream/runBatch.js";
import { useTestDatabase } from "./db.js";
import { pipeline } from "./fixtures.js";

export type Format = "jsonl" | "csv";
export type Reason =
  | "MALFORMED"
  | "NULL_TS"
  | "PARSE_FAIL"
  | "FUTURE_TS"
  | "TOO_OLD"
  | "INVALID_VALUE"
  | "DUPLICATE"
  | "AMENDED_DUPLICATE";

/** One expected bronze row. `reason` absent = accepted. Optional fields are compared only when given. */
export interface Row {
  line: number;
  reason?: Reason;
  detail?: string;
  eventTime?: string | null;
  value?: string | null;
  key?: string;
  eventId?: string;
  raw?: string;
}

export type Input = string | Buffer | Buffer[]; // Buffer[]: the chunks the stream delivers

export interface Case {
  format?: Format;
  /** stream: landStream (default); file: written to disk and landed with landFile. */
  via?: "stream" | "file";
  /** Replaces top-level sections of the base pipeline (fields, timestamps, admission). */
  over?: Record<string, unknown>;
  /** One landing per element (a file or a stream each). */
  batches: Input[];
  rows: Row[];
  /** Records sent, when not one per non-blank line (a quoted CSV field spanning lines); counted by `recordLines` otherwise. */
  records?: number;
  /** Expected `straggler.window_results` after one micro-batch: [group key (null: the null group), event count, value sum], any order. */
  windows?: Array<[string | null, number, string | null]>;
}

/** Ingestion time of records that carry none (epoch ms). */
export const LANDED = Date.UTC(2024, 4, 1, 12, 0);
/** The base records' event time. */
export const TS = "2024-05-01T10:00:00Z";
export const HEADER = "id,ts,amount,key";
export const BASE_FIELDS = { eventId: "id", eventTime: "ts", value: "amount", groupKey: ["key"] };

/** A JSON line with the base fields; `extra` replaces or adds fields (undefined removes one). */
export function ev(id: unknown, extra: Record<string, unknown> = {}): string {
  const o: Record<string, unknown> = { id, ts: TS, amount: 1, key: "k", ...extra };
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return JSON.stringify(o);
}

export const chunksOf = (input: Input): Buffer[] =>
  Array.isArray(input) ? input : [Buffer.isBuffer(input) ? input : Buffer.from(input, "utf8")];

/**
 * Record lines in `input`, counted here without the project's reader: lines
 * end at LF, CRLF or CR; blank (whitespace-only) lines and a CSV header are
 * not records. A BOM at the start counts as whitespace.
 */
export function recordLines(input: Input, format: Format): number {
  const text = Buffer.concat(chunksOf(input)).toString("utf8");
  const nonBlank = text.split(/\r\n|\r|\n/).filter((l) => l.trim() !== "").length;
  return format === "csv" ? Math.max(0, nonBlank - 1) : nonBlank;
}

export const lines = (...ls: string[]) => ls.join("\n") + "\n";
export const csv = (...ls: string[]) => [HEADER, ...ls].join("\n") + "\n";

interface BronzeOut {
  source_line: number;
  status: string;
  reason: string | null;
  detail: string | null;
  event_time: string | null;
  value: string | null;
  group_key: string;
  event_id: string;
  raw: string;
}

/**
 * The harness for one test file: pipelines named `${prefix}-N`, landed from `prefix` (the stream's source label).
 * @returns the test database, the file's temporary folder, `basePipeline`, `pipelineName` and `runCase`
 */
export function landingCases(prefix: string) {
  const getDb = useTestDatabase();
  const DIR = mkdtempSync(path.join(tmpdir(), `straggler-${prefix}-`));
  afterAll(() => rmSync(DIR, { recursive: true, force: true }));
  let caseNo = 0;
  const pipelineName = () => `${prefix}-${++caseNo}`;

  function basePipeline(name: string, format: Format, over: Record<string, unknown> = {}): PipelineConfig {
    return pipeline({
      name,
      source: { landingDir: path.join(DIR, name), format },
      fields: BASE_FIELDS,
      timestamps: { format: "iso8601" },
      window: { type: "tumbling", size: "1 hour" },
      watermark: { delay: "1 hour" },
      // Records are dated around LANDED and up to a day after it: these cases are about parsing, not the future-skew guard.
      admission: { maxFutureSkew: null },
      ...over,
    });
  }

  /** Lands `c`, checks every bronze row, the ledger, one micro-batch and reconcile. Returns the pipeline. */
  async function runCase(c: Case): Promise<PipelineConfig> {
    const { pool } = await getDb();
    const format = c.format ?? "jsonl";
    const p = basePipeline(pipelineName(), format, c.over);
    for (const [i, input] of c.batches.entries()) {
      if (c.via === "file") {
        const name = `${i}.${format === "csv" ? "csv" : "jsonl"}`;
        const file = path.join(DIR, `${p.name}-${name}`);
        writeFileSync(file, Buffer.concat(chunksOf(input)));
        const r = await landFile(pool, p, file, name, { landingTimeMs: LANDED });
        expect(r.alreadyLanded).toBe(false);
      } else {
        await landStream(pool, p, Readable.from(chunksOf(input)), prefix, LANDED);
      }
    }
    const { rows } = await pool.query<BronzeOut>(
      `SELECT source_line, status, reason, detail, event_time, value, group_key, event_id, raw
         FROM straggler.bronze WHERE pipeline = $1 ORDER BY seq`,
      [p.name],
    );
    const project = (r: BronzeOut, want: Row) => ({
      line: r.source_line,
      status: r.status,
      reason: r.reason,
      detail: r.detail,
      ...("eventTime" in want ? { eventTime: r.event_time } : {}),
      ...("value" in want ? { value: r.value } : {}),
      ...("key" in want ? { key: r.group_key } : {}),
      ...("eventId" in want ? { eventId: r.event_id } : {}),
      ...("raw" in want ? { raw: r.raw } : {}),
    });
    const expected = c.rows.map((w) => {
      const { line, reason, detail, ...rest } = w;
      return {
        line,
        status: reason ? "quarantined" : "accepted",
        reason: reason ?? null,
        detail: reason ? detail : null,
        ...rest,
      };
    });
    expect(rows.map((r, i) => project(r, c.rows[i] ?? { line: 0 }))).toEqual(expected);

    // The ledger: every non-blank record line sent landed once, accepted or quarantined.
    const sent = c.records ?? c.batches.reduce((n, b) => n + recordLines(b, format), 0);
    const accepted = c.rows.filter((r) => !r.reason).length;
    const ledger = (
      await pool.query(
        "SELECT landed::int, accepted::int, quarantined::int FROM straggler.ledger WHERE pipeline = $1",
        [p.name],
      )
    ).rows[0] ?? { landed: 0, accepted: 0, quarantined: 0 };
    expect(ledger).toEqual({ landed: sent, accepted, quarantined: sent - accepted });
    expect(ledger.accepted + ledger.quarantined).toBe(ledger.landed);

    // The stream digests whatever was accepted; reconcile agrees and balances.
    await runBatch(pool, p, "once");
    const rec = await reconcile(pool, p);
    expect(rec.ledger).toEqual({
      landed: sent,
      accepted,
      quarantined: sent - accepted,
      landedBySource: sent,
      balanced: true,
    });
    expect(rec.ok).toBe(true);

    if (c.windows) {
      const w = await pool.query<{ group_key: string | null; event_count: number; value_sum: string | null }>(
        "SELECT group_key, event_count, value_sum FROM straggler.window_results WHERE pipeline = $1",
        [p.name],
      );
      type W = [string | null, number, string | null];
      const byKey = (a: W, b: W) => (String(a[0]) < String(b[0]) ? -1 : String(a[0]) > String(b[0]) ? 1 : 0);
      expect(w.rows.map((r) => [r.group_key, Number(r.event_count), r.value_sum] as W).sort(byKey)).toEqual(
        [...c.windows].sort(byKey),
      );
    }
    return p;
  }

  return { getDb, DIR, pipelineName, basePipeline, runCase };
}
