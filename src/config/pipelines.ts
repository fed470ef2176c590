/**
 * The pipelines file (YAML or JSON), validated with zod. `z.infer` of these
 * schemas is the only source of the config types. Durations are Spark-style
 * strings and come out as milliseconds.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import cron from "node-cron";
import { LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { readDuration, type DurationResult } from "./duration.js";
import { natsSourceSchema } from "./natsSource.js";
import { canonicalPolicy, policyHash, policyOf } from "./policy.js";
import { tagAlternatives, tagSetting } from "./policySettings.js";
import { readShare } from "./share.js";
import { describeAs } from "./jsonSchemaHints.js";
import { describeIssues, pathText, placeOf } from "./fileErrors.js";
import { parseInstant } from "../core/timestamps.js";
import { isValidTimeZone } from "../core/timeZones.js";
import { canonicalTimeZone, type CalendarUnit, type CalendarWindowSpec, type WindowShape, type WindowSpec } from "../core/windows.js";
import { DEFAULT_INPUT, type WatermarkSettings } from "../core/watermark.js";
import { compareAbs, decimalParts, MAX_ABS_VALUE_CEILING, MAX_ABS_VALUE_DEFAULT, MAX_FRACTION_DIGITS_CEILING, MAX_FRACTION_DIGITS_DEFAULT, parseDecimal } from "../core/decimal.js";

/**
 * `admission.maxAbsValue`: a positive decimal (string or number), default 1e38 (keeps a window
 * row small: `MAX_ABS_VALUE_DEFAULT`), at most 1e131000, which leaves numeric room for any sum
 * (`MAX_ABS_VALUE_CEILING`).
 */
const maxAbsValue = z
  .union([z.string(), z.number()], { error: `expected a positive decimal such as "1e38", at most ${MAX_ABS_VALUE_CEILING}` })
  .transform((v, ctx) => {
    const text = String(v).trim();
    const parsed = parseDecimal(text);
    const parts = parsed.ok ? decimalParts(parsed.value) : undefined;
    if (parts === undefined || parts.negative || parts.digits === "" || compareAbs(parts, decimalParts(MAX_ABS_VALUE_CEILING)!) > 0) {
      ctx.addIssue({ code: "custom", message: `expected a positive decimal such as "1e38", at most ${MAX_ABS_VALUE_CEILING} (larger values could make a sum overflow numeric), got ${JSON.stringify(String(v)).slice(0, 60)}` });
      return z.NEVER;
    }
    return text;
  });

/**
 * `admission.dedupe` (README "Amended events", src/core/admission.ts `DedupeMode`): what an
 * event id accepted before does when it comes again. `first` (the default; `true` is its
 * older spelling): the first version stays, a re-send is DUPLICATE when its content (event
 * time, group key, value) is the same and AMENDED_DUPLICATE when it is not. `latest`: an
 * identical re-send is DUPLICATE, an amended one supersedes the version before it (SUPERSEDED).
 * `false`: no dedupe. Parsed as `true` (first), `false` or `"latest"`: `first` parses to the
 * value earlier releases stored, so no existing pipeline's policy version changes.
 */
const dedupeSetting = tagSetting(
  z
    .union([z.boolean(), z.enum(["first", "latest"])], { error: 'expected "first" (the first version of an event id stays), "latest" (a re-send with other content supersedes it) or false (no dedupe)' })
    .transform((v): boolean | "latest" => (v === "first" ? true : v)),
  "dedupe",
);

/**
 * A duration setting, parsed to ms (tagged so a policy change shows it as a duration again).
 * `positive`: zero is refused too; a bare `0` is named as zero rather than with the unit hint
 * (whose "0 seconds" would be refused next).
 */
const duration = (what: string, positive = false) =>
  tagSetting(
    z.unknown().transform((input, ctx) => {
      if (positive && input === 0) {
        ctx.addIssue({ code: "custom", message: `expected a duration greater than zero (${what})` });
        return z.NEVER;
      }
      const read = readDuration(input);
      if (!read.ok) {
        ctx.addIssue({ code: "custom", message: `${read.message} (${what})` });
        return z.NEVER;
      }
      return read.ms;
    }),
    "duration",
  );

