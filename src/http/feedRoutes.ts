/**
 * The change feed's routes (docs/change-feed.md): `GET /pipelines/{p}/changes?after=ID&limit=N`,
 * a page of changes after the last id a consumer applied, and
 * `GET /pipelines/{p}/changes/stream`, the same changes as Server-Sent Events (one event per
 * change, its `id:` the change's id), resuming after the `Last-Event-ID` header (or `after`).
 * Both answer 409 `feed_disabled` for a pipeline without `feed.enabled` and 410 `feed_pruned`
 * when the changes after the id asked were pruned past the correction horizon.
 */
import type { Request, Response } from "express";
import { z } from "zod";
import type { PipelineConfig } from "../config/pipelines.js";
import type { Pool } from "../db/pool.js";
import { startLoop, type Loop } from "../loop.js";
import { FeedPrunedError, readChanges, type FeedPage } from "../db/sql/feed/readChanges.js";
import { addPipelineRead, type RouteContext } from "./context.js";
import { HttpError, parseOr400 } from "./errors.js";
import { errors, json } from "./openapi.js";
import { readsOf } from "./readBudget.js";
import { aggregate, errorResponse, isoInstant, pipelineParams } from "./schemas.js";

const changeId = z.coerce
  .number({ error: "expected an integer >= 0 (the last change id applied; 0 from the start)" })
  .int()
  .min(0)
  .max(Number.MAX_SAFE_INTEGER);

const changesQuery = z.strictObject({
  after: changeId.default(0),
  limit: z.coerce.number({ error: "expected an integer from 1 to 10000" }).int().min(1).max(10_000).default(1000),
});
const streamQuery = z.strictObject({ after: changeId.optional() });

/** One change as the routes answer it (src/db/sql/feed/readChanges.ts `FeedChange`). */
const feedChange = z
  .object({
    id: z.number().meta({ description: "the feed's position: increasing in commit order; store the last one applied" }),
    change: z.enum(["new", "updated", "corrected", "retracted", "cutover", "held", "released"]),
    key: z.string().nullable().meta({ description: "the group key; null for the null group and for a hold's marker" }),
    windowStart: isoInstant.nullable(),
    windowEnd: isoInstant.nullable(),
    revision: z.number().nullable(),
    before: aggregate.nullable().meta({ description: "null: the window was not published before" }),
    after: aggregate.nullable().meta({
      description:
        "null: the window is no longer published (retracted, or absent from the version cut over to): remove it",
    }),
    cause: z
      .union([
        z.object({ batchId: z.number() }),
        z.object({ correctionRunId: z.number() }),
        z.object({ version: z.number() }),
        z.object({ holdId: z.number() }),
      ])
      .meta({ description: "the micro-batch, correction run, version cut over to, or hold that made the change" }),
    at: isoInstant.meta({ description: "when the transaction that made the change began" }),
  })
  .meta({ id: "WindowChange" });

export const feedPage = z.object({
  pipeline: z.string(),
  after: z.number(),
  next: z
    .number()
    .meta({ description: "read after this id next (the last change's id, or `after` when there was none)" }),
  heldBy: z
    .number()
    .nullable()
    .meta({ description: "the hold in force: the feed stops at its `held` marker until the release" }),
  changes: z.array(feedChange),
});

const feedErrors = {
  409: json("the pipeline keeps no change feed (set feed.enabled in the pipelines file)", errorResponse),
  410: json(
    "the changes after the id asked were pruned past the correction horizon: rebuild the copy from /windows",
    errorResponse,
  ),
};

/** @throws HttpError 409 when `pipeline` keeps no feed */
function assertFeed(pipeline: PipelineConfig): void {
  if (!pipeline.feed.enabled)
    throw new HttpError(
      409,
      "feed_disabled",
      `pipeline ${pipeline.name} keeps no change feed: set feed: { enabled: true } in the pipelines file (from its first micro-batch on, every change is in it)`,
    );
}

/** @throws HttpError 410 for a pruned feed, else the read's error */
async function read(pool: Pool, pipeline: string, after: number, limit: number): Promise<FeedPage> {
  try {
    return await readChanges(pool, pipeline, after, limit);
  } catch (e) {
    if (e instanceof FeedPrunedError) throw new HttpError(410, "feed_pruned", e.message);
    throw e;
  }
}

/** How long an idle stream waits before it reads the feed again, ms, and between comments that keep the connection open. */
const STREAM_POLL_MS = 1000;
const HEARTBEAT_MS = 15_000;
const STREAM_PAGE = 500;

