/**
 * Admission: classifies one raw record as accepted or quarantined with a
 * reason (DESIGN §7–8). Pure: the landing time is passed in, the clock is
 * never read. Duplicates need the ledger and are classified in SQL when the
 * rows reach bronze (`src/ingest/copyToBronze.ts`). The checks of a field's text (magnitude limit,
 * storable keys and ids) are src/core/fieldChecks.ts's.
 */
import { canonicalNumber, fractionDigits, parseDecimal } from "./decimal.js";
import { aboveLimit, limitOf, unstorable } from "./fieldChecks.js";
import { groupKeyOf, holdsReservedKeyText, nullKeyFields } from "./keys.js";
import { formatInstant, usOfMs } from "./instants.js";
import { parseInstant, type SubMicrosecond, type TimestampFormat } from "./timestamps.js";
import { windowOutsideRange, type WindowShape } from "./windows.js";

export { groupKeyOf } from "./keys.js";

/**
 * The parts of a pipeline's config that classify a record: its fields,
 * timestamp rules and admission policy. Durations in ms, `minEventTime` in
 * epoch µs. A validated `PipelineConfig` (src/config/pipelineSchema.ts, whose zod
 * schema sets the defaults) is one; core reads only this shape.
 */
export interface AdmissionPolicy {
  fields: {
    eventId?: string | undefined;
    eventTime: string;
    ingestionTime?: string | undefined;
    groupKey: string[];
    value?: string | undefined;
  };
  timestamps: { format: TimestampFormat; timeZone?: string | undefined; subMicrosecond?: SubMicrosecond | undefined };
  admission: {
    maxFutureSkew: number | null;
    minEventTime?: bigint | undefined;
    maxAbsValue: string;
    maxFractionDigits: number;
    missingKey: "group" | "quarantine";
  };
}

/** Why a record was quarantined. Stable strings: dashboards group by them. */
export const QuarantineReason = {
  MALFORMED: "MALFORMED", // the line is not a record (bad JSON, wrong CSV field count, missing or unstorable event id or group key)
  MISSING_KEY: "MISSING_KEY", // a group key field is null or absent and admission.missingKey is "quarantine"
  NULL_TS: "NULL_TS", // no event time
  PARSE_FAIL: "PARSE_FAIL", // event or ingestion time not a strict timestamp
  FUTURE_TS: "FUTURE_TS", // event time more than maxFutureSkew after its ingestion time
  TOO_OLD: "TOO_OLD", // event time before the pipeline's minEventTime
  INVALID_VALUE: "INVALID_VALUE", // value missing, not a decimal, NaN/Infinity, above admission.maxAbsValue or with more digits after the point than admission.maxFractionDigits; or its window's aggregate failed (stream/correction)
  DUPLICATE: "DUPLICATE", // an accepted record with the same event id and the same content (see `DedupeMode`) is already in bronze
  AMENDED_DUPLICATE: "AMENDED_DUPLICATE", // admission.dedupe first: an accepted record with the same event id and other content is already in bronze; the first stays
} as const;
export type QuarantineReason = (typeof QuarantineReason)[keyof typeof QuarantineReason];

/**
 * What a re-sent event id does (`admission.dedupe`, README "Amended events").
 * A re-send's **content** is what the record makes of the event: its event
 * time (the instant, to the µs), its group key and its value (compared as
 * numbers: `10.0` and `10.00` are the same value; no value and no value are
 * the same). Its raw text, field order, other fields and ingestion time are not
 * content: a re-send that differs only there is the same event sent again.
 *
 *   - `first`: the first accepted version stays; a re-send is `DUPLICATE`
 *     when its content is the same, `AMENDED_DUPLICATE` when it is not.
 *     Results never change.
 *   - `latest`: a re-send with the same content as the current version is
 *     `DUPLICATE`; one with other content stays accepted and supersedes the
 *     current version (`SUPERSEDED`), whose windows are corrected.
 *   - `off`: no dedupe (`admission.dedupe: false`).
 */
export type DedupeMode = "first" | "latest" | "off";

/** The mode of a parsed `admission.dedupe` setting (`true` is `first`, src/config/settingSchemas.ts). */
export function dedupeModeOf(setting: boolean | "latest"): DedupeMode {
  return setting === "latest" ? "latest" : setting ? "first" : "off";
}