const positiveDuration = (what: string) =>
  tagSetting(duration(what, true).refine((v) => v > 0, { message: `expected a duration greater than zero (${what})` }), "duration");

/** A share (`0.01` or `"1%"`), read as a fraction in [0, 1] by `readShare` (config/share.ts, the one grammar of shares). */
const share = (what: string) =>
  describeAs(
    z.unknown().transform((input, ctx) => {
      const read = readShare(input, what);
      if (!read.ok) {
        ctx.addIssue({ code: "custom", message: read.message });
        return z.NEVER;
      }
      return read.share;
    }),
    {
      description: `a share (${what}): a fraction from 0 to 1 (0.01) or a percentage ("1%")`,
      anyOf: [{ type: "number", minimum: 0, maximum: 1 }, { type: "string", pattern: "^\\s*(\\d+(\\.\\d+)?|\\.\\d+)\\s*%?\\s*$" }],
    },
  );
const batchCount = z.number().int().positive().default(10);

/** Default lease of a correction run (ms): renewed every third of it while the run works. */
export const DEFAULT_LEASE_MS = 60_000;
const MIN_LEASE_MS = 1_000;

/**
 * A 5-field cron expression (minute hour day month weekday). A run is keyed by
 * its scheduled minute (`cron_slot`), so node-cron's optional seconds field is
 * refused rather than silently run once a minute.
 */
const cronSchedule = z
  .string()
  .refine((e) => e.trim().split(/\s+/).length !== 6, {
    message: "expected a 5-field cron expression (minute hour day month weekday); seconds are not supported: each run is keyed by its scheduled minute",
    abort: true,
  })
  .refine((e) => e.trim().split(/\s+/).length === 5 && cron.validate(e), { message: 'expected a 5-field cron expression such as "*/10 * * * *"' });

/**
 * The share of a pipeline's event time a scheduled reconcile checks each run
 * (docs/continuous-reconcile.md): `all`, or a percentage `N%` with 0 < N <= 100.
 */
const reconcileSample = z.union([
  z.literal("all"),
  z
    .string()
    .regex(/^\d+(\.\d+)?%$/, { message: 'expected "all" or a percentage such as "5%"' })
    .refine((v) => Number(v.slice(0, -1)) > 0 && Number(v.slice(0, -1)) <= 100, { message: "expected a percentage above 0 and at most 100" }),
]);

/** Largest `source.maxRecordBytes`: a record is held whole in memory while it is parsed. */
export const MAX_RECORD_BYTES_LIMIT = 64 * 1024 * 1024;

const oneChar = (what: string) => z.string().length(1, `expected a single character (${what})`);

/** CSV dialect options, mapped onto csv-parse's (see src/ingest/csvRecords.ts). */
const csvDialectSchema = z
  .strictObject({
    delimiter: z.string().min(1, "expected a delimiter").max(8, "expected a delimiter of at most 8 characters").default(","),
    quote: oneChar("quote").default('"'),
    escape: oneChar("escape inside quotes").default('"'),
    relaxQuotes: z.boolean().default(false),
    multiline: z.boolean().default(true),
    trim: z.boolean().default(false),
    comment: oneChar("comment line start").optional(),
    headerCase: z.enum(["exact", "insensitive"], { error: 'expected "exact" or "insensitive"' }).default("exact"),
  })
  .prefault({});

/** The future-skew guard every pipeline has unless it says `maxFutureSkew: null`: 1 hour, in ms. */
export const DEFAULT_MAX_FUTURE_SKEW_MS = 3_600_000;

/** Pipeline names appear in folder names and URLs: keep them plain. */
export const pipelineName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, "expected 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit");

const fieldName = z.string().min(1, "expected a non-empty field name");

/**
 * A fixed-length window size or slide, or a session gap: a Spark duration greater than zero; a
 * month or a year is refused here with what to write instead (they have no fixed length: a
 * calendar month needs `window.timeZone`, which a session window does not take: `calendar` false).
 */
