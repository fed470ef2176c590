/**
 * The pipeline pages under `/ui` (README: The pipeline page): HTML for
 * people, not part of the REST API (not in `/openapi.json`). Read-only; the
 * page's buttons call the API's token-guarded routes from the browser.
 *
 *   GET /ui                          every pipeline with its state
 *   GET /ui/pipelines/{pipeline}     one pipeline: ?key= &from= &to= &status= &page= filter the
 *                                    windows table, ?batches= sets how many recent batches are charted
 *   GET /ui/pipelines/{pipeline}/batches    the charts' series over the recent batches as JSON (?batches=), fetched after the page
 *   GET /ui/pipelines/{pipeline}/lateness   the page's lateness section as JSON ({ html, chart }), fetched after the page
 *   GET /ui/assets/{file}            uPlot (served from its npm package) and the page's script and styles
 *
 * A bad query or an unknown pipeline is a 4xx page naming the problem.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import express, { type NextFunction, type Request, type Response } from "express";
import { z } from "zod";
import type { PipelineConfig } from "../config/pipelines.js";
import type { ApiDeps } from "../http/context.js";
import { clientErrorMessage, HttpError, parseOr400 } from "../http/errors.js";
import { readsOf } from "../http/readBudget.js";
import { instant } from "../http/schemas.js";
import { countRecentBatches } from "../db/sql/stream/countRecentBatches.js";
import {
  LatenessCache,
  readBatchSeries,
  readCorrections,
  readOverview,
  readWindows,
  WINDOWS_PER_PAGE,
} from "./data.js";
import { latenessFragment } from "./latenessSection.js";
import { errorPage, listPage, pipelinePage } from "./pages.js";
import { DEFAULT_BATCHES } from "./sections.js";

const require = createRequire(import.meta.url);

/** Files under `/ui/assets`: name → path on disk and its Content-Type. */
const ASSETS: Record<string, string> = {
  "uPlot.iife.min.js": require.resolve("uplot/dist/uPlot.iife.min.js"),
  "uPlot.min.css": require.resolve("uplot/dist/uPlot.min.css"),
  "page.js": fileURLToPath(new URL("./assets/page.js", import.meta.url)),
  "page.css": fileURLToPath(new URL("./assets/page.css", import.meta.url)),
};

/** An empty form field is no filter. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (v === "" ? undefined : v), schema.optional());

/** The highest `page` the pipeline page's query accepts (a page past the windows' last is refused too, naming it). */
const MAX_PAGE = 1_000_000;
const PAGE_RANGE = `expected a page number from 1 to ${MAX_PAGE}`;

/** How many recent batches the charts show (`?batches=`, on the page and its batches' series). */
const batchesShown = optional(
  z.coerce.number({ error: "expected an integer from 1 to 10000" }).int().min(1).max(10_000),
).transform((b) => b ?? DEFAULT_BATCHES);

