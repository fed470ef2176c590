import { describe, expect, it } from "vitest";
import { pipelineSchema } from "../../src/config/pipelineSchema.js";
import type { PipelineConfig } from "../../src/config/pipelines.js";
import { classifyRecord, groupKeyOf, type BronzeRow, type RawRecord } from "../../src/core/admission.js";
import { NULL_KEY } from "../../src/core/keys.js";

const LANDED = Date.UTC(2024, 4, 1, 13, 0); // landing time passed in by the caller, epoch ms
/** Epoch µs of epoch ms: rows carry instants in µs. */
const U = (ms: number) => BigInt(ms) * 1000n;
const SOURCE = "batch-7.csv";

/** A pipeline built through the real schema; `over` replaces top-level sections. */
function pipeline(over: Record<string, unknown> = {}): PipelineConfig {
  return pipelineSchema.parse({
    name: "orders",
    source: { landingDir: "/tmp/landing", format: "csv" },
    fields: { eventTime: "ts", value: "amount", groupKey: ["region"] },
    timestamps: { format: "iso8601" },
    window: { type: "tumbling", size: "10 minutes" },
    watermark: { delay: "5 minutes" },
    ...over,
  });
}

const rec = (fields: Record<string, string | null> | null, extra: Partial<RawRecord> = {}): RawRecord => ({
  line: 3,
  raw: fields === null ? "garbage" : JSON.stringify(fields),
  fields,
  ...extra,
});

/** The accepted row classifyRecord should produce for `r` under the default pipeline. */
const accepted = (r: RawRecord, over: Partial<BronzeRow>): BronzeRow => ({
  eventId: `${SOURCE}:${r.line}`,
  line: r.line,
  raw: r.raw,
  eventTimeUs: null,
  ingestionTimeUs: U(LANDED),
  groupKey: "",
  value: null,
  status: "accepted",
  reason: null,
  detail: null,
  ...over,
});

describe("classifyRecord: accepted records", () => {
  it("parses event time, value and key, makes the event id source:line and uses the landing time", () => {
    const r = rec({ ts: "2024-05-01T12:10:00Z", amount: "9.75", region: "eu" });
    expect(classifyRecord(r, pipeline(), SOURCE, LANDED)).toEqual(
      accepted(r, { eventTimeUs: U(Date.UTC(2024, 4, 1, 12, 10)), groupKey: "eu", value: "9.75" }),
    );
  });

  it("makes the event id origin:line when the record names its origin file", () => {
    const r = rec({ ts: "2024-05-01T12:10:00Z", amount: "1", region: "eu" }, { line: 42, origin: "day-1.jsonl" });
    expect(classifyRecord(r, pipeline(), SOURCE, LANDED).eventId).toBe("day-1.jsonl:42");
  });

  it("uses the configured event id field when there is one", () => {
    const p = pipeline({ fields: { eventId: "id", eventTime: "ts", value: "amount" } });
    const r = rec({ id: "ord-17", ts: "2024-05-01T12:10:00Z", amount: "1" }, { origin: "ignored.csv" });
    expect(classifyRecord(r, p, SOURCE, LANDED).eventId).toBe("ord-17");
  });

  it("accepts a count-only pipeline (no value field) with value null", () => {
    const p = pipeline({ fields: { eventTime: "ts" } });
    const r = rec({ ts: "2024-05-01T12:10:00Z", amount: "NaN" });
    expect(classifyRecord(r, p, SOURCE, LANDED)).toEqual(accepted(r, { eventTimeUs: U(Date.UTC(2024, 4, 1, 12, 10)) }));
  });

  it("reads zone-less times in the configured zone and epoch formats", () => {
    const ny = pipeline({ timestamps: { format: "iso8601", timeZone: "America/New_York" } });
    expect(classifyRecord(rec({ ts: "2024-05-01 08:10:00", amount: "1" }), ny, SOURCE, LANDED).eventTimeUs).toBe(
      U(Date.UTC(2024, 4, 1, 12, 10)),
    );
    const secs = pipeline({ timestamps: { format: "epoch_s" } });
    expect(classifyRecord(rec({ ts: "1700000000.5", amount: "1" }), secs, SOURCE, LANDED).eventTimeUs).toBe(
      U(1_700_000_000_500),
    );
  });
});