const windowLength = (what: string, calendar = true) =>
  tagSetting(windowLengthOf(what, calendar), "duration");

const windowLengthOf = (what: string, calendar: boolean) =>
  z.unknown().transform((input, ctx) => {
    const read: DurationResult = input === 0 ? { ok: true, ms: 0 } : readDuration(input);
    if (!read.ok) {
      const unit = /^(month|year)s have no fixed length/.exec(read.message)?.[1];
      const message =
        !calendar && unit !== undefined
          ? read.message
          : unit === "month"
          ? 'months have no fixed length: for calendar months give the window a time zone (window.timeZone, e.g. "America/New_York"), or write a fixed length such as "30 days"'
          : unit === "year"
            ? 'years have no fixed length: write a fixed length such as "365 days" (calendar windows are days, weeks or months in a window.timeZone)'
            : read.message;
      ctx.addIssue({ code: "custom", message: `${message} (${what})` });
      return z.NEVER;
    }
    if (read.ms <= 0) {
      ctx.addIssue({ code: "custom", message: `expected a duration greater than zero (${what})` });
      return z.NEVER;
    }
    return read.ms;
  });

/** Fixed-length windows (Spark's `window()`): epoch-aligned, sizes in ms. */
const fixedWindowSchema = z.discriminatedUnion(
  "type",
  [
    z.strictObject({ type: z.literal("tumbling"), size: windowLength("window size"), offset: duration("window start offset").default(0) }),
    z
      .strictObject({
        type: z.literal("sliding"),
        size: windowLength("window size"),
        slide: windowLength("window slide"),
        offset: duration("window start offset").default(0),
      })
      .refine((w) => w.slide <= w.size, { path: ["slide"], message: "expected a slide no longer than the window size" }),
  ],
  { error: 'expected window.type to be "tumbling", "sliding" or "session"' },
);

/**
 * Session windows (docs/DESIGN.md "Session windows"): per group key, a run of
 * events each at most `gap` after the previous one; the window is
 * [first event, last event + gap). `gap` is a fixed length in ms.
 */
const sessionWindowSchema = z.strictObject({ type: z.literal("session"), gap: windowLength("session gap", false) });

/** ISO weekday numbers (1 = Monday … 7 = Sunday) by the names `weekStart` takes. */
export const WEEKDAYS = { monday: 1, tuesday: 2, wednesday: 3, thursday: 4, friday: 5, saturday: 6, sunday: 7 } as const;

/** A calendar length: a whole number of days, weeks or months (`"1 day"`, `"7 days"`, `"1 month"`). */
type CalendarLength = { count: number; unit: CalendarUnit };
const CALENDAR_LENGTH = /^(?:interval\s+)?\+?(\d+)\s+(day|week|month)s?$/i;
/** The largest count a calendar length takes (`9999 days`): a bound on the windows each event is assigned to. */
export const MAX_CALENDAR_COUNT = 9999;

const calendarLength = (what: string) =>
  describeAs(calendarLengthOf(what), {
    type: "string",
    pattern: "^\\s*(?:interval\\s+)?\\+?\\d+\\s+(?:day|week|month)s?\\s*$",
    description: `a calendar window's ${what}: a whole number of days, weeks or months ("1 day", "7 days", "1 month")`,
  });

const calendarLengthOf = (what: string) =>
  z.unknown().transform((input, ctx): CalendarLength => {
    const m = typeof input === "string" ? CALENDAR_LENGTH.exec(input.trim()) : null;
    if (m === null || Number(m[1]) < 1) {
      ctx.addIssue({
        code: "custom",
        message: `a calendar window's ${what} is a whole number of days, weeks or months, such as "1 day", "7 days" or "1 month", got ${JSON.stringify(input)}; for a fixed length (hours, minutes, ...) leave out window.timeZone`,
      });
      return z.NEVER;
    }
    const count = Number(m[1]);
    const unit = m[2]!.toLowerCase() as CalendarUnit;
    if (count > MAX_CALENDAR_COUNT) {
      ctx.addIssue({ code: "custom", message: `a calendar window's ${what} is at most ${MAX_CALENDAR_COUNT} ${unit}s, got ${JSON.stringify(input)}` });
      return z.NEVER;
    }
    return { count, unit };
  });