/** The pipeline page's query (every field optional; a form's empty field means "any"). */
const pipelinePageQuery = z
  .strictObject({
    key: optional(
      z
        .string()
        .max(1_000, { message: "expected a key of at most 1000 characters" })
        .refine((s) => !s.includes("\u0000"), { message: "expected text without NUL characters" }),
    ),
    from: optional(instant),
    to: optional(instant),
    status: optional(z.enum(["open", "final", "corrected"], { error: "expected open, final or corrected" })),
    page: optional(
      z.coerce
        .number({ error: PAGE_RANGE })
        .int({ error: PAGE_RANGE })
        .min(1, { error: PAGE_RANGE })
        .max(MAX_PAGE, { error: PAGE_RANGE }),
    ).transform((p) => p ?? 1),
    batches: batchesShown,
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, {
    message: "expected from < to",
    path: ["to"],
    when: (c) => c.issues.length === 0,
  });

/** CSP of the pages: scripts, styles and requests to this service only; nothing inline runs. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

function sendPage(res: Response, status: number, page: string): void {
  res.status(status).set("Content-Security-Policy", CONTENT_SECURITY_POLICY).type("html").send(page);
}

/**
 * The `/ui` router (mount it with `app.use("/ui", uiRouter(…))` before the API's 404 handler).
 * @param pipelineOf the pipeline a request's `:pipeline` names (throws HttpError 404 when none)
 */
export function uiRouter(deps: ApiDeps, pipelineOf: (req: Request) => PipelineConfig): express.Router {
  const router = express.Router();
  const lateness = new LatenessCache();
  const { pool } = deps;

  router.get("/assets/:file", (req, res, next) => {
    const file = ASSETS[String(req.params.file)];
    if (file === undefined)
      return next(
        new HttpError(404, "not_found", `no asset named ${JSON.stringify(String(req.params.file).slice(0, 100))}`),
      );
    res.set("Cache-Control", "no-cache").sendFile(file);
  });

  router.get("/", async (req, res) => {
    parseOr400(z.strictObject({}), req.query, "query");
    const reads = readsOf(req, pool);
    const rows = await Promise.all(
      deps.pipelines.map(async (pipeline) => ({ pipeline, overview: await readOverview(reads, pipeline) })),
    );
    sendPage(res, 200, listPage(rows));
  });

  router.get("/pipelines/:pipeline", async (req, res) => {
    const pipeline = pipelineOf(req);
    const q = parseOr400(pipelinePageQuery, req.query, "query");
    const filter = { key: q.key, from: q.from, to: q.to, status: q.status, page: q.page };
    const reads = readsOf(req, pool);
    const overview = await readOverview(reads, pipeline);
    // The first paint reads no bronze: the charts' series (quarantined rows by reason) are fetched after the page.
    const [batchCount, windows, corrections] = await Promise.all([
      countRecentBatches(reads, pipeline.name, q.batches),
      readWindows(reads, pipeline.name, filter, overview),
      readCorrections(reads, pipeline.name),
    ]);
    // A page past the last one would show an empty, inverted range ("Windows 22,201 – 22,200"): refuse it, naming the last.
    const lastPage = Math.max(1, Math.ceil(windows.total / WINDOWS_PER_PAGE));
    if (q.page > lastPage)
      throw new HttpError(400, "invalid_request", `query.page: page ${q.page} is past the last page, ${lastPage}`);
    sendPage(
      res,
      200,
      pipelinePage({ pipeline, overview, batchCount, windows, filter, batchesShown: q.batches, corrections }),
    );
  });

  // The charts' series, fetched by assets/page.js after the page (the quarantined rows by reason are read from bronze).
  router.get("/pipelines/:pipeline/batches", async (req, res) => {
    const pipeline = pipelineOf(req);
    const q = parseOr400(z.strictObject({ batches: batchesShown }), req.query, "query");
    res.set("Cache-Control", "no-store").json(await readBatchSeries(readsOf(req, pool), pipeline.name, q.batches));
  });

  // The page's lateness section, fetched by assets/page.js after the page: the report replays the accepted rows.
  router.get("/pipelines/:pipeline/lateness", async (req, res) => {
    const pipeline = pipelineOf(req);
    parseOr400(z.strictObject({}), req.query, "query");
    const reads = readsOf(req, pool);
    const report = await lateness.get(reads, pipeline).catch((e: Error) => ({ error: e.message }));
    res.set("Cache-Control", "no-store").json(latenessFragment(report));
  });

  router.use((req, _res, next) =>
    next(
      new HttpError(
        404,
        "not_found",
        `no page at ${JSON.stringify(req.originalUrl.split("?")[0]!.slice(0, 200))}; the pages are /ui and /ui/pipelines/{pipeline}`,
      ),
    ),
  );

  // A 4xx is a page naming the problem; anything else goes to the API's error handler (503, 500 logged).
  router.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (err instanceof HttpError && err.status < 500)
      return sendPage(res, err.status, errorPage(err.status, err.message));
    // The router's own 4xx (a path whose percent-encoding does not decode): the same HTML page.
    const status = (err as { status?: unknown }).status;
    if (typeof status === "number" && status >= 400 && status < 500)
      return sendPage(res, status, errorPage(status, clientErrorMessage(err as Error)));
    next(err);
  });
  return router;
}