describe("classifyRecord: group key", () => {
  const r = { ts: "2024-05-01T12:10:00Z", amount: "1", region: "eu", shop: "s1" };

  it("is the field's text for a single key field", () => {
    expect(
      classifyRecord(rec(r), pipeline({ fields: { eventTime: "ts", groupKey: ["region"] } }), SOURCE, LANDED).groupKey,
    ).toBe("eu");
  });

  it("is a JSON array for several key fields", () => {
    expect(
      classifyRecord(rec(r), pipeline({ fields: { eventTime: "ts", groupKey: ["region", "shop"] } }), SOURCE, LANDED)
        .groupKey,
    ).toBe('["eu","s1"]');
  });

  it('is "" without key fields', () => {
    expect(classifyRecord(rec(r), pipeline({ fields: { eventTime: "ts" } }), SOURCE, LANDED).groupKey).toBe("");
  });

  it('stores a null or absent single key as NULL_KEY, keeps "" as the empty string, and keeps null inside a composite key', () => {
    expect(groupKeyOf({ region: null }, ["region"])).toBe(NULL_KEY);
    expect(groupKeyOf({}, ["region"])).toBe(NULL_KEY);
    expect(groupKeyOf({ region: "" }, ["region"])).toBe("");
    expect(groupKeyOf({ region: "eu" }, ["region", "shop"])).toBe('["eu",null]');
    expect(groupKeyOf({ region: "", shop: "x" }, ["region", "shop"])).toBe('["","x"]');
    expect(groupKeyOf({ region: null, shop: "x" }, ["region", "shop"])).toBe('[null,"x"]');
    expect(groupKeyOf(null, ["region"])).toBe("");
  });

  it("canonicalises a key field only when its JSON value was a number", () => {
    expect(groupKeyOf({ store: "7.0" }, ["store"], ["store"])).toBe("7");
    expect(groupKeyOf({ store: "7.0" }, ["store"])).toBe("7.0");
    expect(groupKeyOf({ store: "7.0", r: "1E1" }, ["store", "r"], ["r", "store"])).toBe('["7","10"]');
  });

  it("quarantines a key holding U+FFFF (reserved for the null key) as MALFORMED", () => {
    const row = classifyRecord(
      rec({ ts: "2024-05-01T12:10:00Z", amount: "1", region: "\uFFFF" }),
      pipeline(),
      SOURCE,
      LANDED,
    );
    expect([row.status, row.reason, row.detail, row.groupKey]).toEqual([
      "quarantined",
      "MALFORMED",
      "group key contains U+FFFF, a Unicode noncharacter reserved for the null key",
      "",
    ]);
  });

  it('missingKey: quarantine makes a null or absent key field MISSING_KEY, naming the fields; "" is a key', () => {
    const p = pipeline({
      fields: { eventTime: "ts", value: "amount", groupKey: ["region", "shop"] },
      admission: { missingKey: "quarantine" },
    });
    const one = classifyRecord(rec({ ts: "2024-05-01T12:10:00Z", amount: "1", region: null }), p, SOURCE, LANDED);
    expect([one.status, one.reason, one.detail]).toEqual([
      "quarantined",
      "MISSING_KEY",
      'no group key in fields "region", "shop"',
    ]);
    const empty = classifyRecord(
      rec({ ts: "2024-05-01T12:10:00Z", amount: "1", region: "", shop: "s" }),
      p,
      SOURCE,
      LANDED,
    );
    expect([empty.status, empty.groupKey]).toEqual(["accepted", '["","s"]']);
  });

  it("keeps a key that looks like JSON distinct from a composite key", () => {
    expect(groupKeyOf({ region: '["eu","s1"]' }, ["region"])).toBe('["eu","s1"]');
    expect(groupKeyOf({ a: 'x","y', b: "z" }, ["a", "b"])).toBe('["x\\",\\"y","z"]');
  });
});

describe("classifyRecord: ingestion time", () => {
  const p = pipeline({ fields: { eventTime: "ts", ingestionTime: "ingested", value: "amount" } });

  it("comes from the record when the producer supplies it", () => {
    const row = classifyRecord(
      rec({ ts: "2024-05-01T12:10:00Z", ingested: "2024-05-01T12:11:00Z", amount: "1" }),
      p,
      SOURCE,
      LANDED,
    );
    expect(row.ingestionTimeUs).toBe(U(Date.UTC(2024, 4, 1, 12, 11)));
    expect(row.status).toBe("accepted");
  });

  it("falls back to the landing time when the record's field is empty", () => {
    const row = classifyRecord(rec({ ts: "2024-05-01T12:10:00Z", ingested: null, amount: "1" }), p, SOURCE, LANDED);
    expect(row.ingestionTimeUs).toBe(U(LANDED));
    expect(row.status).toBe("accepted");
  });
});

