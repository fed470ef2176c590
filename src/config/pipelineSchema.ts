/**
 * The schema of the pipelines file (YAML or JSON), with zod. `z.infer` of these schemas is the
 * only source of the config types (`PipelineConfig`); the single settings are in
 * src/config/settingSchemas.ts, the `window` block in src/config/windowSchema.ts. Durations are
 * Spark-style strings and come out as milliseconds. Read by the loader (src/config/pipelines.ts),
 * the policy (src/config/policy.ts) and the JSON Schema (src/config/pipelinesJsonSchema.ts).
 */
import { z } from "zod";
import { natsSourceSchema } from "./natsSource.js";
import { tagSetting } from "./policySettings.js";
import {
  batchCount,
  cronSchedule,
  csvDialectSchema,
  dedupeSetting,
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_FUTURE_SKEW_MS,
  duration,
  fieldName,
  MAX_RECORD_BYTES_LIMIT,
  maxAbsValue,
  MIN_LEASE_MS,
  pipelineName,
  positiveDuration,
  reconcileSample,
  share,
} from "./settingSchemas.js";
import { windowSchema } from "./windowSchema.js";
import { parseInstant } from "../core/timestamps.js";
import { isValidTimeZone } from "../core/timeZones.js";
import { DEFAULT_INPUT } from "../core/watermark.js";
import { MAX_ABS_VALUE_DEFAULT, MAX_FRACTION_DIGITS_CEILING, MAX_FRACTION_DIGITS_DEFAULT } from "../core/decimal.js";

/** An input's name: what a source (landing, HTTP `?input=`, `ingest --input`, a log partition) stamps on its bronze rows. */
const INPUT_NAME_MESSAGE =
  "expected an input name of 1-128 characters of A-Z, a-z, 0-9, '_', '.', ':' or '-', starting with a letter or digit";
const inputName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/, INPUT_NAME_MESSAGE);

/**
 * `watermark` (docs/DESIGN.md "Several inputs"): `delay` is the default input's
 * and every input's without its own; `inputs` names the inputs with their own
 * delay; `policy` chooses the pipeline's watermark from the inputs' (min, the
 * default, or max: Spark's `multipleWatermarkPolicy`); `idleTimeout` leaves an
 * input that sent nothing for that long (ingestion time) out of the choice.
 * Unset settings stay out of the policy, so a pipeline written before them keeps its policy version.
 */
const watermarkSchema = z.strictObject({
  delay: duration("watermark delay"),
  policy: z
    .enum(["min", "max"], {
      error:
        'expected "min" (the slowest input holds the watermark, Spark\'s default) or "max" (the fastest input sets it)',
    })
    .optional(),
  idleTimeout: positiveDuration("how long an input may send nothing before it is left out of the watermark").optional(),
  inputs: z
    .record(
      inputName,
      z
        .strictObject({ delay: duration("the input's watermark delay").optional() })
        .prefault({})
        .nullable()
        .transform((v) => v ?? {}),
      {
        error: (issue) =>
          issue.code === "invalid_type"
            ? "expected a map of input names to { delay }"
            : issue.code === "invalid_key"
              ? INPUT_NAME_MESSAGE
              : undefined,
      },
    )
    .refine((m) => !Object.hasOwn(m, DEFAULT_INPUT), {
      message: `the input "${DEFAULT_INPUT}" is the one of rows landed without an input: its delay is watermark.delay`,
    })
    .optional(),
});

export const pipelineSchema = z.strictObject({
  name: pipelineName,
  source: z
    .strictObject({
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
    groupKey: z
      .union([fieldName.transform((f) => [f]), z.array(fieldName)], {
        error: "expected a field name or a list of field names",
      })
      .default([]),
    value: fieldName.optional(),
  }),
  timestamps: z
    .strictObject({
      format: z
        .enum(["iso8601", "epoch_s", "epoch_ms", "epoch_us", "epoch_ns"], {
          error: 'expected "iso8601", "epoch_s", "epoch_ms", "epoch_us" or "epoch_ns"',
        })
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
          .refine((s) => parseInstant(s, "iso8601", undefined).ok, {
            message: "expected an ISO 8601 instant with a zone",
          })
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
        .max(MAX_FRACTION_DIGITS_CEILING, {
          error: `expected a whole number from 0 to ${MAX_FRACTION_DIGITS_CEILING} (numeric's digits after the point)`,
        })
        .default(MAX_FRACTION_DIGITS_DEFAULT),
      missingKey: z
        .enum(["group", "quarantine"], {
          error: 'expected "group" (null and absent keys form the null group) or "quarantine" (MISSING_KEY)',
        })
        .default("group"),
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
        .refine((v) => v >= MIN_LEASE_MS, {
          message: `expected a lease of at least 1 second: a run renews it every third of it`,
        })
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
      dropShare: z
        .strictObject({ above: share("drop share"), batches: batchCount })
        .nullable()
        .default({ above: 0.01, batches: 10 }),
      quarantineShare: z
        .strictObject({ above: share("quarantine share"), batches: batchCount, reason: z.string().min(1).optional() })
        .nullable()
        .default(null),
      watermarkStalled: z
        .strictObject({ for: positiveDuration("watermark stall") })
        .nullable()
        .default(null),
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
      correctionHorizon: positiveDuration(
        "correction horizon: how far behind the watermark a window may still be corrected",
      ),
      archive: z.string().min(1, "expected a folder path for the archive files"),
    })
    .optional(),
  /** Automatic holds of the published results (src/lifecycle/hold.ts, README "Incidents: hold"): both off unless set. */
  hold: z
    .strictObject({
      onFutureTs: z.boolean().default(false),
      quarantineShare: z
        .strictObject({ above: share("quarantine share"), batches: batchCount })
        .nullable()
        .default(null),
    })
    .prefault({}),
});

/**
 * Session windows with `admission.dedupe: latest` are refused: an amended event would move
 * between sessions and split them, which the session paths do not do (README "Session windows").
 */
const pipelineSchemaChecked = pipelineSchema.superRefine((p, ctx) => {
  if (p.window.type === "session" && p.admission.dedupe === "latest") {
    ctx.addIssue({
      code: "custom",
      path: ["admission", "dedupe"],
      message:
        'session windows take admission.dedupe "first" or false: an amended event ("latest") would move between sessions',
    });
  }
});

export const pipelinesFileSchema = z.strictObject({
  pipelines: z.array(pipelineSchemaChecked).min(1, "expected at least one pipeline"),
});

export type PipelineConfig = z.infer<typeof pipelineSchema>;
