/**
 * A version's classification of a range of bronze rows, page by page (a rebuild's pages, a cutover's
 * catch-up), and a version's watermark from its latest accepted event time. src/lifecycle/rebuild.ts and
 * src/lifecycle/cutover.ts call it.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { dedupeModeOf } from "../core/admission.js";
import { clampInstant, formatInstant, isoToUs, usOfMs } from "../core/instants.js";
import type { Queryable } from "../db/pool.js";
import {
  dedupeClassifications,
  fillEventIds,
  insertClassifications,
  markClassifications,
  readBronzePage,
} from "../db/sql/stream/classifications.js";
import { readSourceHeaders } from "../db/sql/ingest/sourceHeaders.js";
import { analyzeClassifications } from "../db/sql/lifecycle/versionLedger.js";
import { classifyStored, type HeaderCache } from "./rebuildClassify.js";

/** Pages between two ANALYZEs of the classification table while it fills (the first page is one). */
const ANALYZE_EVERY_PAGES = 20;

/** Rows classified per page (and per transaction) by default. */
export const REBUILD_PAGE_ROWS = 10_000;

/**
 * The watermark of a version whose latest accepted event time is `maxEventTime`: that − the policy's delay (DESIGN §3), never below `previous`.
 * @returns ISO instant, or null when neither is known
 */
export function versionWatermark(
  pipeline: PipelineConfig,
  maxEventTime: string | null,
  previous: string | null = null,
): string | null {
  // Never before 0001-01-01T00:00:00Z, as the stream's (src/core/watermark.ts): PostgreSQL cannot read year 0000.
  const fromMax = maxEventTime === null ? null : clampInstant(isoToUs(maxEventTime) - usOfMs(pipeline.watermark.delay));
  const prev = previous === null ? null : isoToUs(previous);
  const wm = fromMax === null ? prev : prev === null || fromMax > prev ? fromMax : prev;
  return wm === null ? null : formatInstant(wm);
}

/**
 * Classifies the bronze rows of `pipeline` with `after < seq <= upTo` under `version`, page by page.
 * `inPage` runs each page's writes (its own transaction for a rebuild; the cutover's for a catch-up).
 * Each row is marked where it differs from bronze's classification (drizzle/0037). `heldAsDifference`: the
 * version holds its rows up to `after` only as its difference from bronze (a catch-up of a stored version):
 * the dedupe's earlier rows it lacks are first added from bronze.
 * @returns the rows classified
 */
export async function classifyRange(
  reader: Queryable,
  pipeline: PipelineConfig,
  version: number,
  after: number,
  upTo: number,
  pageRows: number,
  inPage: (write: (client: Queryable) => Promise<void>, lastSeq: number, rows: number) => Promise<void>,
  onProgress?: (rows: number) => void,
  heldAsDifference = false,
): Promise<number> {
  const cache: HeaderCache = new Map();
  const dedupe = dedupeModeOf(pipeline.admission.dedupe);
  let done = 0,
    pages = 0;
  for (let from = after; ;) {
    const page = await readBronzePage(reader, pipeline.name, from, upTo, pageRows);
    if (page.length === 0) return done;
    const unknown =
      pipeline.source.format === "csv" ? [...new Set(page.map((r) => r.source))].filter((s) => !cache.has(s)) : [];
    const headers =
      unknown.length > 0 ? await readSourceHeaders(reader, pipeline.name, unknown) : new Map<string, string>();
    const classified = classifyStored(pipeline, page, headers, cache);
    const lastSeq = page[page.length - 1]!.seq;
    const pageFrom = from;
    const analyze = pages++ % ANALYZE_EVERY_PAGES === 0;
    await inPage(
      async (client) => {
        await insertClassifications(client, pipeline.name, version, classified);
        // The table fills as it is read: without fresh statistics (a new pipeline's rows estimated at none),
        // the dedupe's probes are planned as scans and a page takes seconds instead of milliseconds.
        if (analyze) await analyzeClassifications(client);
        if (dedupe !== "off" && classified.some((c) => c.status === "accepted")) {
          if (heldAsDifference)
            await fillEventIds(client, pipeline.name, version, after, [
              ...new Set(classified.filter((c) => c.status === "accepted").map((c) => c.eventId)),
            ]);
          await dedupeClassifications(client, pipeline.name, version, pageFrom, dedupe);
          // The dedupe rewrote some of the page's rows after they were marked.
          await markClassifications(client, pipeline.name, version, pageFrom, lastSeq, true);
        }
      },
      lastSeq,
      page.length,
    );
    done += page.length;
    onProgress?.(done);
    from = lastSeq;
  }
}
