/**
 * Probes, public (no token, outside the read budget: src/http/readBudget.ts UNBUDGETED), on the
 * health pool, which answers while every other connection is busy:
 * - `GET /livez`: liveness, 200 while the process serves HTTP; it never asks the database (a
 *   database outage is no reason to restart the service: Kubernetes' livenessProbe).
 * - `GET /readyz`: readiness, 200 when the database answers and every migration this process
 *   knows is applied; else 503 with the reason (readinessProbe, Docker's HEALTHCHECK).
 * - `GET /health`: the database answers (kept as it was).
 * docs/containers.md "Probes".
 */
import { z } from "zod";
import { MIGRATIONS_DIR, readJournalMigrations } from "../db/migrate.js";
import { ping } from "../db/sql/observe/ping.js";
import { readAppliedMigrations } from "../db/sql/observe/readAppliedMigrations.js";
import type { Pool } from "../db/pool.js";
import type { RouteContext } from "./context.js";
import { parseOr400 } from "./errors.js";
import { errors, json } from "./openapi.js";
import { healthResponse } from "./responses.js";
import { noQuery } from "./schemas.js";

/** A probe's database query answers 503 when it takes longer, ms. */
const PROBE_QUERY_TIMEOUT_MS = 2_000;

const livenessResponse = z.object({ status: z.literal("ok") });

export const readinessResponse = z.object({
  status: z.enum(["ready", "not_ready"]),
  database: z.enum(["reachable", "unreachable"]),
  /** `unknown` while the database does not answer. */
  migrations: z.enum(["applied", "pending", "unknown"]),
  /** The migrations (tags, journal order) this process knows and the database has not applied. */
  pending: z.array(z.string()),
  /** Why it is not ready, in words; absent when ready. */
  reason: z.string().optional(),
});

type Readiness = z.infer<typeof readinessResponse>;

/** `work()`, or a rejection after PROBE_QUERY_TIMEOUT_MS: a database that accepts connections but does not answer is unreachable too. */
async function withinTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error("probe query timed out")), PROBE_QUERY_TIMEOUT_MS)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The service's readiness on `pool` against `journal` (tags and `when`s of the migrations this process ships). */
export async function readiness(
  pool: Pool,
  journal: readonly { tag: string; folderMillis: number }[],
): Promise<Readiness> {
  let applied: Set<number>;
  try {
    applied = await withinTimeout(readAppliedMigrations(pool));
  } catch (e) {
    return {
      status: "not_ready",
      database: "unreachable",
      migrations: "unknown",
      pending: [],
      reason: `the database does not answer: ${(e as Error).message}`,
    };
  }
  const pending = journal.filter((m) => !applied.has(m.folderMillis)).map((m) => m.tag);
  if (pending.length > 0) {
    return {
      status: "not_ready",
      database: "reachable",
      migrations: "pending",
      pending,
      reason: `${pending.length} migration(s) not applied: run \`straggler migrate\` (the service applies them when it starts)`,
    };
  }
  return { status: "ready", database: "reachable", migrations: "applied", pending: [] };
}

export function addHealthRoutes(ctx: RouteContext): void {
  const { routes, deps } = ctx;
  const healthPool = deps.healthPool ?? deps.pool;
  const journal = readJournalMigrations(MIGRATIONS_DIR).map((m) => ({ tag: m.tag, folderMillis: m.folderMillis }));
  const probe = { request: { query: noQuery } };

  routes.add(
    {
      method: "get",
      path: "/livez",
      operationId: "getLiveness",
      summary: "Liveness: the process serves HTTP (never asks the database)",
      ...probe,
      responses: { 200: json("alive", livenessResponse), ...errors([400]) },
    },
    (req, res) => {
      parseOr400(noQuery, req.query, "query");
      res.json({ status: "ok" });
    },
  );
  routes.add(
    {
      method: "get",
      path: "/readyz",
      operationId: "getReadiness",
      summary: "Readiness: the database answers and every migration is applied",
      ...probe,
      responses: {
        200: json("ready", readinessResponse),
        503: json(
          "not ready: the database does not answer, or migrations are pending (Retry-After)",
          readinessResponse,
        ),
        ...errors([400]),
      },
    },
    async (req, res) => {
      parseOr400(noQuery, req.query, "query");
      const r = await readiness(healthPool, journal);
      if (r.status === "ready") res.json(r);
      else res.set("Retry-After", "5").status(503).json(r);
    },
  );
  routes.add(
    {
      method: "get",
      path: "/health",
      operationId: "getHealth",
      summary: "Database reachable?",
      ...probe,
      responses: {
        200: json("healthy", healthResponse),
        503: json("database unreachable", healthResponse),
        ...errors([400]),
      },
    },
    async (req, res) => {
      parseOr400(noQuery, req.query, "query");
      try {
        await withinTimeout(ping(healthPool));
        res.json({ status: "ok", database: "reachable" });
      } catch {
        res.set("Retry-After", "5").status(503).json({ status: "unhealthy", database: "unreachable" });
      }
    },
  );
}
