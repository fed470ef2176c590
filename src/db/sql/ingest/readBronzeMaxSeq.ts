/** The highest bronze `seq` of the whole table (every pipeline): a landing under the append lock writes only above it. */
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";

const READ_BRONZE_MAX_SEQ = "bronze_max_seq";
/** The statement as text (no parameters): its one row's `seq`. */
export const READ_BRONZE_MAX_SEQ_SQL = "SELECT coalesce(max(seq), 0) AS seq FROM straggler.bronze_events";

/**
 * @returns the highest `seq` in bronze, 0 when bronze is empty
 * @throws the database's error
 */
export async function readBronzeMaxSeq(client: Queryable): Promise<number> {
  return (await client.query(prepared(READ_BRONZE_MAX_SEQ, READ_BRONZE_MAX_SEQ_SQL, []))).rows[0].seq as number;
}
