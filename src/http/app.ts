/**
 * The REST API (express). Requests are validated with zod; errors are JSON
 * `{ error, message }` with a 4xx status naming the bad field (503 while the
 * database is away), never a stack trace. Mutating routes need the bearer
 * token. `GET /openapi.json` describes every route.
 */
import express, { type NextFunction, type Request, type Response } from "express";
import { z } from "zod";
import type { PipelineConfig } from "../config/pipelines.js";
import { runCorrection, type CorrectionSummary } from "../correction/correct.js";
import { reconcile } from "../correction/reconcile.js";
import { isoToUs } from "../core/timestamps.js";
import type { Pool } from "../db/pool.js";
import { landRecords, SourceConflictError } from "../ingest/copyToBronze.js";
import { readOptionsFor } from "../ingest/readers.js";
import type { Logger } from "../log.js";
import { pipelineStatus, sourceCounts } from "../stream/status.js";
import { requireToken } from "./auth.js";
import { spoolBody } from "./body.js";
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
  /** Connections for `GET /health` only (the service gives it a pool of its own); default `pool`. */
  healthPool?: Pool;
  /** Runs a correction (the service serialises it with its schedule). */
  correct?: (p: PipelineConfig, req: Parameters<typeof runCorrection>[2]) => Promise<CorrectionSummary>;
}

type Handler = (req: Request, res: Response) => Promise<void>;
const wrap = (h: Handler) => (req: Request, res: Response, next: NextFunction) => h(req, res).catch(next);

/** `GET /health` answers 503 when `SELECT 1` takes longer, ms. */
const HEALTH_QUERY_TIMEOUT_MS = 2_000;

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;

/** Media types an events body may be sent as (JSON array or NDJSON); none at all is read as both. */
const EVENT_TYPES = ["application/json", "application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines", "text/plain"];

/** 415 unless the events body's Content-Type is one of EVENT_TYPES (or `…+json`) in UTF-8. */
function checkEventsType(req: Request): void {
  const header = req.get("content-type");
  if (header === undefined) return;
  const [type = "", ...params] = header.split(";").map((x) => x.trim().toLowerCase());
  if (!EVENT_TYPES.includes(type) && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    throw new HttpError(415, "unsupported_media_type", `Content-Type ${JSON.stringify(header.slice(0, 100))}: expected a JSON array (application/json) or NDJSON (application/x-ndjson)`);
  }
  const charset = params.find((x) => x.startsWith("charset="))?.slice(8).replace(/"/g, "");
  if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
    throw new HttpError(415, "unsupported_media_type", `Content-Type charset ${JSON.stringify(charset.slice(0, 40))}: events bodies are read as UTF-8`);
  }
}

/** True when the request carries a body (a non-zero Content-Length, or a chunked one). */
function hasBody(req: Request): boolean {
  return req.get("transfer-encoding") !== undefined || (req.get("content-length") !== undefined && req.get("content-length") !== "0");
}

/** A route without query parameters: one given is a 400, never silently ignored. */
const noQuery = z.strictObject({});

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

  // Health has its own connections: it answers while every pooled one is busy.
  const healthPool = deps.healthPool ?? pool;
  app.get("/health", async (_req, res) => {
    try {
      // A database that accepts connections but does not answer is unreachable too.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        healthPool.query("SELECT 1").finally(() => clearTimeout(timer)),
        new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("health query timed out")), HEALTH_QUERY_TIMEOUT_MS))),
      ]);
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
    wrap(async (req, res) => {
      parseOr400(noQuery, req.query, "query");
      const all = await Promise.all(deps.pipelines.map((p) => pipelineStatus(pool, p.name)));
      res.json(
        all.map((s) => ({
          pipeline: s.pipeline,
          watermark: s.checkpoint?.watermark ?? null,
          maxEventTime: s.checkpoint?.maxEventTime ?? null,
          /** How far the watermark trails the newest event, ms (a decimal when microseconds differ). */
          watermarkLagMs: s.checkpoint?.watermark && s.checkpoint.maxEventTime ? Number(isoToUs(s.checkpoint.maxEventTime) - isoToUs(s.checkpoint.watermark)) / 1000 : null,
          backlogRows: s.backlogRows,
          ledger: s.ledger,
          windows: s.windows,
          numRowsDroppedByWatermark: s.numRowsDroppedByWatermark,
          sources: s.sources,
          failedWindows: s.failedWindows,
        })),
      );
    }),
  );

  app.post(
    "/pipelines/:pipeline/events",
    auth,
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      parseOr400(noQuery, req.query, "query");
      const key = req.get("idempotency-key");
      if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) throw new HttpError(400, "invalid_request", "Idempotency-Key: expected 1-128 characters of A-Z a-z 0-9 . _ : -");
      checkEventsType(req);
      const body = await spoolBody(req, limitBytes, readOptionsFor(p));
      try {
        // Without a key the source is made up here, before anything lands, so that a lost
        // answer to COMMIT can be looked up by it.
        const source = `http:${key ?? crypto.randomUUID()}`;
        const r = await landRecords(pool, p, source, body.records(), { landingTimeMs: Date.now(), requestSha256: body.sha256, newSource: key === undefined }).catch((e: unknown) => {
          if (e instanceof SourceConflictError) {
            throw new HttpError(
              422,
              "idempotency_key_reused",
              `Idempotency-Key ${JSON.stringify(key)} was already used in pipeline ${p.name} with a different request body; nothing landed. A retry must send the same body; new events need a new key`,
            );
          }
          throw e;
        });
        res.status(r.alreadyLanded ? 200 : 201).json({
          pipeline: p.name, source: r.source, alreadyLanded: r.alreadyLanded, landed: r.landed, accepted: r.accepted, quarantined: r.quarantined, byReason: r.byReason,
          firstSeq: r.firstSeq, lastSeq: r.lastSeq,
        });
      } finally {
        await body.remove();
      }
    }),
  );

  app.post(
    "/pipelines/:pipeline/recompute",
    auth,
    (req, _res, next) => {
      // A body in another type would be skipped by the JSON parser and the range silently ignored.
      if (hasBody(req) && !req.is("application/json")) {
        const type = req.get("content-type");
        next(new HttpError(415, "unsupported_media_type", `Content-Type ${type === undefined ? "missing" : JSON.stringify(type.slice(0, 100))}: a recompute body must be application/json`));
      } else next();
    },
    express.json({ limit: "64kb" }),
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      parseOr400(noQuery, req.query, "query");
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
            AND ($4::text IS NULL OR group_key = $4) AND ($5::text IS NULL OR status = $5) AND (NOT $7 OR group_key IS NULL)
          ORDER BY window_start, group_key LIMIT $6`,
        [p.name, q.from ?? null, q.to ?? null, q.key ?? null, q.status ?? null, q.limit, q.nullKey === true],
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
    "/pipelines/:pipeline/failed-windows",
    wrap(async (req, res) => {
      const p = pipelineOf(req);
      const q = parseOr400(limitQuery, req.query, "query");
      const { rows } = await pool.query("SELECT * FROM straggler.failed_windows WHERE pipeline = $1 ORDER BY failure_id DESC LIMIT $2", [p.name, q.limit]);
      res.json(rows);
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
      parseOr400(noQuery, req.query, "query");
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
