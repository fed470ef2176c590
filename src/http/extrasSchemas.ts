/** OpenAPI shapes of what holds the watermark and the last reconcile run (docs/continuous-reconcile.md). */
import { z } from "zod";
import { isoInstant as instant } from "./schemas.js";

export const watermarkHolderSchema = z
  .object({
    input: z.string().nullable().meta({
      description:
        "the input whose watermark the policy chose after the last batch; null when none has one or all are idle",
    }),
    watermark: instant.nullable(),
    since: instant
      .nullable()
      .meta({ description: "start of the first batch of the latest run of batches this input held the watermark in" }),
    behindOthersMs: z.number().nullable().meta({
      description:
        "policy min: how far its watermark is behind the nearest other non-idle input's, ms; policy max: how far ahead; null without another",
    }),
    others: z.array(
      z.object({
        input: z.string(),
        watermark: instant.nullable(),
        idle: z.boolean().meta({ description: "silent for watermark.idleTimeout: left out of the choice" }),
        aheadOfHolderMs: z.number().nullable().meta({ description: "this input's watermark minus the holder's, ms" }),
      }),
    ),
  })
  .nullable()
  .meta({ description: "what holds the pipeline's watermark; null before the first batch" });

export const lastReconcileSchema = z
  .object({
    runId: z.number(),
    pipeline: z.string(),
    trigger: z.enum(["cron", "api", "cli"]),
    cronSlot: instant.nullable(),
    sample: z.string().meta({ example: "5%" }),
    rangeStart: instant.nullable().meta({ description: "the slice of event time checked; null: all time" }),
    rangeEnd: instant.nullable(),
    status: z.enum(["running", "succeeded", "failed"]),
    bronzeSnapshot: z.number().nullable(),
    watermark: instant.nullable(),
    windowsChecked: z.number().nullable(),
    windowsMismatched: z.number().nullable(),
    windowsFailed: z.number().nullable(),
    ledgerBalanced: z.boolean().nullable(),
    error: z.string().nullable(),
    startedAt: instant,
    finishedAt: instant.nullable(),
  })
  .nullable()
  .meta({ description: "the last finished reconcile run (correction.reconcile); null before any" });
