/**
 * The REST API (express). Requests are validated with zod; errors are JSON
 * `{ error, message }` with a 4xx status naming the bad field (503 while the
 * database is away), never a stack trace. Mutating routes need the bearer
 * token. `GET /openapi.json` describes every route.
 */
import { Readable } from "node:stream";
import express, { type NextFunction, type Request, type Response } from "express";
import { isLosslessNumber, parse as parseJson, stringify as stringifyJson } from "lossless-json";
import type { PipelineConfig } from "../config/pipelines.js";
import { runCorrection, type CorrectionSummary } from "../correction/correct.js";
import { reconcile } from "../correction/reconcile.js";
import type { Pool } from "../db/pool.js";
import { landRecords } from "../ingest/copyToBronze.js";
import { jsonDeeperThan, MAX_JSON_DEPTH, readOptionsFor, readRecords } from "../ingest/readers.js";
import type { Logger } from "../log.js";
import { pipelineStatus, sourceCounts } from "../stream/status.js";
import { requireToken } from "./auth.js";
import { errorHandler, HttpError, parseOr400 } from "./errors.js";
import { openApiDocument } from "./openapi.js";
import { limitQuery, quarantineQuery, rangeQuery, recomputeBody, runIdParam, sourcesQuery, windowsQuery } from "./schemas.js";

export interface ApiDeps {
  pool: Pool;
  pipelines: PipelineConfig[];
  log: Logger;
  token: string | undefined;
  /** Largest accepted request body, bytes. */
  maxBodyBytes?: number;
  /** Runs a correction (the service serialises it with its schedule). */
  correct?: (p: PipelineConfig, req: Parameters<typeof runCorrection>[2]) => Promise<CorrectionSummary>;
}

type Handler = (req: Request, res: Response) => Promise<void>;
const wrap = (h: Handler) => (req: Request, res: Response, next: NextFunction) => h(req, res).catch(next);

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;

/** A request body (JSON array or NDJSON) as JSON lines, numbers kept exactly. */
function bodyAsLines(text: string): string {
  const trimmed = text.trimStart();
  if (!trimmed.startsWith("[")) return text;
  // Parsing and re-serialising recurse: refuse depth first, so a deep body is a 400, not a stack overflow.
  if (jsonDeeperThan(trimmed, MAX_JSON_DEPTH + 1)) {
    throw new HttpError(400, "invalid_request", `body: invalid JSON array: an element is nested deeper than ${MAX_JSON_DEPTH} levels`);
  }
  let value: unknown;
  try {
    value = parseJson(trimmed);
  } catch (e) {
    throw new HttpError(400, "invalid_request", `body: invalid JSON array: ${(e as Error).message.slice(0, 200)}`);
  }
  if (!Array.isArray(value)) throw new HttpError(400, "invalid_request", "body: expected a JSON array of events or NDJSON");
  // Each element becomes one line; a non-object element lands as a MALFORMED record.
  return value.map((v) => (isLosslessNumber(v) ? v.toString() : (stringifyJson(v) ?? "null"))).join("\n");
}

