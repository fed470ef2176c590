/**
 * The horizon guard (README "Retention and archives"): windows that could hold
 * archived rows are not recomputed from bronze, whose rows for them are gone
 * (a recompute would rewrite such a window from what is left, down to count 0).
 *
 * A window [start, end) of a pipeline could hold archived rows when an archive
 * of that pipeline not restored (`straggler.archived_rows`) has event times
 * reaching into it: its min event time < end and its max event time >= start.
 * The correction job leaves such windows awaiting correction (their late events
 * stay recorded and counted); a requested range, `reconcile` and `rebuild` that
 * reach them are refused with `HorizonRefusedError`.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import { formatDuration } from "../config/duration.js";
import type { Queryable } from "../db/pool.js";
import { isoMinusMs } from "../core/instants.js";
import { readArchivesReaching, type ArchivedSpan } from "../db/sql/retention/archivedWindows.js";

/** The correction's side of the guard: windows and session spans archived rows could be in are taken out of its targets. */
export { dropArchivedSpans, dropArchivedTargets } from "../db/sql/retention/archivedWindows.js";

/** A window range refused because archived rows could be in it; the message names the range, the horizon and how to restore. */
export class HorizonRefusedError extends Error {
  override name = "HorizonRefusedError";
  constructor(
    readonly pipeline: string,
    readonly what: string,
    readonly range: { from: string; to: string } | null,
    readonly archives: ArchivedSpan[],
    horizon: string | null,
  ) {
    const span = range ? `[${range.from}, ${range.to})` : "over all time";
    const first = archives[0]!;
    const names = archives.map((a) => `${a.partition} (event times ${a.minEventTime} to ${a.maxEventTime})`).join(", ");
    super(
      `${pipeline}: ${what} ${span} refused: it could hold rows archived past the correction horizon` +
        `${horizon ? ` (${horizon})` : ""}, which are no longer in bronze: ${names}. Nothing was recomputed. ` +
        `To recompute it, restore the archive first: straggler restore --archive ${first.file}` +
        (range
          ? ""
          : `; or give a range (--from, --to) whose windows start after ${archives.reduce((m, a) => (a.maxEventTime > m ? a.maxEventTime : m), first.maxEventTime)}`),
    );
  }
}

/**
 * The archives of `pipeline` not restored whose event times reach into windows overlapping `range`
 * (`[from, to)`, ISO instants; null: all time).
 * @param range `from` and `to` as `formatInstant` writes them (years 0001-9999)
 * @param marginMs ms by which a window may start before `from` and still overlap the range (the longest window);
 *   the widened start is clamped to 0001-01-01T00:00:00Z, the earliest supported instant
 */
async function archivesReaching(
  db: Queryable,
  pipeline: string,
  range: { from: string; to: string } | null,
  marginMs = 0,
): Promise<ArchivedSpan[]> {
  // Widened by the longest window, clamped to the supported range: no event is older than 0001-01-01.
  const from = range ? isoMinusMs(range.from, marginMs) : null;
  return readArchivesReaching(db, pipeline, from, range ? range.to : null);
}

/**
 * Refuses `what` (a correction range, a reconcile, a rebuild) of `pipeline` over `range` when an
 * archive not restored reaches into it.
 * @throws HorizonRefusedError naming the range, the horizon and the archive to restore
 */
export async function refuseArchived(
  db: Queryable,
  pipeline: PipelineConfig,
  what: string,
  range: { from: string; to: string } | null,
  marginMs = 0,
): Promise<void> {
  const archives = await archivesReaching(db, pipeline.name, range, marginMs);
  if (archives.length === 0) return;
  const horizon = pipeline.retention
    ? `correction horizon ${formatDuration(pipeline.retention.correctionHorizon)}`
    : null;
  throw new HorizonRefusedError(pipeline.name, what, range, archives, horizon);
}
