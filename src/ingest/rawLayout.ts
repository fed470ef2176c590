/**
 * A CSV row's raw text, kept only when its columns do not give it back
 * (issue 30 item 2; drizzle/0039_bronze_raw_elided.sql). A source's layout is
 * one letter per CSV column, in order:
 *
 *   e  event_id                      t  event_time as the landing writes it
 *   i  ingestion_time, likewise      k  group_key (one key field)
 *   v  value (numeric text)          x  a field no column holds
 *   a  a field no column holds that is an instant: kept in `raw_at`
 *      (8 bytes) instead of as text (drizzle/0045_bronze_raw_instant.sql),
 *      or nothing (`raw_at` NULL) when its text is the event time's as the
 *      t letter writes it (drizzle/0047_bronze_raw_at_event_time.sql); at
 *      most one per layout, the first such field
 *
 * An accepted row whose raw text equals those texts in the layout's order,
 * joined by commas, is written with raw NULL, its x fields, joined by
 * commas, in `raw_rest` and its a field in `raw_at` (unless it is the event time's text); every reader gets the text back from
 * `straggler.raw_of_layout` in SQL. The rules here are that
 * function's, character for character: an instant is `formatInstant`'s text
 * (ISO 8601 UTC, 3 fraction digits, or 6 when its microseconds within the
 * millisecond are not 0) with a four-digit year from 1000 to 9999 (PostgreSQL's
 * `to_char` writes other years differently); an a field is such a text naming a
 * real instant (a month's day that exists, hours to 23, seconds to 59) and, with 6
 * fraction digits, not ending in `000` (`instant_text` writes 3 then); a value is a plain decimal
 * (`-?digits[.digits]`, no leading zero, not a negative zero) as `numeric`
 * writes it back; a key is the stored key of a single key field; an x field
 * holds no comma. Anything else (quoted fields, other forms) keeps its raw text. The
 * equality is checked on every row at landing, so a row written without its
 * text always gets the same text back.
 */
import type { AdmissionPolicy, BronzeRow, RawRecord } from "../core/admission.js";
import { daysInMonth, twoDigitsAt } from "../core/timestamps.js";

/** A row's columns as the landing writes them: the instants already formatted (`formatInstant`); its record's field texts in header order. */
interface RowTexts {
  row: BronzeRow;
  eventTime: string | null;
  ingestionTime: string;
  fields: readonly (string | null)[];
}

/** A row written without its raw text: what `raw_rest` holds (null when the layout has no x) and `raw_at` (null without an a). */
interface Elided {
  rest: string | null;
  at: string | null;
}

const INSTANT = /^[1-9]\d{3}-\d\d-\d\dT\d\d:\d\d:\d\d\.(\d{3}|\d{6})Z$/;
const DECIMAL = /^-?(0|[1-9]\d*)(\.\d+)?$/;
const NEGATIVE_ZERO = /^-0(\.0+)?$/;

const instantText = (text: string | null): string | null => (text !== null && INSTANT.test(text) ? text : null);
/**
 * `instantText` for a text `formatInstant` wrote (a row's own instants): that form has the four-digit year INSTANT
 * asks for unless it starts with `0` (a year before 1000) or a sign (an expanded year), so one character tells.
 */
const formattedInstantText = (text: string | null): string | null => {
  const c = text === null ? 0 : text.charCodeAt(0);
  return c >= 49 && c <= 57 ? text : null;
};
/**
 * `text` when PostgreSQL reads it as a timestamptz that `straggler.instant_text` writes back as `text`
 * character for character, else null: INSTANT's form, a day that exists in its month (leap years by the
 * Gregorian rule, as PostgreSQL's), hours 00–23, minutes and seconds 00–59 (PostgreSQL takes `24:00:00` and
 * `:60` as the next day or minute), and no 6-digit fraction ending in `000` (written back with 3 digits).
 */
function atInstantText(text: string | null): string | null {
  if (text === null || !INSTANT.test(text)) return null;
  // INSTANT matched: every two-digit field is digits.
  const month = twoDigitsAt(text, 5),
    day = twoDigitsAt(text, 8);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(twoDigitsAt(text, 0) * 100 + twoDigitsAt(text, 2), month))
    return null;
  if (twoDigitsAt(text, 11) > 23 || twoDigitsAt(text, 14) > 59 || twoDigitsAt(text, 17) > 59) return null;
  if (text.length === 27 && text.endsWith("000Z")) return null;
  return text;
}
const valueText = (value: string | null): string | null =>
  value !== null && DECIMAL.test(value) && !NEGATIVE_ZERO.test(value) ? value : null;

/** The text layout letter `c` gives for `r`, or null when that column gives none. */
function part(c: string, r: RowTexts): string | null {
  switch (c) {
    case "e":
      return r.row.eventId;
    case "t":
      return formattedInstantText(r.eventTime);
    case "i":
      return formattedInstantText(r.ingestionTime);
    case "k":
      return r.row.groupKey;
    case "v":
      return valueText(r.row.value);
    default:
      return null;
  }
}