/**
 * Calendar windows: a `window` with a `timeZone` (docs/DESIGN.md "Calendar
 * windows"). Tumbling: `size` is 1 day, 1 week or 1 month. Sliding: `slide` is
 * 1 day, 1 week or 1 month and `size` a whole number of slides (weeks count as
 * 7 days: size 1 week, slide 1 day is a 7-day window starting every local
 * midnight). `weekStart` (default monday, ISO) only for a slide or tumbling size of
 * 1 week; no `offset` (boundaries are local midnights).
 * Parsed as `{ type, calendar: CalendarWindowSpec["calendar"] }`.
 */
const calendarWindowSchema = z
  .strictObject({
    type: z.enum(["tumbling", "sliding"], { error: 'expected window.type to be "tumbling" or "sliding"' }),
    size: calendarLength("size"),
    slide: calendarLength("slide").optional(),
    timeZone: z.string().refine(isValidTimeZone, { message: 'expected an IANA time zone such as "UTC" or "America/New_York"' }).transform(canonicalTimeZone),
    weekStart: z
      .string({ error: `expected weekStart to be one of ${Object.keys(WEEKDAYS).join(", ")}` })
      .transform((day) => day.toLowerCase())
      .refine((day): day is keyof typeof WEEKDAYS => Object.hasOwn(WEEKDAYS, day), { message: `expected weekStart to be one of ${Object.keys(WEEKDAYS).join(", ")}` })
      .optional(),
    offset: z.unknown().optional(),
  })
  .transform((w, ctx) => {
    const fail = (path: string, message: string) => {
      ctx.addIssue({ code: "custom", path: [path], message });
      return z.NEVER;
    };
    if (w.offset !== undefined) return fail("offset", "a calendar window starts at local midnight: window.offset applies only to fixed-length windows (without window.timeZone)");
    const grid = w.type === "tumbling" ? w.size : w.slide;
    if (w.type === "tumbling" && w.slide !== undefined) return fail("slide", "a tumbling window has no slide: use type sliding");
    if (grid === undefined) return fail("slide", 'expected a slide for a sliding window, such as "1 day"');
    if (grid.count !== 1) {
      return w.type === "tumbling"
        ? fail("size", `a tumbling calendar window is 1 day, 1 week or 1 month, got "${grid.count} ${grid.unit}s" (for longer windows use type sliding with a slide of 1 ${grid.unit})`)
        : fail("slide", `a calendar window slides by 1 day, 1 week or 1 month, got "${grid.count} ${grid.unit}s"`);
    }
    let span: number;
    if (grid.unit === w.size.unit) span = w.size.count;
    else if (grid.unit === "day" && w.size.unit === "week") span = 7 * w.size.count;
    else return fail("size", `a window of ${w.size.count} ${w.size.unit}(s) is not a whole number of slides of 1 ${grid.unit}`);
    if (w.weekStart !== undefined && grid.unit !== "week") return fail("weekStart", `weekStart applies to windows that start every week; these start every ${grid.unit}`);
    const calendar = { unit: grid.unit, span, timeZone: w.timeZone, weekStart: WEEKDAYS[(w.weekStart ?? "monday") as keyof typeof WEEKDAYS] } satisfies CalendarWindowSpec["calendar"];
    return { type: w.type, calendar };
  });

/**
 * `window`: a session window (`type: session`), else fixed-length (Spark's)
 * without `timeZone`, calendar with it. Issues keep their paths below `window`.
 */
