/**
 * The pipelines file's single settings (the schema, src/config/pipelineSchema.ts, and its blocks take them): durations
 * (Spark-style strings, parsed to ms and tagged as durations for the policy report), shares, a
 * cron schedule, the CSV dialect, names, and the bounds and defaults they carry.
 */
import cron from "node-cron";
import { z } from "zod";
import { readDuration } from "./duration.js";
import { tagSetting } from "./policySettings.js";
import { readShare } from "./share.js";
import { describeAs } from "./jsonSchemaHints.js";
import { compareAbs, decimalParts, MAX_ABS_VALUE_CEILING, parseDecimal } from "../core/decimal.js";

/**
 * `admission.maxAbsValue`: a positive decimal (string or number), default 1e38 (keeps a window
 * row small: `MAX_ABS_VALUE_DEFAULT`), at most 1e131000, which leaves numeric room for any sum
 * (`MAX_ABS_VALUE_CEILING`).
 */
export const maxAbsValue = z
  .union([z.string(), z.number()], {
    error: `expected a positive decimal such as "1e38", at most ${MAX_ABS_VALUE_CEILING}`,
  })
  .transform((v, ctx) => {
    const text = String(v).trim();
    const parsed = parseDecimal(text);
    const parts = parsed.ok ? decimalParts(parsed.value) : undefined;
    if (
      parts === undefined ||
      parts.negative ||
      parts.digits === "" ||
      compareAbs(parts, decimalParts(MAX_ABS_VALUE_CEILING)!) > 0
    ) {
      ctx.addIssue({
        code: "custom",
        message: `expected a positive decimal such as "1e38", at most ${MAX_ABS_VALUE_CEILING} (larger values could make a sum overflow numeric), got ${JSON.stringify(String(v)).slice(0, 60)}`,
      });
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
export const dedupeSetting = tagSetting(
  z
    .union([z.boolean(), z.enum(["first", "latest"])], {
      error:
        'expected "first" (the first version of an event id stays), "latest" (a re-send with other content supersedes it) or false (no dedupe)',
    })
    .transform((v): boolean | "latest" => (v === "first" ? true : v)),
  "dedupe",
);

/**
 * A duration setting, parsed to ms (tagged so a policy change shows it as a duration again).
 * `positive`: zero is refused too; a bare `0` is named as zero rather than with the unit hint
 * (whose "0 seconds" would be refused next).
 */
export const duration = (what: string, positive = false) =>
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

export const positiveDuration = (what: string) =>
  tagSetting(
    duration(what, true).refine((v) => v > 0, { message: `expected a duration greater than zero (${what})` }),
    "duration",
  );

/** A share (`0.01` or `"1%"`), read as a fraction in [0, 1] by `readShare` (config/share.ts, the one grammar of shares). */
export const share = (what: string) =>
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
      anyOf: [
        { type: "number", minimum: 0, maximum: 1 },
        { type: "string", pattern: "^\\s*(\\d+(\\.\\d+)?|\\.\\d+)\\s*%?\\s*$" },
      ],
    },
  );
export const batchCount = z.number().int().positive().default(10);

/** Default lease of a correction run (ms): renewed every third of it while the run works. */
export const DEFAULT_LEASE_MS = 60_000;
export const MIN_LEASE_MS = 1_000;

/**
 * A 5-field cron expression (minute hour day month weekday). A run is keyed by
 * its scheduled minute (`cron_slot`), so node-cron's optional seconds field is
 * refused rather than silently run once a minute.
 */
export const cronSchedule = z
  .string()
  .refine((e) => e.trim().split(/\s+/).length !== 6, {
    message:
      "expected a 5-field cron expression (minute hour day month weekday); seconds are not supported: each run is keyed by its scheduled minute",
    abort: true,
  })
  .refine((e) => e.trim().split(/\s+/).length === 5 && cron.validate(e), {
    message: 'expected a 5-field cron expression such as "*/10 * * * *"',
  });

/**
 * The share of a pipeline's event time a scheduled reconcile checks each run
 * (docs/continuous-reconcile.md): `all`, or a percentage `N%` with 0 < N <= 100.
 */
export const reconcileSample = z.union([
  z.literal("all"),
  z
    .string()
    .regex(/^\d+(\.\d+)?%$/, { message: 'expected "all" or a percentage such as "5%"' })
    .refine((v) => Number(v.slice(0, -1)) > 0 && Number(v.slice(0, -1)) <= 100, {
      message: "expected a percentage above 0 and at most 100",
    }),
]);

/** Largest `source.maxRecordBytes`: a record is held whole in memory while it is parsed. */
export const MAX_RECORD_BYTES_LIMIT = 64 * 1024 * 1024;

const oneChar = (what: string) => z.string().length(1, `expected a single character (${what})`);

/** CSV dialect options, mapped onto csv-parse's (see src/ingest/csvRecords.ts). */
export const csvDialectSchema = z
  .strictObject({
    delimiter: z
      .string()
      .min(1, "expected a delimiter")
      .max(8, "expected a delimiter of at most 8 characters")
      .default(","),
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
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,62}$/,
    "expected 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit",
  );

export const fieldName = z.string().min(1, "expected a non-empty field name");