export function addFeedRoutes(ctx: RouteContext): void {
  addPipelineRead(
    ctx,
    {
      path: "/pipelines/{pipeline}/changes",
      operationId: "listChanges",
      summary:
        "The change feed: every change of a published window after `after` (the last id the consumer applied), in id order; store the last id applied and ask after it",
      query: changesQuery,
      response: feedPage,
      description: "a page of changes",
      responses: feedErrors,
    },
    async (pipeline, q, pool) => {
      assertFeed(pipeline);
      const page = await read(pool, pipeline.name, q.after, q.limit);
      return { pipeline: pipeline.name, after: q.after, ...page };
    },
  );

  ctx.routes.add(
    {
      method: "get",
      path: "/pipelines/{pipeline}/changes/stream",
      operationId: "streamChanges",
      summary:
        "The change feed as Server-Sent Events: one `change` event per change (data: a WindowChange as JSON, id: its id), from after the Last-Event-ID header (or `after`; 0 from the start), then each new change as it commits",
      request: {
        params: pipelineParams,
        query: streamQuery,
        headers: z.object({
          "last-event-id": changeId.optional().meta({
            description:
              "the id of the last event applied (an EventSource sends it when it reconnects); wins over `after`",
          }),
        }),
      },
      responses: {
        200: {
          description:
            "an endless text/event-stream: `event: change`, `id: <id>`, `data: <WindowChange JSON>` per change; a comment line every 15 s while idle",
          content: {
            "text/event-stream": {
              schema: z.string().meta({
                description: "Server-Sent Events (WHATWG HTML §9.2); each event's data is a WindowChange",
                example: 'id: 42\nevent: change\ndata: {"id":42,"change":"new",...}\n\n',
              }),
            },
          },
        },
        ...feedErrors,
        ...errors([400, 404, 500, 503]),
      },
    },
    (req, res, next) => void streamChanges(ctx, req, res).catch(next),
  );
}

/** The streams open in this process: the pipeline each follows, what ends it, what cuts its wait short. */
const openStreams = new Set<{ pipeline: string; end: () => void; wake: () => void }>();

/**
 * Ends every open change stream (the service's stop, before its server closes: an open stream would
 * keep it waiting). Their clients reconnect with their Last-Event-ID and miss nothing.
 */
export function endChangeStreams(): void {
  for (const s of openStreams) s.end();
}

/**
 * Cuts short the wait of every open stream of `pipeline`: the service calls it on a notification of
 * the feed's channel (src/db/sql/feed/notifyChanges.ts), so a change reaches the streams as it
 * commits, not at their next read; without it they read every STREAM_POLL_MS.
 */
export function wakeChangeStreams(pipeline: string): void {
  for (const s of openStreams) if (s.pipeline === pipeline) s.wake();
}

/** Serves the stream until the client goes (or `endChangeStreams`): pages of changes, then waits of STREAM_POLL_MS. */
async function streamChanges(ctx: RouteContext, req: Request, res: Response): Promise<void> {
  const pipeline = ctx.pipelineOf(req);
  const q = parseOr400(streamQuery, req.query, "query");
  const header = req.get("last-event-id");
  let after = header === undefined ? (q.after ?? 0) : parseOr400(changeId, header, "Last-Event-ID header");
  assertFeed(pipeline);
  const pool = readsOf(req, ctx.deps.pool);
  let page = await read(pool, pipeline.name, after, STREAM_PAGE); // errors before the first byte are answered as JSON
  let gone = false;
  let loop: Loop | undefined;
  const end = () => {
    gone = true;
    void loop?.stop();
  };
  const entry = { pipeline: pipeline.name, end, wake: () => loop?.wake() };
  openStreams.add(entry);
  res.once("close", end);
  res.status(200).set({
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    Connection: "keep-alive",
    "X-Accel-Buffering": "no",
  });
  res.flushHeaders();
  res.write(": straggler change feed\n\n");
  let idleSince = Date.now();
  /** Writes the page read; true when it was full (the next is read at once), else the idle heartbeat when due. */
  const writePage = (): boolean => {
    for (const change of page.changes)
      res.write(`id: ${change.id}\nevent: change\ndata: ${JSON.stringify(change)}\n\n`);
    after = page.next;
    if (page.changes.length >= STREAM_PAGE) return true;
    if (page.changes.length > 0) idleSince = Date.now();
    else if (Date.now() - idleSince >= HEARTBEAT_MS) {
      res.write(": idle\n\n");
      idleSince = Date.now();
    }
    return false;
  };
  if (!gone) {
    // A page, then (unless it was full) a wait of STREAM_POLL_MS that a change's notification cuts short.
    loop = startLoop(
      async () => {
        try {
          page = await read(pool, pipeline.name, after, STREAM_PAGE);
        } catch (e) {
          // Mid-stream an error cannot be a status: an `error` event, then the end (the client reconnects with its Last-Event-ID).
          const message = e instanceof HttpError ? e.message : "the feed could not be read; reconnect to resume";
          res.write(
            `event: error\ndata: ${JSON.stringify({ error: e instanceof HttpError ? e.code : "internal", message })}\n\n`,
          );
          return "done";
        }
        if (gone) return "done";
        return writePage() ? "again" : undefined;
      },
      {
        intervalMs: STREAM_POLL_MS,
        immediate: writePage(),
        onError: () => undefined /* the round answers its own errors */,
      },
    );
    await loop.done;
  }
  openStreams.delete(entry);
  res.end();
}