const windowSchema = tagAlternatives(
  z.unknown().transform((input, ctx) => {
    const calendar = typeof input === "object" && input !== null && "timeZone" in input;
    const session = typeof input === "object" && input !== null && (input as { type?: unknown }).type === "session";
    if (!calendar && typeof input === "object" && input !== null && "weekStart" in input) {
      ctx.addIssue({ code: "custom", path: ["weekStart"], message: "window.weekStart needs window.timeZone (weeks start on a local day)" });
      return z.NEVER;
    }
    const parsed = session ? sessionWindowSchema.safeParse(input) : calendar ? calendarWindowSchema.safeParse(input) : fixedWindowSchema.safeParse(input);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
    return z.NEVER;
  }),
  [fixedWindowSchema, calendarWindowSchema, sessionWindowSchema],
);

/** An input's name: what a source (landing, HTTP `?input=`, `ingest --input`, a log partition) stamps on its bronze rows. */
const INPUT_NAME_MESSAGE = "expected an input name of 1-128 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-', starting with a letter or digit";
export const inputName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, INPUT_NAME_MESSAGE);

/**
 * `watermark` (docs/DESIGN.md "Several inputs"): `delay` is the default input's
 * and every input's without its own; `inputs` names the inputs with their own
 * delay; `policy` chooses the pipeline's watermark from the inputs' (min, the
 * default, or max: Spark's `multipleWatermarkPolicy`); `idleTimeout` leaves an
 * input that sent nothing for that long (ingestion time) out of the choice.
 * Unset settings stay out of the policy, so a pipeline written before them keeps its policy version.
 */
const watermarkSchema = z
  .strictObject({
    delay: duration("watermark delay"),
    policy: z.enum(["min", "max"], { error: 'expected "min" (the slowest input holds the watermark, Spark\'s default) or "max" (the fastest input sets it)' }).optional(),
    idleTimeout: positiveDuration("how long an input may send nothing before it is left out of the watermark").optional(),
    inputs: z
      .record(inputName, z.strictObject({ delay: duration("the input's watermark delay").optional() }).prefault({}).nullable().transform((v) => v ?? {}), {
        error: (issue) => (issue.code === "invalid_type" ? "expected a map of input names to { delay }" : issue.code === "invalid_key" ? INPUT_NAME_MESSAGE : undefined),
      })
      .refine((m) => !Object.hasOwn(m, DEFAULT_INPUT), { message: `the input "${DEFAULT_INPUT}" is the one of rows landed without an input: its delay is watermark.delay` })
      .optional(),
  });