/**
 * A record as a reader produced it: its text, and its fields by name. A field
 * is absent (not a property), null (JSON null, an empty CSV field) or its text
 * (a JSON `""` stays `""`; admission reads it as missing everywhere but in a key).
 */
export interface RawRecord {
  /** 1-based line (or record) number within the source. */
  line: number;
  raw: string;
  fields: Record<string, string | null> | null;
  /** Names of the fields whose JSON value was a number: as a key or id they are canonicalised. */
  numbers?: string[];
  /** Why the reader could not make fields of it (then `fields` is null). */
  parseError?: string;
  /** Name of the file the record came from, when it is not the landing source itself (replay). */
  origin?: string;
  /**
   * The event id the source gives the record, used when the pipeline reads none from the
   * data (`fields.eventId` unset): a log message's id (NATS `Nats-Msg-Id`, else `nats:STREAM:seq`).
   */
  eventId?: string;
  /**
   * When the source received the record, epoch µs (a log message's time in its log): the
   * ingestion time when the pipeline reads none from the data (`fields.ingestionTime` unset),
   * instead of the landing time, so a message landed again gets the same one.
   */
  ingestionTimeUs?: bigint;
}

/** A classified bronze row. Instants are epoch µs; value is a numeric string. */
export interface BronzeRow {
  eventId: string;
  line: number;
  raw: string;
  eventTimeUs: bigint | null;
  ingestionTimeUs: bigint;
  groupKey: string;
  value: string | null;
  status: "accepted" | "quarantined";
  reason: QuarantineReason | null;
  detail: string | null;
}

/** A field's text when it holds one: absent, null and `""` are missing. */
const present = (v: string | null | undefined): v is string => v !== null && v !== undefined && v !== "";

/** Microseconds as a decimal number of ms: `3600000`, `3600000.001`. */
function msText(us: bigint): string {
  const whole = us / 1000n,
    rest = us % 1000n;
  return rest === 0n ? whole.toString() : `${whole}.${String(rest).padStart(3, "0").replace(/0+$/, "")}`;
}

/**
 * Classifies one record.
 * @param policy the pipeline's fields, timestamp rules and admission policy (a `PipelineConfig` will do)
 * @param source the landing source; event ids are made as `origin-or-source:line` when the data has none
 * @param landingTimeMs ingestion time to use when the record carries none, epoch ms
 * @param window the pipeline's window shape (`windowShapeOf`): an event whose windows reach outside the supported
 *   instants is PARSE_FAIL (`windowOutsideRange`); unchecked when undefined
 * @returns the bronze row; never throws
 */
