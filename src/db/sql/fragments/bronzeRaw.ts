/**
 * A bronze row's raw text as received, in SQL: its stored text, or the one its columns give back
 * by its source's layout when it was written without it (drizzle/0039_bronze_raw_elided.sql,
 * src/ingest/rawLayout.ts). Every reader of the raw text reads it through this.
 * @param alias the bronze row's alias in the statement (`b`), or "" for unqualified columns
 */
export function bronzeRaw(alias: string): string {
  const c = (name: string) => (alias === "" ? name : `${alias}.${name}`);
  return `straggler.bronze_raw(${["raw", "raw_rest", "raw_at", "source_id", "event_id", "event_time", "ingestion_time", "group_key", "value"].map(c).join(", ")})`;
}