export const pipelineSchema = z
  .strictObject({
    name: pipelineName,
    source: z.strictObject({
      /** Optional: a pipeline fed only over HTTP or stdin has no landing folder. */
      landingDir: z.string().min(1, "expected a folder path").optional(),
      format: z.enum(["csv", "jsonl"], { error: 'expected "csv" or "jsonl"' }),
      settle: duration("how long a landing-folder file must be unchanged before it lands").default(2000),
      appendOnly: z.boolean().default(false),
      maxRecordBytes: z
        .number()
        .int()
        .min(1024, "expected at least 1024 bytes")
        .max(MAX_RECORD_BYTES_LIMIT, `expected at most ${MAX_RECORD_BYTES_LIMIT} bytes`)
        .default(1_048_576),
      csv: csvDialectSchema,
      /** A NATS JetStream stream consumed by the service (src/sources/nats.ts); each message is one JSON record. */
      nats: natsSourceSchema.optional(),
    })
      .refine((s) => s.nats === undefined || s.format === "jsonl", {
        path: ["format"],
        message: 'a NATS source reads one JSON object per message: expected format "jsonl"',
      })
      // A pipeline fed only over HTTP (JSON bodies) needs no source block at all.
      .prefault({ format: "jsonl" }),
    fields: z.strictObject({
      eventId: fieldName.optional(),
      eventTime: fieldName,
      ingestionTime: fieldName.optional(),
      /** One field may be written as a plain string: `groupKey: region` is `[region]`. */
      groupKey: z.union([fieldName.transform((f) => [f]), z.array(fieldName)], { error: "expected a field name or a list of field names" }).default([]),
      value: fieldName.optional(),
    }),
    timestamps: z
      .strictObject({
        format: z
          .enum(["iso8601", "epoch_s", "epoch_ms", "epoch_us", "epoch_ns"], { error: 'expected "iso8601", "epoch_s", "epoch_ms", "epoch_us" or "epoch_ns"' })
          .default("iso8601"),
        /** A non-zero fraction finer than 1 µs: refuse (PARSE_FAIL; the default when unset) or truncate. */
        subMicrosecond: z.enum(["refuse", "truncate"], { error: 'expected "refuse" or "truncate"' }).optional(),
        timeZone: z
          .string()
          .refine(isValidTimeZone, { message: 'expected an IANA time zone such as "UTC" or "America/New_York"' })
          .optional(),
      })
      .prefault({}),
    window: windowSchema,
    watermark: watermarkSchema,
    admission: z
      .strictObject({
        /** Default 1 hour (README "Admission"); `null` turns the guard off. */
        maxFutureSkew: duration("max future skew against ingestion time").nullable().default(DEFAULT_MAX_FUTURE_SKEW_MS),
        minEventTime: tagSetting(
          z
            .string()
            .refine((s) => parseInstant(s, "iso8601", undefined).ok, { message: "expected an ISO 8601 instant with a zone" })
            .transform((s) => (parseInstant(s, "iso8601", undefined) as { us: bigint }).us), // epoch µs
          "instant",
        ).optional(),
        dedupe: dedupeSetting.default(true),
        maxAbsValue: maxAbsValue.default(MAX_ABS_VALUE_DEFAULT),
        /** Most digits after the decimal point a value may have (its numeric scale); default 18, at most 16383. */
        maxFractionDigits: z
          .number({ error: `expected a whole number from 0 to ${MAX_FRACTION_DIGITS_CEILING}` })
          .int({ error: `expected a whole number from 0 to ${MAX_FRACTION_DIGITS_CEILING}` })
          .min(0, { error: `expected a whole number from 0 to ${MAX_FRACTION_DIGITS_CEILING}` })
          .max(MAX_FRACTION_DIGITS_CEILING, { error: `expected a whole number from 0 to ${MAX_FRACTION_DIGITS_CEILING} (numeric's digits after the point)` })
          .default(MAX_FRACTION_DIGITS_DEFAULT),
        missingKey: z.enum(["group", "quarantine"], { error: 'expected "group" (null and absent keys form the null group) or "quarantine" (MISSING_KEY)' }).default("group"),
      })
      .prefault({}),
    trigger: z
      .strictObject({
        interval: positiveDuration("trigger interval").default(5000),
        maxRowsPerBatch: z.number().int().positive().default(100_000),
      })
      .prefault({}),
    replay: z
      .strictObject({
        arrivalField: fieldName,
        batchSpan: positiveDuration("replay micro-batch span of arrival time"),
      })
      .optional(),
    correction: z
      .strictObject({
        schedule: cronSchedule.optional(),
        lease: duration("correction run lease")
          .refine((v) => v >= MIN_LEASE_MS, { message: `expected a lease of at least 1 second: a run renews it every third of it` })
          .default(DEFAULT_LEASE_MS),
        /** Continuous reconcile (src/correction/reconcileSchedule.ts): final windows checked against bronze on a schedule. */
        reconcile: z.strictObject({ schedule: cronSchedule, sample: reconcileSample.default("all") }).optional(),
      })
      .prefault({}),
    /**
     * The lateness advisor's kept histogram (docs/lateness.md): when `histogram` is true, each
     * micro-batch adds its rows' lateness and its pairs' slack to `straggler.lateness_histogram` in
     * its own closing statement, and the advisor answers from it in one read. Off by default: on
     * the peers workload (300k events, ms-resolution lateness) it made the replay about 40 % slower
     * (BENCHMARKS.md); when off, the advisor replays bronze as before. Not part of the policy.
     */
    lateness: z.strictObject({ histogram: z.boolean().default(false) }).prefault({}),
    /**
     * The change feed (docs/change-feed.md): when `enabled`, every statement that changes a window
     * also writes its change to `straggler.window_changes`, in the same statement and transaction.
     * Off by default: on the peers workload (300k events) it made the replay about 4 to 8 % slower
     * (BENCHMARKS.md). Not part of the policy.
     */
    feed: z.strictObject({ enabled: z.boolean().default(false) }).prefault({}),
    /** Alerts (src/observe/alerts.ts): each is off when `null`; the defaults watch the drop share and failed corrections, with no webhook. */
    alerts: z
      .strictObject({
        webhook: z.url({ error: "expected an http(s) URL for the alert webhook" }).optional(),
        dropShare: z.strictObject({ above: share("drop share"), batches: batchCount }).nullable().default({ above: 0.01, batches: 10 }),
        quarantineShare: z.strictObject({ above: share("quarantine share"), batches: batchCount, reason: z.string().min(1).optional() }).nullable().default(null),
        watermarkStalled: z.strictObject({ for: positiveDuration("watermark stall") }).nullable().default(null),
        backlog: z.strictObject({ above: z.number().int().nonnegative() }).nullable().default(null),
        correctionFailed: z.boolean().default(true),
        /** Fires while a reconcile run found final windows differing from bronze that no correction run has recomputed yet; default: on when `correction.reconcile` is set. */
        reconcileDrift: z.boolean().optional(),
      })
      .prefault({}),
    /**
     * Retention of bronze (src/retention/, README "Retention and archives"): bronze's monthly
     * partitions whose rows of this pipeline all have event times more than `correctionHorizon`
     * behind its watermark are archived to `archive` (a folder; relative to the pipelines file)
     * and dropped, and windows that could hold archived rows are no longer corrected. Unset: this
     * pipeline's rows are kept, and a partition holding any of them is never archived.
     */
    retention: z
      .strictObject({
        correctionHorizon: positiveDuration("correction horizon: how far behind the watermark a window may still be corrected"),
        archive: z.string().min(1, "expected a folder path for the archive files"),
      })
      .optional(),
    /** Automatic holds of the published results (src/lifecycle/hold.ts, README "Incidents: hold"): both off unless set. */
    hold: z
      .strictObject({
        onFutureTs: z.boolean().default(false),
        quarantineShare: z.strictObject({ above: share("quarantine share"), batches: batchCount }).nullable().default(null),
      })
      .prefault({}),
  });

