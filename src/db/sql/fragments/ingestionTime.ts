/**
 * A bronze row's ingestion time in SQL (timestamptz): its own, else its source's. A row whose ingestion time
 * is its landing's stores none (drizzle/0053_bronze_ingestion_time_of_source.sql): the landing records it once,
 * in `straggler.bronze_sources.ingestion_time`. Every reader of a row's ingestion time reads it through this
 * (the raw text's `straggler.bronze_raw` and the views `straggler.bronze` and `straggler.quarantine` resolve it
 * themselves).
 *
 * The source is looked up only for a row that stores none (one primary-key probe, about a microsecond).
 * @param alias the bronze row's alias in the statement (`b`), or "" for unqualified columns
 */
export function ingestionTimeOf(alias: string): string {
  const c = (name: string) => (alias === "" ? name : `${alias}.${name}`);
  return `coalesce(${c("ingestion_time")}, (SELECT its.ingestion_time FROM straggler.bronze_sources its WHERE its.id = ${c("source_id")}))`;
}
