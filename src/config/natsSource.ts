/**
 * `source.nats` of a pipeline (README "NATS JetStream source"): the JetStream
 * stream a pipeline consumes with a durable pull consumer, validated with zod.
 */
import { z } from "zod";
import { tagSetting } from "./policySettings.js";
import { readDuration } from "./duration.js";

/** A stream or consumer name as JetStream accepts it: no whitespace, `.`, `*`, `>`, `/` or `\`. */
const jsName = (what: string) =>
  z
    .string({ error: `expected the ${what} name` })
    .regex(/^[^\s.*>/\\]{1,255}$/, `expected a ${what} name without whitespace, '.', '*', '>', '/' or '\\'`);

/** Default wait for an acknowledgement before the server delivers a message again (ms). */
const DEFAULT_ACK_WAIT_MS = 60_000;

/** A duration (tagged as one, so the pipelines file's JSON Schema shows it as text). */
const ackWait = tagSetting(
  z
    .unknown()
    .transform((input, ctx) => {
      const read = readDuration(input);
      if (!read.ok) {
        ctx.addIssue({ code: "custom", message: `${read.message} (how long the server waits for an acknowledgement)` });
        return z.NEVER;
      }
      return read.ms;
    })
    .refine((ms) => ms >= 1000, { message: "expected an ackWait of at least 1 second" }),
  "duration",
);

export const natsSourceSchema = z
  .strictObject({
    /** Server URLs (`nats://host:port`); one string or a list. */
    servers: z
      .union([z.string().min(1), z.array(z.string().min(1)).min(1)], {
        error: 'expected a server URL such as "nats://127.0.0.1:4222" or a list of them',
      })
      .transform((s) => (Array.isArray(s) ? s : [s]))
      .default(["nats://127.0.0.1:4222"]),
    stream: jsName("stream"),
    /** The consumer's filter subject (default: every subject of the stream). */
    subject: z
      .string()
      .regex(/^[^\s]+$/, "expected a subject such as events.*.> (no whitespace)")
      .optional(),
    /** 1-based position in the subject of the `*` token that names a message's partition (its input). */
    partitionToken: z
      .number({ error: "expected a token position (1 is the first token)" })
      .int()
      .min(1, "expected a token position of at least 1")
      .optional(),
    /** The durable consumer's name (default `straggler-<pipeline>`). */
    durable: jsName("durable consumer").optional(),
    /** The header whose value is the event id when the pipeline reads none from the data (`fields.eventId` unset). */
    eventIdHeader: z.string().min(1, "expected a header name").default("Nats-Msg-Id"),
    ackWait: ackWait.default(DEFAULT_ACK_WAIT_MS),
  })
  .superRefine((n, ctx) => {
    if (n.partitionToken === undefined) return;
    const tokens = n.subject?.split(".");
    if (tokens === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["subject"],
        message: "partitionToken needs a subject whose token at that position is '*', such as events.*.>",
      });
    } else if (tokens[n.partitionToken - 1] !== "*") {
      ctx.addIssue({
        code: "custom",
        path: ["partitionToken"],
        message: `token ${n.partitionToken} of subject ${n.subject} is ${tokens[n.partitionToken - 1] === undefined ? "missing" : JSON.stringify(tokens[n.partitionToken - 1])}; the partition token must be a '*' wildcard`,
      });
    }
  });

export type NatsSourceConfig = z.infer<typeof natsSourceSchema>;