/**
 * Session windows with `admission.dedupe: latest` are refused: an amended event would move
 * between sessions and split them, which the session paths do not do (README "Session windows").
 */
export const pipelineSchemaChecked = pipelineSchema.superRefine((p, ctx) => {
  if (p.window.type === "session" && p.admission.dedupe === "latest") {
    ctx.addIssue({ code: "custom", path: ["admission", "dedupe"], message: 'session windows take admission.dedupe "first" or false: an amended event ("latest") would move between sessions' });
  }
});

export const pipelinesFileSchema = z.strictObject({
  pipelines: z.array(pipelineSchemaChecked).min(1, "expected at least one pipeline"),
});

export type PipelineConfig = z.infer<typeof pipelineSchema>;

/** Raised when the pipelines file cannot be read or is invalid; the message names each bad field. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Formats zod issues as `path.to.field: message` lines. */
export function formatIssues(error: z.ZodError, prefix = ""): string {
  return error.issues
    .map((i) => `  ${prefix}${i.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "") || "(root)"}: ${i.message}`)
    .join("\n");
}

/**
 * The path of the first key named `__proto__` in the parsed file, or undefined. Such a key parses
 * as data but is dropped (or becomes a prototype) when validation copies the object, so a setting
 * would vanish silently.
 */
function reservedKeyPath(value: unknown, at: (string | number)[]): (string | number)[] | undefined {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = reservedKeyPath(v, [...at, i]);
      if (found !== undefined) return found;
    }
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "__proto__") return [...at, k];
      const found = reservedKeyPath(v, [...at, k]);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * Reads and validates a pipelines file. Relative `landingDir`s and `retention.archive`s are
 * resolved against the file's folder. Throws `ConfigError` naming every bad field, each on a line
 * `file:line:column: path: message` (src/config/fileErrors.ts: unknown keys first, with "did you
 * mean"); text that is not YAML or JSON is named at its first error's line and column.
 */
export function loadPipelines(file: string): PipelineConfig[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(`cannot read pipelines file ${file}: ${(e as Error).message}`);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  const bad = doc.errors[0];
  if (bad !== undefined) {
    const { line, col } = lines.linePos(bad.pos[0]);
    throw new ConfigError(`pipelines file ${file} is not valid YAML/JSON:\n  ${file}:${line}:${col}: ${bad.message.split("\n")[0]}`);
  }
  const raw: unknown = doc.toJS();
  const invalid = (lines_: string) => new ConfigError(`invalid pipelines file ${file}:\n${lines_}`);
  const reserved = reservedKeyPath(raw, []);
  if (reserved !== undefined) throw invalid(`  ${placeOf(file, doc, lines, reserved)}: ${pathText(reserved)}: "__proto__" cannot be a name here (JavaScript objects drop it); choose another name`);
  const parsed = pipelinesFileSchema.safeParse(raw);
  if (!parsed.success) throw invalid(describeIssues(parsed.error, raw, file, doc, lines));
  const names = new Set<string>();
  for (const [i, p] of parsed.data.pipelines.entries()) {
    if (names.has(p.name)) throw invalid(`  ${placeOf(file, doc, lines, ["pipelines", i, "name"])}: pipelines[${i}].name: duplicate pipeline name "${p.name}"`);
    names.add(p.name);
    if (p.source.landingDir !== undefined) p.source.landingDir = path.resolve(path.dirname(file), p.source.landingDir);
    if (p.retention !== undefined) p.retention.archive = path.resolve(path.dirname(file), p.retention.archive);
  }
  return parsed.data.pipelines;
}

/**
 * The pipeline's policy version: a hash of every setting that changes its
 * results (src/config/policy.ts: fields, timestamps, window, watermark,
 * admission). Recorded with each landing (`landed_sources.policy_version`) and with the live results.
 */
export function policyVersion(pipeline: PipelineConfig): string {
  return policyHash(canonicalPolicy(policyOf(pipeline)));
}

/**
 * The window spec of a pipeline (src/core/windows.ts): fixed lengths in ms (tumbling: slide = size), or the calendar shape.
 * @throws Error for a session window, which has no window spec (its windows depend on the other events: `sessionGapOf`)
 */
export function windowSpecOf(p: PipelineConfig): WindowSpec {
  const w = p.window;
  if (w.type === "session") throw new Error(`pipeline ${p.name} has session windows, which have no fixed window spec`);
  if ("calendar" in w) return { calendar: w.calendar };
  return { sizeMs: w.size, slideMs: w.type === "sliding" ? w.slide : w.size, offsetMs: w.offset };
}

/** The window shape of a pipeline for admission's range check (`windowOutsideRange`): its window spec, or its session gap. */
export function windowShapeOf(p: PipelineConfig): WindowShape {
  return p.window.type === "session" ? { sessionGapMs: p.window.gap } : windowSpecOf(p);
}

/** The session gap of a pipeline with session windows, ms; undefined for any other window. */
export function sessionGapOf(p: PipelineConfig): number | undefined {
  return p.window.type === "session" ? p.window.gap : undefined;
}

/** The watermark settings of a pipeline (src/core/watermark.ts): the default delay, per input delays, policy (min unless set), idle timeout. */
export function watermarkSettingsOf(p: PipelineConfig): WatermarkSettings {
  const w = p.watermark;
  const delays = new Map<string, number>();
  for (const [input, s] of Object.entries(w.inputs ?? {})) if (s.delay !== undefined) delays.set(input, s.delay);
  return { delayMs: w.delay, policy: w.policy ?? "min", ...(w.idleTimeout === undefined ? {} : { idleTimeoutMs: w.idleTimeout }), delays };
}

/** The inputs a source may name for `p` (HTTP `?input=`, `ingest --input`): the default input and those in `watermark.inputs`. */
export function declaredInputs(p: PipelineConfig): string[] {
  return [DEFAULT_INPUT, ...Object.keys(p.watermark.inputs ?? {})];
}
