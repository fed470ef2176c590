/**
 * Replay's staging table: a session-temporary `replay_rows` holding every
 * record of a dataset with its arrival instant, read back in arrival order
 * through a cursor (src/replay/replay.ts). Memory stays flat whatever the
 * dataset's size.
 */
import { Readable } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { from as copyFrom } from "pg-copy-streams";
import { copyText, inChunks } from "../copyText.js";
import type { PoolClient } from "../pool.js";

/** One staged record. */
export interface ReplayRow {
  /** Arrival instant, epoch ms; null when it could not be read. */
  arrival_ms: number | null;
  /** The arrival time's microseconds within its millisecond (0-999): orders events within one ms. */
  arrival_sub_ms: number | null;
  /** The base name of the file the record comes from. */
  origin: string;
  line: number;
  raw: string;
  parse_error: string | null;
  fields: Record<string, string | null> | null;
  numbers: string[] | null;
}

const CREATE_REPLAY_ROWS_SQL = "CREATE TEMP TABLE replay_rows (arrival_ms bigint, arrival_sub_ms integer, origin text, line integer, raw text, parse_error text, fields jsonb, numbers text[])";
const COPY_REPLAY_ROWS_SQL = "COPY replay_rows FROM STDIN";
const INDEX_REPLAY_ROWS_SQL = "CREATE INDEX ON replay_rows (arrival_ms NULLS FIRST, arrival_sub_ms, origin, line)";
const ANALYZE_REPLAY_ROWS_SQL = "ANALYZE replay_rows";
const DECLARE_REPLAY_CURSOR_SQL = "DECLARE replay_cursor NO SCROLL CURSOR FOR SELECT * FROM replay_rows ORDER BY arrival_ms NULLS FIRST, arrival_sub_ms, origin, line";
const DROP_REPLAY_ROWS_SQL = "DROP TABLE IF EXISTS replay_rows";

/** Creates the empty staging table in `client`'s session. @throws the database's error (e.g. when it exists already in the session) */
export async function createReplayRows(client: PoolClient): Promise<void> {
  await client.query(CREATE_REPLAY_ROWS_SQL);
}

/**
 * One COPY text line (newline included) of a staged record.
 * @param arrival `[epoch ms, µs within the ms]`, or null when the arrival time could not be read
 */
export function replayLine(arrival: [number, number] | null, origin: string, line: number, raw: string, parseError: string | null, fields: string | null, numbers: string | null): string {
  return [...(arrival ?? [null, null]), origin, line, raw, parseError, fields, numbers].map(copyText).join("\t") + "\n";
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
 * Opens a cursor over the staged records in arrival order (unknown arrival first, then
 * arrival instant, file, line). Inside a transaction: the cursor lives until it ends.
 */
export async function openReplayCursor(client: PoolClient): Promise<void> {
  await client.query(DECLARE_REPLAY_CURSOR_SQL);
}

/** @returns the cursor's next `count` records (`count` a positive integer); empty once it is exhausted */
export async function fetchReplayRows(client: PoolClient, count: number): Promise<ReplayRow[]> {
  return (await client.query<ReplayRow>(`FETCH ${Math.trunc(count)} FROM replay_cursor`)).rows;
}

/** Drops the staging table; never throws (the session may be gone). */
export async function dropReplayRows(client: PoolClient): Promise<void> {
  await client.query(DROP_REPLAY_ROWS_SQL).catch(() => undefined);
}
