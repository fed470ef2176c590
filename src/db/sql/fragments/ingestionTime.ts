/**
 * A bronze row's ingestion time in SQL (timestamptz): its own, else its source's. A row whose ingestion time
 * is its landing's stores none (drizzle/0053_bronze_ingestion_time_of_source.sql): the landing records it once,
 * in `straggler.bronze_sources.ingestion_time`. Every reader of a row's ingestion time reads it through this
 * module (the raw text's `straggler.bronze_raw` and the views `straggler.bronze` and `straggler.quarantine` resolve
 * it themselves).
 */

const column = (alias: string, name: string) => (alias === "" ? name : `${alias}.${name}`);

/**
 * The row's ingestion time as one expression: the source is looked up only for a row that stores none (one
 * primary-key probe, about a microsecond). For a statement that reads only the time.
 * @param alias the bronze row's alias in the statement (`b`), or "" for unqualified columns
 */
export function ingestionTimeOf(alias: string): string {
  return `coalesce(${column(alias, "ingestion_time")}, (SELECT its.ingestion_time FROM straggler.bronze_sources its WHERE its.id = ${column(alias, "source_id")}))`;
}

/**
 * The join of a bronze row's source record, for a statement that reads more of it than the time (its name) or reads
 * many rows: `its.source_name` and `its.source_time`, one probe or one hash of the sources (the planner's choice),
 * never one lookup per column. Read the row's ingestion time with `ingestionTimeJoined`.
 * @param alias as for `ingestionTimeOf`
 */
export function joinSourceOf(alias: string): string {
  return `LEFT JOIN LATERAL (SELECT s.name AS source_name, s.ingestion_time AS source_time FROM straggler.bronze_sources s WHERE s.id = ${column(alias, "source_id")}) its ON true`;
}

/** The row's ingestion time where `joinSourceOf(alias)` is joined. */
export function ingestionTimeJoined(alias: string): string {
  return `coalesce(${column(alias, "ingestion_time")}, its.source_time)`;
}