export function createApp(deps: ApiDeps): express.Express {
  const { pool, log } = deps;
  const app = express();
  app.disable("x-powered-by");
  app.set("query parser", "simple");
  const byName = new Map(deps.pipelines.map((p) => [p.name, p]));
  const pipelineOf = (req: Request): PipelineConfig => {
    const p = byName.get(String(req.params.pipeline));
    if (!p) throw new HttpError(404, "not_found", `no pipeline named ${JSON.stringify(String(req.params.pipeline).slice(0, 100))}`);
    return p;
  };
  const auth = requireToken(deps.token);
  const correct = deps.correct ?? ((p, r) => runCorrection(pool, p, r));
  const limitBytes = deps.maxBodyBytes ?? 16 * 1024 * 1024;

  app.get("/health", async (_req, res) => {
    try {
      await pool.query("SELECT 1");
      res.json({ status: "ok", database: "reachable" });
    } catch {
      res.set("Retry-After", "5").status(503).json({ status: "unhealthy", database: "unreachable" });
    }
  });

  app.get("/openapi.json", (_req, res) => {
    res.json(openApiDocument());
  });

  app.get(
    "/pipelines",
    wrap(async (_req, res) => {
      const all = await Promise.all(deps.pipelines.map((p) => pipelineStatus(pool, p.name)));
      res.json(
        all.map((s) => ({
          pipeline: s.pipeline,
          watermark: s.checkpoint?.watermark ?? null,
          maxEventTime: s.checkpoint?.maxEventTime ?? null,
          /** How far the watermark trails the newest event, ms. */
          watermarkLagMs: s.checkpoint?.watermark && s.checkpoint.maxEventTime ? Date.parse(s.checkpoint.maxEventTime) - Date.parse(s.checkpoint.watermark) : null,
          backlogRows: s.backlogRows,
          ledger: s.ledger,
          windows: s.windows,
          numRowsDroppedByWatermark: s.numRowsDroppedByWatermark,
          sources: s.sources,
        })),
      );
    }),
  );

  app.post(
    "/pipelines/:pipeline/events",
    auth,
    express.text({ type: () => true, limit: limitBytes }),
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const text = typeof req.body === "string" ? req.body : "";
      if (text.trim() === "") throw new HttpError(400, "invalid_request", "body: expected a JSON array of events or NDJSON, got an empty body");
      const key = req.get("idempotency-key");
      if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) throw new HttpError(400, "invalid_request", "Idempotency-Key: expected 1-128 characters of A-Z a-z 0-9 . _ : -");
      const source = `http:${key ?? crypto.randomUUID()}`;
      const r = await landRecords(pool, p, source, readRecords(Readable.from([bodyAsLines(text)]), "jsonl", readOptionsFor(p)), { landingTimeMs: Date.now() });
      res.status(r.alreadyLanded ? 200 : 201).json({
        pipeline: p.name, source: r.source, alreadyLanded: r.alreadyLanded, landed: r.landed, accepted: r.accepted, quarantined: r.quarantined, byReason: r.byReason,
        firstSeq: r.firstSeq, lastSeq: r.lastSeq,
      });
    }),
  );

  app.post(
    "/pipelines/:pipeline/recompute",
    auth,
    express.json({ limit: "64kb" }),
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const body = parseOr400(recomputeBody, req.body ?? {}, "body");
      const summary = await correct(p, { trigger: "api", range: body.from && body.to ? { from: body.from, to: body.to } : undefined, keys: body.keys });
      res.status(summary.status === "failed" ? 500 : 200).json(summary);
    }),
  );

  app.get(
    "/pipelines/:pipeline/windows",
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const q = parseOr400(windowsQuery, req.query, "query");
      const { rows } = await pool.query(
        `SELECT group_key, window_start, window_end, event_count, value_sum, value_min, value_max, value_avg, status, revision, updated_at, awaiting_correction
           FROM straggler.window_results
          WHERE pipeline = $1 AND ($2::timestamptz IS NULL OR window_end > $2) AND ($3::timestamptz IS NULL OR window_start < $3)
            AND ($4::text IS NULL OR group_key = $4) AND ($5::text IS NULL OR status = $5)
          ORDER BY window_start, group_key LIMIT $6`,
        [p.name, q.from ?? null, q.to ?? null, q.key ?? null, q.status ?? null, q.limit],
      );
      res.json(rows);
    }),
  );

  app.get(
    "/pipelines/:pipeline/progress",
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const q = parseOr400(limitQuery, req.query, "query");
      const { rows } = await pool.query("SELECT * FROM straggler.stream_progress WHERE pipeline = $1 ORDER BY batch_id DESC LIMIT $2", [p.name, q.limit]);
      res.json(rows);
    }),
  );

  app.get(
    "/pipelines/:pipeline/quarantine",
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const q = parseOr400(quarantineQuery, req.query, "query");
      const [counts, rows] = await Promise.all([
        pool.query("SELECT reason, count(*)::int AS n FROM straggler.quarantine WHERE pipeline = $1 GROUP BY reason ORDER BY reason", [p.name]),
        pool.query(
          `SELECT seq, event_id, reason, detail, event_time, ingestion_time, source, source_line, landed_at, raw FROM straggler.quarantine
            WHERE pipeline = $1 AND ($2::text IS NULL OR reason = $2) ORDER BY seq DESC LIMIT $3`,
          [p.name, q.reason ?? null, q.limit],
        ),
      ]);
      res.json({ byReason: Object.fromEntries(counts.rows.map((r) => [r.reason, r.n])), rows: rows.rows });
    }),
  );

  app.get(
    "/pipelines/:pipeline/sources",
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const q = parseOr400(sourcesQuery, req.query, "query");
      const [counts, rows] = await Promise.all([
        sourceCounts(pool, p.name),
        pool.query(
          `SELECT source, kind, state, reason, size_bytes, mtime, sha256, rows, accepted, quarantined, landed_bytes, first_seen, last_seen, state_since, landed_at
             FROM straggler.sources WHERE pipeline = $1 AND ($2::text IS NULL OR state = $2) AND ($3::text IS NULL OR kind = $3)
            ORDER BY last_seen DESC, source LIMIT $4`,
          [p.name, q.state ?? null, q.kind ?? null, q.limit],
        ),
      ]);
      res.json({ byState: counts, rows: rows.rows });
    }),
  );

  app.get(
    "/pipelines/:pipeline/corrections",
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const q = parseOr400(limitQuery, req.query, "query");
      const { rows } = await pool.query("SELECT * FROM straggler.correction_history WHERE pipeline = $1 ORDER BY run_id DESC LIMIT $2", [p.name, q.limit]);
      res.json(rows);
    }),
  );

  app.get(
    "/pipelines/:pipeline/corrections/:runId",
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const runId = parseOr400(runIdParam, req.params.runId, "path.runId");
      const run = await pool.query("SELECT * FROM straggler.correction_history WHERE pipeline = $1 AND run_id = $2", [p.name, runId]);
      if (run.rowCount === 0) throw new HttpError(404, "not_found", `no correction run ${runId} for pipeline ${p.name}`);
      const changes = await pool.query("SELECT * FROM straggler.correction_audit WHERE run_id = $1 ORDER BY group_key, window_start", [runId]);
      res.json({ run: run.rows[0], changes: changes.rows });
    }),
  );

  app.get(
    "/pipelines/:pipeline/reconcile",
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const q = parseOr400(rangeQuery, req.query, "query");
      res.json(await reconcile(pool, p, q.from && q.to ? { from: q.from, to: q.to } : undefined));
    }),
  );

  app.use((_req, res) => {
    res.status(404).json({ error: "not_found", message: "no such route; see GET /openapi.json" });
  });
  app.use(errorHandler(log));
  return app;
}
