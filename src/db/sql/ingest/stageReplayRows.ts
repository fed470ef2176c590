/**
 * Replay's staging table: a session-temporary `replay_rows` holding every
 * record of a dataset with its arrival instant, read back in arrival order
 * one page at a time (src/replay/replay.ts). Memory stays flat whatever the
 * dataset's size.
 *
 * Pages are read by key (keyset pagination on an index in arrival order),
 * each in a statement of its own, not through a cursor: a cursor lives in a
 * transaction, whose snapshot would stay open for the whole replay. While a
 * snapshot is open, PostgreSQL keeps every row version written after it —
 * each micro-batch's checkpoint, every finalized window's old version — and
 * the stream's statements walk ever longer chains of them (the taxi replay's
 * count of open windows went from 0.3 ms to 3.6 ms a micro-batch).
 */
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import { arrayText, copyText, inChunks } from "../../copyText.js";
import type { PoolClient } from "../../pool.js";

/** One staged record. */
export interface ReplayRow {
  /** Arrival instant, epoch ms; null when it could not be read. */
  arrival_ms: number | null;
  /** The arrival time's microseconds within its millisecond (0-999): orders events within one ms. */
  arrival_sub_ms: number | null;
  /** The base name of the file the record comes from. */
  origin: string;
  line: number;
  /** Staging order: tells apart records whose arrival, file and line are the same (a file given twice). */
  ord: number;
  raw: string;
  parse_error: string | null;
  fields: Record<string, string | null> | null;
  numbers: string[] | null;
}

const CREATE_REPLAY_ROWS_SQL = `CREATE TEMP TABLE replay_rows (arrival_ms bigint, arrival_sub_ms integer, origin text, line integer, raw text, parse_error text,
  fields jsonb, numbers text[], ord bigint GENERATED ALWAYS AS IDENTITY)`;
const COLUMNS = "arrival_ms, arrival_sub_ms, origin, line, raw, parse_error, fields, numbers";
const COPY_REPLAY_ROWS_SQL = `COPY replay_rows (${COLUMNS}) FROM STDIN`;
/** Arrival order: unknown arrival first, then arrival instant, file, line, staging order. No arrival instant is bigint's minimum. */
const ORDER_KEY = "coalesce(arrival_ms, -9223372036854775808), coalesce(arrival_sub_ms, -1), origin, line, ord";
const INDEX_REPLAY_ROWS_SQL = `CREATE INDEX ON replay_rows ((coalesce(arrival_ms, -9223372036854775808)), (coalesce(arrival_sub_ms, -1)), origin, line, ord)`;
const ANALYZE_REPLAY_ROWS_SQL = "ANALYZE replay_rows";
const FIRST_PAGE_SQL = `SELECT ${COLUMNS}, ord FROM replay_rows ORDER BY ${ORDER_KEY} LIMIT $1`;
const NEXT_PAGE_SQL = `SELECT ${COLUMNS}, ord FROM replay_rows
  WHERE (${ORDER_KEY}) > (coalesce($2::bigint, -9223372036854775808), coalesce($3::integer, -1), $4::text, $5::integer, $6::bigint)
  ORDER BY ${ORDER_KEY} LIMIT $1`;
const DROP_REPLAY_ROWS_SQL = "DROP TABLE IF EXISTS replay_rows";

/** Creates the empty staging table in `client`'s session. @throws the database's error (e.g. when it exists already in the session) */
export async function createReplayRows(client: PoolClient): Promise<void> {
  await client.query(CREATE_REPLAY_ROWS_SQL);
}

/** One COPY text line (newline included) of a staged record: its fields as JSON, its numbers' names as a `text[]`. */
export function replayLine(r: Omit<ReplayRow, "ord">): string {
  const fields = r.fields === null ? null : JSON.stringify(r.fields);
  const numbers = r.numbers === null ? null : arrayText(r.numbers);
  return (
    [r.arrival_ms, r.arrival_sub_ms, r.origin, r.line, r.raw, r.parse_error, fields, numbers].map(copyText).join("\t") +
    "\n"
  );
}

/** COPYs `lines` (each from `replayLine`) into the staging table. @throws what reading `lines` throws, or the database's error */
export async function copyReplayRows(client: PoolClient, lines: AsyncIterable<string>): Promise<void> {
  await pipe(Readable.from(inChunks(lines)), client.query(copyFrom(COPY_REPLAY_ROWS_SQL)));
}

/** Indexes the staging table in arrival order and analyses it, once every file is staged. */
export async function indexReplayRows(client: PoolClient): Promise<void> {
  await client.query(INDEX_REPLAY_ROWS_SQL);
  await client.query(ANALYZE_REPLAY_ROWS_SQL);
}

/**
 * The staged records after `after` in arrival order (unknown arrival first,
 * then arrival instant, file, line), at most `count` (a positive integer).
 * @param after the last record of the previous page; null for the first page
 * @returns empty once every record has been read
 */
export async function readReplayPage(client: PoolClient, after: ReplayRow | null, count: number): Promise<ReplayRow[]> {
  const limit = Math.trunc(count);
  const { rows } =
    after === null
      ? await client.query<ReplayRow>(FIRST_PAGE_SQL, [limit])
      : await client.query<ReplayRow>(NEXT_PAGE_SQL, [
          limit,
          after.arrival_ms,
          after.arrival_sub_ms,
          after.origin,
          after.line,
          after.ord,
        ]);
  return rows;
}

const NAMES_IN_TEXT_ORDER_SQL = "SELECT coalesce(array_agg(n ORDER BY n), '{}') AS names FROM unnest($1::text[]) AS n";

/**
 * `names` sorted as the staging table's \`ORDER BY origin\` sorts them (the database's default collation), so
 * that a dataset ordered in memory (src/replay/ordering.ts) has the staged order exactly.
 * @throws the database's error
 */
export async function namesInTextOrder(client: PoolClient, names: string[]): Promise<string[]> {
  return (await client.query<{ names: string[] }>(NAMES_IN_TEXT_ORDER_SQL, [names])).rows[0]!.names;
}

/** Drops the staging table; never throws (the session may be gone). */
export async function dropReplayRows(client: PoolClient): Promise<void> {
  await client.query(DROP_REPLAY_ROWS_SQL).catch(() => undefined);
}
