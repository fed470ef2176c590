/**
 * The zone check of a calendar window: its `window.timeZone` must be a zone
 * both sides know — luxon/Intl (config validation, the pure core) and
 * PostgreSQL (the SQL computes the bounds). A zone Node knows and PostgreSQL
 * does not (`US/Pacific-New`, dropped from the tz database in 2020) would fail
 * every micro-batch with PostgreSQL's `time zone "…" not recognized`; instead
 * the pipeline is refused when it starts, like a changed policy
 * (src/guards/policy.ts), naming the setting and its value.
 */
import { ConfigError, type PipelineConfig } from "../config/pipelines.js";
import type { Queryable } from "../db/pool.js";
import { isTimeZoneKnown } from "../db/sql/stream/timeZoneKnown.js";

/** The pipeline's `window.timeZone` is not a zone PostgreSQL knows: it is not streamed, corrected nor reconciled (a configuration error: CLI exit 2). */
export class TimeZoneRefusedError extends ConfigError {
  override name = "TimeZoneRefusedError";
  constructor(
    readonly pipeline: string,
    /** The configured zone name, as kept in the policy. */
    readonly timeZone: string,
  ) {
    const target = new Intl.DateTimeFormat("en-US", { timeZone }).resolvedOptions().timeZone;
    super(
      `pipeline ${pipeline} is not streamed: window.timeZone: ${JSON.stringify(timeZone)} is not a time zone PostgreSQL knows (pg_timezone_names); ` +
        `write a zone both Straggler and PostgreSQL know${target === timeZone ? "" : ` (Straggler reads this one as ${JSON.stringify(target)})`}`,
    );
  }
}

/**
 * The refusal of `pipeline` for its calendar window's zone, or null when it has
 * no calendar window or PostgreSQL knows the zone.
 * @throws the database's error when it cannot be reached
 */
export async function timeZoneRefusal(
  client: Queryable,
  pipeline: PipelineConfig,
): Promise<TimeZoneRefusedError | null> {
  const window = pipeline.window as { calendar?: { timeZone: string } };
  if (window.calendar === undefined) return null;
  return (await isTimeZoneKnown(client, window.calendar.timeZone))
    ? null
    : new TimeZoneRefusedError(pipeline.name, window.calendar.timeZone);
}

/**
 * Refuses `pipeline` when its calendar window's zone is one PostgreSQL does not know.
 * @throws TimeZoneRefusedError then; the database's error when it cannot be reached
 */
export async function guardTimeZone(client: Queryable, pipeline: PipelineConfig): Promise<void> {
  const refusal = await timeZoneRefusal(client, pipeline);
  if (refusal) throw refusal;
}