/**
 * Whether `raw` is what `layout` gives back for a row, as `straggler.raw_of_layout` computes it
 * from the row's columns and the x fields.
 * @returns the row's `raw_rest` when it is (`{ rest }`), else null: the row keeps its raw text
 */
function elide(layout: string, r: RowTexts, raw: string): Elided | null {
  if (r.fields.length !== layout.length) return null;
  // `raw` read part by part against the join: no joined text is built.
  let at = 0;
  let rest: string | null = null,
    instant: string | null = null;
  for (let i = 0; i < layout.length; i++) {
    const c = layout[i]!;
    let p: string | null;
    if (c === "x") {
      p = r.fields[i] ?? "";
      if (p.includes(",")) return null;
      rest = rest === null ? p : `${rest},${p}`;
    } else if (c === "a") {
      const text = r.fields[i] ?? null;
      // The event time's own text (an on-time arrival, say): raw_at stays NULL and reads back as the event
      // time, as the t letter does (drizzle/0047_bronze_raw_at_event_time.sql).
      if (text !== null && text === r.eventTime && formattedInstantText(text) !== null) p = text;
      else p = instant = atInstantText(text);
    } else p = part(c, r);
    if (p === null) return null;
    if (i > 0 && raw.charCodeAt(at++) !== 44 /* , */) return null;
    if (!raw.startsWith(p, at)) return null;
    at += p.length;
  }
  return at === raw.length ? { rest, at: instant } : null;
}

/**
 * The layout of a CSV record's columns (in the order of `rec.fields`, the header's), found by
 * which column of the classified row each field's text equals, and checked against the raw text.
 * @returns the layout, or null when some field is not one of the row's columns or the raw text is not their plain join
 */
function layoutOf(rec: RawRecord, r: RowTexts, policy: AdmissionPolicy): string | null {
  if (rec.fields === null) return null;
  const f = policy.fields;
  const singleKey = f.groupKey.length === 1 ? f.groupKey[0] : undefined;
  let layout = "";
  let instant = false;
  for (const [name, text] of Object.entries(rec.fields)) {
    let c = "x";
    if (text === null) c = "x";
    else if (name === f.eventId && text === r.row.eventId) c = "e";
    else if (name === f.eventTime && text === instantText(r.eventTime)) c = "t";
    else if (text === instantText(r.ingestionTime)) c = "i";
    else if (name === singleKey && text === r.row.groupKey) c = "k";
    else if (name === f.value && text === valueText(r.row.value)) c = "v";
    else if (!instant && atInstantText(text) !== null) {
      c = "a";
      instant = true;
    }
    layout += c;
  }
  // Worth it only when some column gives a field back.
  return /[^x]/.test(layout) && elide(layout, r, rec.raw) !== null ? layout : null;
}

/** Accepted records whose layout is looked for before a source gives up on one (each costs one look at its fields). */
const LAYOUT_TRIES = 16;

/** What one source's landing does with raw texts: which to write, and the layout it wrote rows by. */
export interface RawElider {
  /**
   * The raw text, `raw_rest` and `raw_at` to write for an accepted record classified as `row` (instants as
   * `formatInstant` writes them): `{ raw: null, rest, at }` when its columns give its text back, else its own text.
   */
  accepted(
    rec: RawRecord,
    row: BronzeRow,
    eventTime: string | null,
    ingestionTime: string,
  ): { raw: string | null; rest: string | null; at: string | null };
  /** The layout rows were written by without their raw text; null while every row kept its text. */
  readonly layout: string | null;
}

/**
 * A source's elider: the first accepted record asks `enabled` (once) whether rows may go without their text;
 * the layout is the first of up to `LAYOUT_TRIES` accepted records' that gives its record back.
 */
export function rawElider(policy: AdmissionPolicy, enabled: () => boolean): RawElider {
  let on: boolean | undefined;
  let layout: string | null = null,
    tries = 0,
    used: string | null = null;
  return {
    accepted(rec, row, eventTime, ingestionTime) {
      on ??= enabled();
      if (!on || rec.fields === null) return { raw: rec.raw, rest: null, at: null };
      if (layout === null && tries >= LAYOUT_TRIES) return { raw: rec.raw, rest: null, at: null };
      const texts: RowTexts = { row, eventTime, ingestionTime, fields: Object.values(rec.fields) };
      if (layout === null) {
        tries++;
        layout = layoutOf(rec, texts, policy);
      }
      const e = layout === null ? null : elide(layout, texts, rec.raw);
      if (e === null) return { raw: rec.raw, rest: null, at: null };
      used = layout;
      return { raw: null, rest: e.rest, at: e.at };
    },
    get layout() {
      return used;
    },
  };
}
