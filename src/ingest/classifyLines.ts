/**
 * One source's records as classified bronze COPY lines (`bronzeLine`), tallied
 * as they pass: the landing's counts per outcome and the SHA-256 of its
 * records. Shared by the landing of one source (`copyToBronze.ts`), which
 * streams the lines into COPY as they are read, and group commit
 * (`groupCommit.ts`), which classifies a small request before it joins a group.
 */
import { createHash } from "node:crypto";
import type { PipelineConfig } from "../config/pipelines.js";
import { windowShapeOf } from "../config/pipelines.js";
import { classifyRecord, dedupeModeOf, type RawRecord } from "../core/admission.js";
import { formatInstant, usOfMs } from "../core/instants.js";
import { bronzeLine, bronzeLinePrefix } from "../db/sql/ingest/copyBronzeRows.js";
import { addToSummary, summaryOf, type SpanSummary } from "../core/spanSummary.js";
import { rawElider } from "./rawLayout.js";

/** Longest stretch records are classified without letting the event loop run, ms. */
const YIELD_EVERY_MS = 10;

/** The SHA-256 of a landing's records, one per line: `digest("hex")` once they are read (a `Hash`, or one digested on another thread). */
interface RecordsDigest {
  digest(encoding: "hex"): string;
}

/** Counts of the lines produced so far (before the landing's dedupe, which runs in SQL). */
export interface LineTally {
  landed: number;
  accepted: number;
  /** Quarantined rows per reason. */
  byReason: Record<string, number>;
  /** SHA-256 of the records' raw text, one per line: `digest("hex")` once the lines are read. */
  hash: RecordsDigest;
  /** The layout rows were written by without their raw text (src/ingest/rawLayout.ts); null when every row kept its text. */
  rawLayout: string | null;
  /**
   * With `collectIds`: the accepted rows' event ids so far, each once; null without it, or once more than
   * `collectIds` were accepted (the landing then dedupes in SQL as it always did).
   */
  acceptedIds: Set<string> | readonly string[] | null;
  /** With `collectIds`: an accepted event id came again within these lines (their dedupe cannot be skipped). */
  repeatedId: boolean;
  /**
   * With `collectIds`: the quarantined rows' event ids (a replay's filter of its own ids holds them too:
   * src/ingest/landedIds.ts); null without it, or once more than `collectIds` were quarantined.
   */
  quarantinedIds: string[] | null;
  /** With `summarize`: the lines' rows summarized for the micro-batch that streams them (src/core/spanSummary.ts); null without it. */
  summary: SpanSummary | null;
}

export interface ClassifyOptions {
  /** Ingestion time for records that carry none, epoch ms (set once per source). */
  landingTimeMs: number;
  /** Called every `progressEvery` records with the count so far. */
  onProgress?: (records: number) => void;
  progressEvery?: number;
  /** The input the records come from (docs/DESIGN.md "Several inputs"), stamped on every row; `default` when unset. */
  input?: string;
  /**
   * Whether accepted rows may be written without their raw text when their columns give it back: asked
   * once, at the first accepted record; true only where the source's CSV header and layout are recorded
   * with it (copyToBronze.ts).
   */
  elideRaw?: () => boolean;
  /** Collect up to this many accepted event ids in the tally (`acceptedIds`, `repeatedId`): a landing classified before its COPY probes them. */
  collectIds?: number;
  /**
   * Summarize the rows for the micro-batch that will stream exactly them (a replay's span: `tally.summary`),
   * usable up to this many accepted rows (`trigger.maxRowsPerBatch`).
   */
  summarize?: number;
}

/**
 * A classifier of one source's records (admission, DESIGN §7–8) for `source` of `pipeline`, one record a call,
 * with the tally it fills. `classifyLines` reads records through it; the replay's span worker
 * (src/replay/spanWorker.ts) calls it in a loop of its own.
 * @returns `line(rec)`: the record's COPY line (`bronzeLine`), counted in `tally`
 */