export function classifyRecord(
  rec: RawRecord,
  policy: AdmissionPolicy,
  source: string,
  landingTimeMs: number,
  window?: WindowShape,
): BronzeRow {
  const f = rec.fields;
  const row: BronzeRow = {
    eventId: rec.eventId ?? `${rec.origin ?? source}:${rec.line}`,
    line: rec.line,
    raw: rec.raw,
    eventTimeUs: null,
    ingestionTimeUs: rec.ingestionTimeUs ?? usOfMs(landingTimeMs),
    groupKey: groupKeyOf(f, policy.fields.groupKey, rec.numbers),
    value: null,
    status: "accepted",
    reason: null,
    detail: null,
  };
  const quarantine = (reason: QuarantineReason, detail: string): BronzeRow => ({
    ...row,
    status: "quarantined",
    reason,
    detail,
  });

  if (f === null) return quarantine(QuarantineReason.MALFORMED, rec.parseError ?? "not a record");
  const keyFields = policy.fields.groupKey;
  const badKey = holdsReservedKeyText(f, keyFields)
    ? `group key contains U+FFFF, a Unicode noncharacter reserved for the null key`
    : unstorable(row.groupKey, "group key");
  if (badKey !== undefined) return { ...quarantine(QuarantineReason.MALFORMED, badKey), groupKey: "" };
  if (policy.fields.eventId !== undefined) {
    const id = f[policy.fields.eventId];
    if (!present(id))
      return quarantine(QuarantineReason.MALFORMED, `missing event id field "${policy.fields.eventId}"`);
    const badId = unstorable(id, "event id");
    if (badId !== undefined) return quarantine(QuarantineReason.MALFORMED, badId); // keeps the made-up id
    row.eventId = rec.numbers?.includes(policy.fields.eventId) ? canonicalNumber(id) : id;
  }
  if (policy.admission.missingKey === "quarantine" && keyFields.length > 0) {
    const missing = nullKeyFields(f, keyFields);
    if (missing.length > 0)
      return quarantine(
        QuarantineReason.MISSING_KEY,
        `no group key in field${missing.length > 1 ? "s" : ""} ${missing.map((m) => `"${m}"`).join(", ")}`,
      );
  }
  let valueProblem: string | undefined;
  if (policy.fields.value !== undefined) {
    const v = f[policy.fields.value];
    if (!present(v)) valueProblem = `no value in field "${policy.fields.value}"`;
    else {
      const parsed = parseDecimal(v);
      if (!parsed.ok) valueProblem = `value "${policy.fields.value}": ${parsed.detail}`;
      else if (aboveLimit(parsed.value.trim(), limitOf(policy.admission.maxAbsValue))) {
        valueProblem = `value "${policy.fields.value}": magnitude above admission.maxAbsValue ${policy.admission.maxAbsValue}: ${v.trim().slice(0, 40)}`;
      } else if (fractionDigits(parsed.value) > policy.admission.maxFractionDigits) {
        valueProblem = `value "${policy.fields.value}": ${fractionDigits(parsed.value)} digits after the decimal point, above admission.maxFractionDigits ${policy.admission.maxFractionDigits}: ${v.trim().slice(0, 40)}`;
      } else row.value = parsed.value;
    }
  }
  const { format, timeZone, subMicrosecond } = policy.timestamps;
  if (policy.fields.ingestionTime !== undefined) {
    const it = f[policy.fields.ingestionTime];
    if (present(it)) {
      const parsed = parseInstant(it, format, timeZone, subMicrosecond);
      if (!parsed.ok)
        return quarantine(
          QuarantineReason.PARSE_FAIL,
          `ingestion time "${policy.fields.ingestionTime}": ${parsed.detail}`,
        );
      row.ingestionTimeUs = parsed.us;
    }
  }
  const et = f[policy.fields.eventTime];
  if (!present(et)) return quarantine(QuarantineReason.NULL_TS, `no event time in field "${policy.fields.eventTime}"`);
  const parsed = parseInstant(et, format, timeZone, subMicrosecond);
  if (!parsed.ok)
    return quarantine(QuarantineReason.PARSE_FAIL, `event time "${policy.fields.eventTime}": ${parsed.detail}`);
  row.eventTimeUs = parsed.us;

  const skew = policy.admission.maxFutureSkew;
  const ahead = parsed.us - row.ingestionTimeUs;
  if (skew !== null && ahead > usOfMs(skew)) {
    return quarantine(
      QuarantineReason.FUTURE_TS,
      `event time is ${msText(ahead)} ms after its ingestion time (max ${skew} ms)`,
    );
  }
  // A producer-supplied ingestion time is itself a claim: one far after the landing time would
  // carry its event time past the guard above (a year-9999 event with a year-9999 ingestion time).
  const ingestedAhead = row.ingestionTimeUs - usOfMs(landingTimeMs);
  if (skew !== null && ingestedAhead > usOfMs(skew)) {
    return quarantine(
      QuarantineReason.FUTURE_TS,
      `ingestion time is ${msText(ingestedAhead)} ms after the landing time (max ${skew} ms)`,
    );
  }
  if (policy.admission.minEventTime !== undefined && parsed.us < policy.admission.minEventTime) {
    return quarantine(
      QuarantineReason.TOO_OLD,
      `event time before minEventTime ${formatInstant(policy.admission.minEventTime)}`,
    );
  }
  // Its windows (or session) must lie inside the supported instants, which every part computes with (README "Timestamps").
  const outside = window === undefined ? undefined : windowOutsideRange(parsed.us, window);
  if (outside !== undefined) return quarantine(QuarantineReason.PARSE_FAIL, outside);
  if (valueProblem !== undefined) return quarantine(QuarantineReason.INVALID_VALUE, valueProblem);
  return row;
}