describe("classifyRecord: quarantine reasons", () => {
  const quarantined = (row: BronzeRow) => [row.status, row.reason, row.detail];

  it("MALFORMED when the reader could not make fields, with the reader's reason", () => {
    const r = rec(null, { parseError: "expected 3 fields, got 2" });
    expect(classifyRecord(r, pipeline(), SOURCE, LANDED)).toEqual({
      ...accepted(r, {}),
      status: "quarantined",
      reason: "MALFORMED",
      detail: "expected 3 fields, got 2",
    });
    expect(quarantined(classifyRecord(rec(null), pipeline(), SOURCE, LANDED))).toEqual([
      "quarantined",
      "MALFORMED",
      "not a record",
    ]);
  });

  it("MALFORMED when the configured event id is missing", () => {
    const p = pipeline({ fields: { eventId: "id", eventTime: "ts", value: "amount" } });
    const detail = 'missing event id field "id"';
    expect(
      quarantined(classifyRecord(rec({ id: null, ts: "2024-05-01T12:10:00Z", amount: "1" }), p, SOURCE, LANDED)),
    ).toEqual(["quarantined", "MALFORMED", detail]);
    const absent = classifyRecord(rec({ ts: "2024-05-01T12:10:00Z", amount: "1" }), p, SOURCE, LANDED);
    expect(quarantined(absent)).toEqual(["quarantined", "MALFORMED", detail]);
    expect(absent.eventId).toBe(`${SOURCE}:3`); // a made-up id still identifies the bronze row
  });

  it("NULL_TS when the event time is empty or absent", () => {
    const detail = 'no event time in field "ts"';
    expect(quarantined(classifyRecord(rec({ ts: null, amount: "1" }), pipeline(), SOURCE, LANDED))).toEqual([
      "quarantined",
      "NULL_TS",
      detail,
    ]);
    expect(quarantined(classifyRecord(rec({ amount: "1" }), pipeline(), SOURCE, LANDED))).toEqual([
      "quarantined",
      "NULL_TS",
      detail,
    ]);
  });

  it("PARSE_FAIL for an event time that is not a strict timestamp", () => {
    expect(
      quarantined(classifyRecord(rec({ ts: "2021-02-29T00:00:00Z", amount: "1" }), pipeline(), SOURCE, LANDED)),
    ).toEqual(["quarantined", "PARSE_FAIL", 'event time "ts": no such date: 2021-02-29']);
    // Zone-less without a configured time zone.
    const row = classifyRecord(rec({ ts: "2024-05-01 12:10:00", amount: "1" }), pipeline(), SOURCE, LANDED);
    expect([row.reason, row.eventTimeUs]).toEqual(["PARSE_FAIL", null]);
  });

  it("PARSE_FAIL for an ingestion time that is not a strict timestamp", () => {
    const p = pipeline({ fields: { eventTime: "ts", ingestionTime: "ingested", value: "amount" } });
    expect(
      quarantined(
        classifyRecord(rec({ ts: "2024-05-01T12:10:00Z", ingested: "soon", amount: "1" }), p, SOURCE, LANDED),
      ),
    ).toEqual(["quarantined", "PARSE_FAIL", 'ingestion time "ingested": not an ISO 8601 timestamp: "soon"']);
  });

  describe("FUTURE_TS against the ingestion time", () => {
    const p = pipeline({
      fields: { eventTime: "ts", ingestionTime: "ingested", value: "amount" },
      admission: { maxFutureSkew: "1 hour" },
    });
    const at = (ts: string, ingested: string | null) =>
      classifyRecord(rec({ ts, ingested, amount: "1" }), p, SOURCE, LANDED);

    it("accepts an event exactly maxFutureSkew after its ingestion time", () => {
      const row = at("2024-05-01T13:11:00.000Z", "2024-05-01T12:11:00.000Z");
      expect([row.status, row.reason, row.eventTimeUs]).toEqual(["accepted", null, U(Date.UTC(2024, 4, 1, 13, 11))]);
    });

    it("quarantines one microsecond beyond, saying by how much in ms", () => {
      expect(quarantined(at("2024-05-01T13:11:00.000001Z", "2024-05-01T12:11:00.000Z"))).toEqual([
        "quarantined",
        "FUTURE_TS",
        "event time is 3600000.001 ms after its ingestion time (max 3600000 ms)",
      ]);
      expect(at("2024-05-01T13:11:00.000001Z", "2024-05-01T12:11:00.000001Z").status).toBe("accepted");
    });

    it("quarantines one millisecond beyond", () => {
      expect(quarantined(at("2024-05-01T13:11:00.001Z", "2024-05-01T12:11:00.000Z"))).toEqual([
        "quarantined",
        "FUTURE_TS",
        "event time is 3600001 ms after its ingestion time (max 3600000 ms)",
      ]);
    });

    it("measures against the landing time when the record has none", () => {
      expect(at("2024-05-01T14:00:00.000Z", null).status).toBe("accepted"); // LANDED + 1 h
      expect(at("2024-05-01T14:00:00.001Z", null).reason).toBe("FUTURE_TS");
    });

    it("checks 1 hour by default, and not at all with maxFutureSkew: null", () => {
      const byDefault = pipeline({ fields: { eventTime: "ts", value: "amount" } });
      expect(classifyRecord(rec({ ts: "2024-05-01T14:00:00Z", amount: "1" }), byDefault, SOURCE, LANDED).status).toBe(
        "accepted",
      );
      expect(
        classifyRecord(rec({ ts: "2024-05-01T14:00:00.001Z", amount: "1" }), byDefault, SOURCE, LANDED).reason,
      ).toBe("FUTURE_TS");
      const open = pipeline({ fields: { eventTime: "ts", value: "amount" }, admission: { maxFutureSkew: null } });
      expect(classifyRecord(rec({ ts: "2099-01-01T00:00:00Z", amount: "1" }), open, SOURCE, LANDED).status).toBe(
        "accepted",
      );
    });
  });

  it("TOO_OLD before minEventTime; minEventTime itself is accepted", () => {
    const p = pipeline({ admission: { minEventTime: "2000-01-01T00:00:00Z" } });
    expect(
      quarantined(classifyRecord(rec({ ts: "1999-12-31T23:59:59.999Z", amount: "1" }), p, SOURCE, LANDED)),
    ).toEqual(["quarantined", "TOO_OLD", "event time before minEventTime 2000-01-01T00:00:00.000Z"]);
    expect(classifyRecord(rec({ ts: "2000-01-01T00:00:00.000Z", amount: "1" }), p, SOURCE, LANDED).status).toBe(
      "accepted",
    );
    const micro = pipeline({ admission: { minEventTime: "2000-01-01T00:00:00.000001Z" } });
    expect(
      quarantined(classifyRecord(rec({ ts: "2000-01-01T00:00:00Z", amount: "1" }), micro, SOURCE, LANDED)),
    ).toEqual(["quarantined", "TOO_OLD", "event time before minEventTime 2000-01-01T00:00:00.000001Z"]);
    expect(classifyRecord(rec({ ts: "2000-01-01T00:00:00.000001Z", amount: "1" }), micro, SOURCE, LANDED).status).toBe(
      "accepted",
    );
  });

  it("INVALID_VALUE for a missing value", () => {
    const detail = 'no value in field "amount"';
    expect(
      quarantined(classifyRecord(rec({ ts: "2024-05-01T12:10:00Z", amount: null }), pipeline(), SOURCE, LANDED)),
    ).toEqual(["quarantined", "INVALID_VALUE", detail]);
    expect(quarantined(classifyRecord(rec({ ts: "2024-05-01T12:10:00Z" }), pipeline(), SOURCE, LANDED))).toEqual([
      "quarantined",
      "INVALID_VALUE",
      detail,
    ]);
  });

  it("INVALID_VALUE for NaN, Infinity and out-of-range values, keeping the parsed event time", () => {
    const nan = classifyRecord(rec({ ts: "2024-05-01T12:10:00Z", amount: "NaN" }), pipeline(), SOURCE, LANDED);
    expect([nan.status, nan.reason, nan.detail, nan.value, nan.eventTimeUs]).toEqual([
      "quarantined",
      "INVALID_VALUE",
      'value "amount": not a decimal number: "NaN"',
      null,
      U(Date.UTC(2024, 4, 1, 12, 10)),
    ]);
    expect(
      classifyRecord(rec({ ts: "2024-05-01T12:10:00Z", amount: "Infinity" }), pipeline(), SOURCE, LANDED).reason,
    ).toBe("INVALID_VALUE");
    expect(
      classifyRecord(rec({ ts: "2024-05-01T12:10:00Z", amount: "1e200000" }), pipeline(), SOURCE, LANDED).reason,
    ).toBe("INVALID_VALUE");
  });
});
