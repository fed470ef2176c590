/**
 * The read budget of the REST API: reads (every `GET` but the probes `/livez`, `/readyz`, `/health` and `/openapi.json`: the
 * pipelines' routes, `/metrics`, the UI pages) never take the connections or the time that
 * landing and the stream need.
 *
 * - Reads run on a pool of their own (`STRAGGLER_READ_CONNECTIONS`, default 2), whose sessions
 *   have a `statement_timeout` (`STRAGGLER_READ_TIMEOUT`, default 30 seconds): a read query past
 *   it is cancelled by the server and answered 503 `read_timeout`.
 * - At most `STRAGGLER_READ_CONCURRENCY` reads (default 4) are answered at once; one more is
 *   answered at once with 503 `busy` and `Retry-After: 1`, before it costs anything.
 * - A read whose client hangs up has its running queries cancelled (`pg_cancel_backend` over the
 *   health connections) and starts no new one.
 * - With `STRAGGLER_READ_TOKEN` set, a read needs it, or the write token, as its bearer token (401
 *   otherwise); unset, reads are open.
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { Pool, PoolClient } from "../db/pool.js";
import { tokensEqual, unauthorized } from "./auth.js";
import { ClientGoneError, HttpError } from "./errors.js";

/** Default reads answered at once. */
const READ_CONCURRENCY_DEFAULT = 4;

/** Paths that are not reads in this sense: answered without the budget or the read token (the OpenAPI document gives them `security: []`). */
export const UNBUDGETED = new Set<string>(["/livez", "/readyz", "/health", "/openapi.json"]);

/**
 * Long-lived reads (the change feed's Server-Sent Events, src/http/feedRoutes.ts): they need the
 * read token and run on the read pool, but are not counted among the reads answered at once (a
 * stream holds no connection between its reads of the feed, and would otherwise hold a slot for good).
 */
const STREAMS = /^\/pipelines\/[^/]+\/changes\/stream\/?$/;

export interface ReadBudgetOptions {
  /** The read pool; the requests' queries run on it. */
  pool: Pool;
  /** Connections to cancel a hung-up read's queries on (the health pool). */
  cancelPool: Pool;
  /** Reads answered at once; default `READ_CONCURRENCY_DEFAULT`. */
  concurrency?: number;
  /** The read token (`STRAGGLER_READ_TOKEN`); undefined: reads are open. */
  readToken?: string | undefined;
  /** The write token (`STRAGGLER_API_TOKEN`), accepted for reads too. */
  writeToken?: string | undefined;
}

const READS = Symbol("reads");

/**
 * The pool a read request's queries run on: the read budget's pool scoped to the request (its
 * queries are cancelled when the client hangs up), or `fallback` where the app has no read
 * budget (tests that build the app on one pool).
 */
export function readsOf(req: Request, fallback: Pool): Pool {
  return (req as unknown as Record<symbol, Pool | undefined>)[READS] ?? fallback;
}

/**
 * `pool` for one request: every client it hands out is tracked while checked out, and none is
 * handed out once `gone()` is true (`ClientGoneError`). It is `pool` in every other respect
 * (its prototype), so code taking a `Pool` (transactions included) runs on it unchanged.
 */
function scopedPool(pool: Pool, busy: Set<PoolClient>, gone: () => boolean): Pool {
  const scoped = Object.create(pool) as Pool;
  const track = (client: PoolClient): PoolClient => {
    busy.add(client);
    const release = client.release;
    client.release = (err?: Error | boolean) => {
      busy.delete(client);
      client.release = release;
      return release.call(client, err);
    };
    return client;
  };
  const connect = async (): Promise<PoolClient> => {
    if (gone()) throw new ClientGoneError();
    const client = await pool.connect();
    if (gone()) {
      client.release();
      throw new ClientGoneError();
    }
    return track(client);
  };
  scoped.connect = connect as Pool["connect"];
  scoped.query = (async (...args: unknown[]) => {
    const client = await connect();
    try {
      return await (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
    } finally {
      client.release();
    }
  }) as Pool["query"];
  return scoped;
}

/** The bearer token of `req`, or undefined. */
const bearerOf = (req: Request) => /^Bearer\s+(\S+)$/i.exec(req.get("authorization") ?? "")?.[1];

/**
 * The read budget as express middleware (mount before the routes). A request that is not a read
 * passes untouched.
 */
export function readBudget(options: ReadBudgetOptions): RequestHandler {
  const limit = options.concurrency ?? READ_CONCURRENCY_DEFAULT;
  let running = 0;
  return (req: Request, res: Response, next: NextFunction): void => {
    if ((req.method !== "GET" && req.method !== "HEAD") || UNBUDGETED.has(req.path)) return next();
    if (options.readToken !== undefined) {
      const presented = bearerOf(req);
      const ok =
        presented !== undefined &&
        (tokensEqual(presented, options.readToken) ||
          (options.writeToken !== undefined && tokensEqual(presented, options.writeToken)));
      if (!ok)
        return next(
          presented === undefined
            ? unauthorized("reads need 'Authorization: Bearer <token>' (STRAGGLER_READ_TOKEN is set)")
            : unauthorized("invalid token", true),
        );
    }
    const stream = STREAMS.test(req.path);
    if (!stream && running >= limit) {
      res.set("Retry-After", "1");
      return next(
        new HttpError(503, "busy", `${limit} reads are being answered (STRAGGLER_READ_CONCURRENCY); retry later`),
      );
    }
    if (!stream) running++;
    const busy = new Set<PoolClient>();
    let finished = false;
    let gone = false;
    res.once("finish", () => (finished = true));
    res.once("close", () => {
      if (!stream) running--;
      if (finished) return;
      gone = true;
      // The client hung up before its answer: stop what the read is running.
      for (const client of busy) {
        const pid = (client as unknown as { processID?: number | null }).processID;
        if (typeof pid === "number")
          options.cancelPool.query("SELECT pg_cancel_backend($1)", [pid]).catch(() => undefined);
      }
    });
    (req as unknown as Record<symbol, Pool>)[READS] = scopedPool(options.pool, busy, () => gone);
    next();
  };
}