export function classifier(
  pipeline: PipelineConfig,
  source: string,
  opts: ClassifyOptions,
): { line: (rec: RawRecord) => string; tally: LineTally } {
  // The records' texts are hashed 256 at a time (one call into the hash for them and their line ends).
  const hash = createHash("sha256");
  const texts: string[] = [];
  const flush = () => {
    if (texts.length === 0) return;
    hash.update(texts.join("\n") + "\n");
    texts.length = 0;
  };
  let ids: Set<string> | null = opts.collectIds === undefined ? null : new Set();
  const tally: LineTally = {
    landed: 0,
    accepted: 0,
    byReason: {},
    hash: {
      digest: (encoding) => {
        flush();
        return hash.digest(encoding);
      },
    },
    rawLayout: null,
    acceptedIds: ids,
    repeatedId: false,
    quarantinedIds: opts.collectIds === undefined ? null : [],
    summary: null,
  };
  const maxIds = opts.collectIds ?? 0;
  const prefix = bronzeLinePrefix(pipeline.name, opts.input);
  const every = opts.progressEvery ?? 10_000;
  const window = windowShapeOf(pipeline);
  const elider = rawElider(pipeline, () => opts.elideRaw?.() === true);
  const summary = (tally.summary = opts.summarize === undefined ? null : summaryOf(window, opts.summarize));
  let lastIngestion: { us: bigint; text: string } | null = null;
  // A row whose ingestion time is the landing's stores none: the landing's source records it (drizzle/0053).
  const landingUs = usOfMs(opts.landingTimeMs);
  const line = (rec: RawRecord): string => {
    if (texts.push(rec.raw) === 256) flush();
    tally.landed++;
    if (opts.onProgress && tally.landed % every === 0) opts.onProgress(tally.landed);
    const row = classifyRecord(rec, pipeline, source, opts.landingTimeMs, window);
    if (summary !== null) addToSummary(summary, row);
    // A source's records mostly share one ingestion time (the landing's, or a replay span's end): formatted once.
    if (lastIngestion === null || row.ingestionTimeUs !== lastIngestion.us)
      lastIngestion = { us: row.ingestionTimeUs, text: formatInstant(row.ingestionTimeUs) };
    const eventTime = row.eventTimeUs === null ? null : formatInstant(row.eventTimeUs),
      ingestionTime = lastIngestion.text;
    let text: { raw: string | null; rest: string | null; at: string | null } = { raw: rec.raw, rest: null, at: null };
    if (row.status === "accepted") {
      tally.accepted++;
      if (ids !== null) {
        if (ids.has(row.eventId)) tally.repeatedId = true;
        else if (ids.size < maxIds) ids.add(row.eventId);
        else tally.acceptedIds = ids = null;
      }
      text = elider.accepted(rec, row, eventTime, ingestionTime);
      if (text.raw === null) tally.rawLayout = elider.layout;
    } else {
      if (row.reason !== null) tally.byReason[row.reason] = (tally.byReason[row.reason] ?? 0) + 1;
      const q = tally.quarantinedIds;
      if (q !== null) {
        if (q.length < maxIds) q.push(row.eventId);
        else tally.quarantinedIds = null;
      }
    }
    return bronzeLine(prefix, row, text, eventTime, row.ingestionTimeUs === landingUs ? null : ingestionTime);
  };
  return { line, tally };
}

/**
 * Classifies `records` (admission, DESIGN §7–8) for `source` of `pipeline` (`classifier`).
 * Yields to the event loop every ~10 ms: records already buffered are read in
 * microtasks, which never let it run, and the process must keep answering
 * while a large source lands.
 * @returns the COPY lines (read once) and the tally they fill as they are read
 * @throws (from the lines) what reading `records` throws
 */
export function classifyLines(
  pipeline: PipelineConfig,
  source: string,
  records: AsyncIterable<RawRecord>,
  opts: ClassifyOptions,
): { lines: AsyncGenerator<string>; tally: LineTally } {
  const { line, tally } = classifier(pipeline, source, opts);
  async function* lines(): AsyncGenerator<string> {
    let lastYield = performance.now();
    for await (const rec of records) {
      if ((tally.landed & 255) === 0 && performance.now() - lastYield >= YIELD_EVERY_MS) {
        await new Promise((r) => setImmediate(r));
        lastYield = performance.now();
      }
      yield line(rec);
    }
  }
  return { lines: lines(), tally };
}

/** A source's records classified in memory, before its landing takes the append lock (`classifyInMemory`). */
export interface ClassifiedLines {
  /** The COPY lines read so far, in order. */
  lines: string[];
  /** The lines after `lines`, not yet read (when more than `maxLines` records came), or null when every record is in `lines`. */
  rest: AsyncGenerator<string> | null;
  tally: LineTally;
}

/**
 * Classifies up to `maxLines` of `records` into memory, and lines of up to about `maxChars` characters in all
 * (the accepted event ids collected as well, up to `maxLines`), so that the landing's transaction spends no
 * time on them and can tell, before its COPY, whether any event id may be a duplicate (copyToBronze.ts).
 * Records past either bound stay unread in `rest`.
 * @throws what reading `records` throws
 */
export async function classifyInMemory(
  pipeline: PipelineConfig,
  source: string,
  records: AsyncIterable<RawRecord>,
  opts: ClassifyOptions,
  maxLines: number,
  maxChars = Infinity,
): Promise<ClassifiedLines> {
  const { lines, tally } = classifyLines(pipeline, source, records, { ...opts, collectIds: maxLines });
  const read: string[] = [];
  let chars = 0;
  for (;;) {
    if (read.length >= maxLines || chars >= maxChars) return { lines: read, rest: lines, tally };
    const next = await lines.next();
    if (next.done) return { lines: read, rest: null, tally };
    read.push(next.value);
    chars += next.value.length;
  }
}

/**
 * The accepted event ids to probe before the COPY (src/db/sql/ingest/probeEventIds.ts), or null when a probe cannot
 * tell that the dedupe would change no row: the pipeline dedupes nothing, the records are read during the COPY
 * (not classified whole in memory), or an id comes twice in the landing.
 */
export function idsToProbe(
  pipeline: PipelineConfig,
  records: AsyncIterable<RawRecord> | ClassifiedLines,
): string[] | null {
  if (!("tally" in records) || dedupeModeOf(pipeline.admission.dedupe) === "off" || records.rest !== null) return null;
  const { acceptedIds, repeatedId } = records.tally;
  return acceptedIds === null || repeatedId ? null : [...acceptedIds];
}

/** The quarantined rows' event ids of a landing classified whole in memory (`LineTally.quarantinedIds`), else null. */
export function quarantinedIdsOf(records: AsyncIterable<RawRecord> | ClassifiedLines): readonly string[] | null {
  return "tally" in records && records.rest === null ? records.tally.quarantinedIds : null;
}
