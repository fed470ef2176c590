/**
 * Instants (DESIGN §7): integers of microseconds since the Unix epoch (`bigint`: a JS number holds
 * epoch µs exactly only up to year 2255), PostgreSQL's `timestamptz` resolution; their supported range,
 * their arithmetic and their one text form (ISO 8601 UTC). Pure: no clock. Parsing a pipeline's
 * timestamps is src/core/timestamps.ts.
 */

/**
 * The supported range, epoch µs: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z, the instants both
 * the timestamp parser (timestamps.ts) and PostgreSQL's `timestamptz` text input accept (PostgreSQL reads neither year 0000 nor
 * `+010000`). Every instant Straggler computes and sends to PostgreSQL stays inside it (`clampInstant`).
 */
export const MIN_INSTANT_US = (() => {
  const d = new Date(Date.UTC(2000, 0, 1));
  d.setUTCFullYear(1);
  return BigInt(d.getTime()) * 1000n;
})();
export const MAX_INSTANT_US = BigInt(Date.UTC(9999, 11, 31, 23, 59, 59, 999)) * 1000n + 999n;
const MIN_US = MIN_INSTANT_US,
  MAX_US = MAX_INSTANT_US;

/** `us` moved into the supported range (`MIN_INSTANT_US`..`MAX_INSTANT_US`): for bounds widened or narrowed by a duration, which hold no event outside it. */
export function clampInstant(us: bigint): bigint {
  return us < MIN_US ? MIN_US : us > MAX_US ? MAX_US : us;
}

/** An ISO 8601 instant (`formatInstant`'s form) minus `ms`, clamped to the supported range, as `formatInstant` writes it. */
export function isoMinusMs(iso: string, ms: number): string {
  return formatInstant(clampInstant(isoToUs(iso) - BigInt(Math.round(ms)) * 1000n));
}

/** Floor division of bigints (rounds toward −∞, unlike `/`). */
export function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

/**
 * An instant as ISO 8601 UTC: 3 fraction digits when its microseconds are
 * zero (`2024-01-15T12:00:00.000Z`), 6 otherwise (`…12:00:00.000001Z`).
 * Years outside 0000–9999 take ISO's expanded form (`+010000-…`), as `Date` writes them.
 * @param us epoch microseconds
 */
export function formatInstant(us: bigint): string {
  // One entry of memory: a landing writes the same ingestion time on every row of a source.
  if (us === lastFormatted.us) return lastFormatted.text;
  let ms: number, micro: number;
  const n = Number(us);
  if (Number.isSafeInteger(n)) {
    // Exact in doubles (years to 2255): the remainder and the quotient of an integer need no bigint division.
    micro = n % 1000;
    if (micro < 0) micro += 1000;
    ms = (n - micro) / 1000;
  } else {
    const big = floorDiv(us, 1000n);
    micro = Number(us - big * 1000n);
    ms = Number(big);
  }
  const iso = isoOfMs(ms);
  const text = micro === 0 ? iso : `${iso.slice(0, -1)}${String(micro).padStart(3, "0")}Z`;
  lastFormatted = { us, text };
  return text;
}
let lastFormatted = { us: 0n, text: "1970-01-01T00:00:00.000Z" };

const DAY_MS = 86_400_000;
/** The last day `isoOfMs` wrote, epoch days, and its `YYYY-MM-DDT`. */
let lastDay = NaN,
  lastDayText = "";
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * `new Date(ms).toISOString()`, the time of day written by hand and the date remembered from the last call
 * (`toISOString` costs about 1.5 µs, a landing writes two instants per row, mostly of one day).
 */
function isoOfMs(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  if (day !== lastDay) {
    const start = new Date(day * DAY_MS).toISOString();
    // An expanded year (`+010000-…`) or an invalid time: as Date writes it.
    if (start.length !== 24) return new Date(ms).toISOString();
    lastDay = day;
    lastDayText = start.slice(0, 11);
  }
  let rest = ms - day * DAY_MS;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const sec = Math.floor(rest / 1000);
  const milli = rest - sec * 1000;
  return `${lastDayText}${pad2(h)}:${pad2(m)}:${pad2(sec)}.${milli < 10 ? `00${milli}` : milli < 100 ? `0${milli}` : milli}Z`;
}

/**
 * Epoch µs of an ISO 8601 UTC string as `formatInstant` and the pool's
 * `timestamptz` parser write them (`…:00.000Z`, `…:00.000001Z`, `+010000-…`,
 * year 0000). Not for user input: use `parseInstant`.
 * @throws RangeError for any other text
 */
export function isoToUs(iso: string): bigint {
  const m = /^(.*T\d{2}:\d{2}:\d{2})(?:\.(\d{1,3})(\d{0,3}))?Z$/.exec(iso);
  const ms = m ? Date.parse(`${m[1]}.${(m[2] ?? "").padEnd(3, "0")}Z`) : NaN;
  if (!m || Number.isNaN(ms)) throw new RangeError(`not an ISO 8601 UTC instant: ${JSON.stringify(iso)}`);
  return BigInt(ms) * 1000n + BigInt((m[3] ?? "").padEnd(3, "0"));
}

/** Epoch µs of an epoch-ms number (a `Date.now()` or a landing time). */
export const usOfMs = (ms: number): bigint => BigInt(ms) * 1000n;

/** Epoch ms of an instant, rounded toward −∞ (for clocks and logs, never for window math). */
export const msOfUs = (us: bigint): number => Number(floorDiv(us, 1000n));
