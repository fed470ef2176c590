/** The pipelines file's `source.nats` block: the README's example, the defaults, and what is refused with its message. */
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { pipelineSchema } from "../../src/config/pipelineSchema.js";
import { messageRecord, logSourceName } from "../../src/sources/landLogBatch.js";

const base = {
  name: "x",
  fields: { eventTime: "t", value: "v" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "1 minute" },
};
const withNats = (nats: unknown, format = "jsonl") => pipelineSchema.safeParse({ ...base, source: { format, nats } });
const issues = (r: ReturnType<typeof withNats>) => r.error?.issues.map((i) => [i.path.join("."), i.message]);

describe("source.nats config", () => {
  it("reads the README's example", () => {
    const nats = parse(`
      servers: nats://127.0.0.1:4222
      stream: EVENTS
      subject: events.*.>
      partitionToken: 2
      durable: straggler-orders
      eventIdHeader: Nats-Msg-Id
      ackWait: 1 minute
    `);
    expect(withNats(nats).data?.source.nats).toEqual({
      servers: ["nats://127.0.0.1:4222"],
      stream: "EVENTS",
      subject: "events.*.>",
      partitionToken: 2,
      durable: "straggler-orders",
      eventIdHeader: "Nats-Msg-Id",
      ackWait: 60_000,
    });
  });

  it("defaults to the local server, every subject, Nats-Msg-Id and a 60-second ackWait", () => {
    expect(withNats({ stream: "EVENTS" }).data?.source.nats).toEqual({
      servers: ["nats://127.0.0.1:4222"],
      stream: "EVENTS",
      eventIdHeader: "Nats-Msg-Id",
      ackWait: 60_000,
    });
  });

  it("refuses a partition token that is not a '*' of the subject, a CSV format, and a stream name with a dot", () => {
    expect(issues(withNats({ stream: "EVENTS", subject: "events.*.>", partitionToken: 3 }))).toEqual([
      [
        "source.nats.partitionToken",
        "token 3 of subject events.*.> is \">\"; the partition token must be a '*' wildcard",
      ],
    ]);
    expect(issues(withNats({ stream: "EVENTS", subject: "events.>", partitionToken: 4 }))).toEqual([
      [
        "source.nats.partitionToken",
        "token 4 of subject events.> is missing; the partition token must be a '*' wildcard",
      ],
    ]);
    expect(issues(withNats({ stream: "EVENTS", partitionToken: 2 }))).toEqual([
      ["source.nats.subject", "partitionToken needs a subject whose token at that position is '*', such as events.*.>"],
    ]);
    expect(issues(withNats({ stream: "EVENTS" }, "csv"))).toEqual([
      ["source.format", 'a NATS source reads one JSON object per message: expected format "jsonl"'],
    ]);
    expect(issues(withNats({ stream: "my.events" }))).toEqual([
      ["source.nats.stream", "expected a stream name without whitespace, '.', '*', '>', '/' or '\\'"],
    ]);
    expect(issues(withNats({ stream: "EVENTS", ackWait: "10 milliseconds" }))).toEqual([
      ["source.nats.ackWait", "expected an ackWait of at least 1 second"],
    ]);
  });
});

describe("a message as a record", () => {
  const msg = (text: string | Uint8Array) => ({
    partition: "a",
    offset: 5n,
    data: typeof text === "string" ? new TextEncoder().encode(text) : text,
    eventId: "nats:EV:5",
    storedUs: 1_796_000_000_000_001n,
  });

  it("is one JSON object, its trailing newline dropped, with the log's event id and stored time", () => {
    expect(messageRecord(msg('{"t":"2026-01-01T00:00:00Z","v":1.50}\n'), 3, 1024)).toEqual({
      line: 3,
      raw: '{"t":"2026-01-01T00:00:00Z","v":1.50}',
      fields: { t: "2026-01-01T00:00:00Z", v: "1.50" },
      numbers: ["v"],
      eventId: "nats:EV:5",
      ingestionTimeUs: 1_796_000_000_000_001n,
    });
  });

  it("is malformed when too long, not UTF-8 or not an object, kept as it came", () => {
    expect(messageRecord(msg("x".repeat(2000)), 1, 1024)).toEqual({
      line: 1,
      raw: "x".repeat(1024),
      fields: null,
      parseError: "longer than 1024 bytes",
      eventId: "nats:EV:5",
      ingestionTimeUs: 1_796_000_000_000_001n,
    });
    expect(messageRecord(msg(new Uint8Array([0x7b, 0xff, 0x7d])), 1, 1024)).toEqual({
      line: 1,
      raw: "{\uFFFD}",
      fields: null,
      parseError: "invalid UTF-8",
      eventId: "nats:EV:5",
      ingestionTimeUs: 1_796_000_000_000_001n,
    });
    expect(messageRecord(msg("[1,2]"), 1, 1024)).toEqual({
      line: 1,
      raw: "[1,2]",
      fields: null,
      parseError: "expected a JSON object",
      eventId: "nats:EV:5",
      ingestionTimeUs: 1_796_000_000_000_001n,
    });
  });

  it("lands under LOG/PARTITION@FIRST-OFFSET, or LOG@FIRST-OFFSET without partitions", () => {
    expect([logSourceName("nats:EV", "eu", 17n), logSourceName("nats:EV", "", 17n)]).toEqual([
      "nats:EV/eu@17",
      "nats:EV@17",
    ]);
  });
});
