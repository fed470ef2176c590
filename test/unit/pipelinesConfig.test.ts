import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, formatIssues, loadPipelines } from "../../src/config/pipelines.js";
import { pipelinesFileSchema } from "../../src/config/pipelineSchema.js";
import { windowSpecOf } from "../../src/core/pipelineSpec.js";
import { canonicalPolicy, diffPolicies, policyHash, policyOf } from "../../src/config/policy.js";

const valid = () => ({
  name: "orders",
  source: { landingDir: "landing/orders", format: "csv" },
  fields: { eventTime: "ts", value: "amount" },
  window: { type: "tumbling", size: "10 minutes" } as Record<string, unknown>,
  watermark: { delay: "5 minutes" },
});

/** The formatted issues for a pipelines file whose only pipeline is `p`. */
function issues(p: Record<string, unknown>): string {
  const parsed = pipelinesFileSchema.safeParse({ pipelines: [p] });
  if (parsed.success) throw new Error("expected the config to be refused");
  return formatIssues(parsed.error);
}

describe("pipelines file validation messages", () => {
  it("accepts a valid pipeline and turns durations into milliseconds", () => {
    const parsed = pipelinesFileSchema.parse({ pipelines: [valid()] });
    const p = parsed.pipelines[0]!;
    expect(p.window).toEqual({ type: "tumbling", size: 600_000, offset: 0 });
    expect(p.watermark.delay).toBe(300_000);
    expect(p.timestamps).toEqual({ format: "iso8601" });
    expect(p.admission).toEqual({
      maxFutureSkew: 3_600_000,
      dedupe: true,
      maxAbsValue: "1e38",
      maxFractionDigits: 18,
      missingKey: "group",
    }); // the default guard: 1 hour; values bounded to keep window rows small
    expect(p.fields.groupKey).toEqual([]);
    expect(windowSpecOf(p)).toEqual({ sizeMs: 600_000, slideMs: 600_000, offsetMs: 0 });
  });

  it("names the field path and what was expected for a bad duration", () => {
    expect(issues({ ...valid(), window: { type: "tumbling", size: "ten minutes" } })).toBe(
      '  pipelines[0].window.size: expected a duration like "10 minutes", got "ten minutes" (window size)',
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: 600000 } })).toBe(
      '  pipelines[0].window.size: a number without a unit: write "600000 seconds" (or minutes, hours, ...) (window size)',
    );
    expect(issues({ ...valid(), window: { type: "tumbling" } })).toBe(
      '  pipelines[0].window.size: expected a duration like "10 minutes" (window size)',
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "0 seconds" } })).toBe(
      "  pipelines[0].window.size: expected a duration greater than zero (window size)",
    );
  });

  it("correction: a 5-field schedule and a lease; a seconds field, other field counts and too short a lease are refused", () => {
    const p = pipelinesFileSchema.parse({ pipelines: [{ ...valid(), correction: { schedule: "*/10 * * * *" } }] })
      .pipelines[0]!;
    expect(p.correction).toEqual({ schedule: "*/10 * * * *", lease: 60_000 });
    expect(
      pipelinesFileSchema.parse({ pipelines: [{ ...valid(), correction: { lease: "5 seconds" } }] }).pipelines[0]!
        .correction,
    ).toEqual({ lease: 5_000 });
    const seconds =
      "  pipelines[0].correction.schedule: expected a 5-field cron expression (minute hour day month weekday); seconds are not supported: each run is keyed by its scheduled minute";
    expect(issues({ ...valid(), correction: { schedule: "*/5 * * * * *" } })).toBe(seconds);
    expect(issues({ ...valid(), correction: { schedule: "0 */10 * * * *" } })).toBe(seconds);
    const fields = '  pipelines[0].correction.schedule: expected a 5-field cron expression such as "*/10 * * * *"';
    expect(issues({ ...valid(), correction: { schedule: "* * * *" } })).toBe(fields);
    expect(issues({ ...valid(), correction: { schedule: "61 * * * *" } })).toBe(fields);
    expect(issues({ ...valid(), correction: { schedule: "every minute" } })).toBe(fields);
    expect(issues({ ...valid(), correction: { lease: "500 milliseconds" } })).toBe(
      "  pipelines[0].correction.lease: expected a lease of at least 1 second: a run renews it every third of it",
    );
    expect(issues({ ...valid(), correction: { lease: "0 seconds" } })).toBe(
      "  pipelines[0].correction.lease: expected a lease of at least 1 second: a run renews it every third of it",
    );
  });

  it("names an unknown window type", () => {
    expect(issues({ ...valid(), window: { type: "hopping", size: "10 minutes" } })).toBe(
      '  pipelines[0].window.type: expected window.type to be "tumbling", "sliding" or "session"',
    );
  });

  it("names a bad time zone", () => {
    expect(issues({ ...valid(), timestamps: { timeZone: "Mars/Olympus_Mons" } })).toBe(
      '  pipelines[0].timestamps.timeZone: expected an IANA time zone such as "UTC" or "America/New_York"',
    );
  });

  it("refuses a slide longer than the size, and a minEventTime without a zone", () => {
    expect(issues({ ...valid(), window: { type: "sliding", size: "10 minutes", slide: "11 minutes" } })).toBe(
      "  pipelines[0].window.slide: expected a slide no longer than the window size",
    );
    expect(issues({ ...valid(), admission: { minEventTime: "2020-01-01 00:00:00" } })).toBe(
      "  pipelines[0].admission.minEventTime: expected an ISO 8601 instant with a zone",
    );
  });

  it("lists every bad field, one per line, with the pipeline's index", () => {
    const text = issues({ ...valid(), name: "Bad Name", window: { type: "tumbling", size: "ten minutes" } });
    expect(text.split("\n")).toEqual([
      "  pipelines[0].name: expected 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit",
      '  pipelines[0].window.size: expected a duration like "10 minutes", got "ten minutes" (window size)',
    ]);
    const second = pipelinesFileSchema.safeParse({
      pipelines: [valid(), { ...valid(), name: "b", watermark: { delay: "soon" } }],
    });
    expect(second.success).toBe(false);
    if (!second.success)
      expect(formatIssues(second.error)).toBe(
        '  pipelines[1].watermark.delay: expected a duration like "10 minutes", got "soon" (watermark delay)',
      );
  });

  it("refuses durations Spark would not read, or that have no fixed length, saying what to write", () => {
    expect(issues({ ...valid(), watermark: { delay: "10" } })).toBe(
      '  pipelines[0].watermark.delay: a number without a unit: write "10 seconds" (or minutes, hours, ...) (watermark delay)',
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1 year" } })).toBe(
      '  pipelines[0].window.size: years have no fixed length: write a fixed length such as "365 days" (calendar windows are days, weeks or months in a window.timeZone) (window size)',
    );
    expect(issues({ ...valid(), window: { type: "sliding", size: "1 day", slide: "1 month" } })).toBe(
      '  pipelines[0].window.slide: months have no fixed length: for calendar months give the window a time zone (window.timeZone, e.g. "America/New_York"), or write a fixed length such as "30 days" (window slide)',
    );
    expect(issues({ ...valid(), admission: { maxFutureSkew: "2 min" } })).toBe(
      '  pipelines[0].admission.maxFutureSkew: unit "min" is not one Spark reads: write "2 minutes" (max future skew against ingestion time)',
    );
    expect(issues({ ...valid(), trigger: { interval: "100 microseconds" } })).toBe(
      '  pipelines[0].trigger.interval: durations are whole milliseconds: "100 microseconds" is not (trigger interval)',
    );
  });

  it("reads Spark's multi-unit and interval forms", () => {
    const p = pipelinesFileSchema.parse({
      pipelines: [
        {
          ...valid(),
          window: {
            type: "sliding",
            size: "interval 1 hour 30 minutes",
            slide: "1 minute 30 seconds",
            offset: "500 milliseconds",
          },
          watermark: { delay: "1 week" },
        },
      ],
    }).pipelines[0]!;
    expect(windowSpecOf(p)).toEqual({ sizeMs: 5_400_000, slideMs: 90_000, offsetMs: 500 });
    expect(p.watermark.delay).toBe(604_800_000);
  });

  it("accepts a one-field groupKey as a plain string, and a list", () => {
    const parse = (groupKey: unknown) =>
      pipelinesFileSchema.parse({ pipelines: [{ ...valid(), fields: { eventTime: "ts", groupKey } }] }).pipelines[0]!
        .fields.groupKey;
    expect(parse("region")).toEqual(["region"]);
    expect(parse(["region", "store"])).toEqual(["region", "store"]);
    expect(issues({ ...valid(), fields: { eventTime: "ts", groupKey: 7 } })).toBe(
      "  pipelines[0].fields.groupKey: expected a field name or a list of field names",
    );
  });

  it("guards against future-dated events by default; null turns the guard off", () => {
    const skew = (admission: unknown) =>
      pipelinesFileSchema.parse({ pipelines: [{ ...valid(), admission }] }).pipelines[0]!.admission.maxFutureSkew;
    expect(skew(undefined)).toBe(3_600_000);
    expect(skew({})).toBe(3_600_000);
    expect(skew({ maxFutureSkew: null })).toBeNull();
    expect(skew({ maxFutureSkew: "5 minutes" })).toBe(300_000);
  });

  it("takes a pipeline without a landing folder (fed over HTTP or stdin)", () => {
    const p = pipelinesFileSchema.parse({ pipelines: [{ ...valid(), source: { format: "jsonl" } }] }).pipelines[0]!;
    expect([p.source.landingDir, p.source.format]).toEqual([undefined, "jsonl"]);
  });

  it("takes a pipeline with no source block at all: JSON lines, no landing folder, the source defaults", () => {
    const { source: _omitted, ...rest } = valid();
    const p = pipelinesFileSchema.parse({ pipelines: [rest] }).pipelines[0]!;
    expect([p.source.landingDir, p.source.format, p.source.settle, p.source.appendOnly]).toEqual([
      undefined,
      "jsonl",
      2000,
      false,
    ]);
  });

  it("refuses an empty list", () => {
    const parsed = pipelinesFileSchema.safeParse({ pipelines: [] });
    expect(parsed.success).toBe(false);
    if (!parsed.success) expect(formatIssues(parsed.error)).toBe("  pipelines: expected at least one pipeline");
  });
});

describe("loadPipelines", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "straggler-config-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  it("throws ConfigError for a missing file", () => {
    const missing = path.join(dir, "nope.yaml");
    expect(() => loadPipelines(missing)).toThrow(ConfigError);
    expect(() => loadPipelines(missing)).toThrow(`cannot read pipelines file ${missing}`);
  });

  it("throws ConfigError naming the bad field of an invalid file", () => {
    const file = write(
      "bad.yaml",
      [
        "pipelines:",
        "  - name: orders",
        "    source: { landingDir: in, format: csv }",
        "    fields: { eventTime: ts }",
        "    window: { type: tumbling, size: ten minutes }",
        "    watermark: { delay: 5 minutes }",
        "",
      ].join("\n"),
    );
    let caught: unknown;
    try {
      loadPipelines(file);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toBe(
      `invalid pipelines file ${file}:\n  ${file}:5:31: pipelines[0].window.size: expected a duration like "10 minutes", got "ten minutes" (window size)`,
    );
  });

  it("throws ConfigError for text that is not YAML", () => {
    const file = write("broken.yaml", "pipelines: [\n");
    expect(() => loadPipelines(file)).toThrow(ConfigError);
    expect(() => loadPipelines(file)).toThrow(
      `pipelines file ${file} is not valid YAML/JSON:\n  ${file}:2:1: Flow sequence in block collection must be sufficiently indented and end with a ]`,
    );
  });

  it("throws ConfigError for duplicate pipeline names", () => {
    const one =
      "  - { name: a, source: { landingDir: in, format: csv }, fields: { eventTime: ts }, window: { type: tumbling, size: 1 minute }, watermark: { delay: 0 seconds } }";
    const file = write("dup.yaml", `pipelines:\n${one}\n${one}\n`);
    expect(() => loadPipelines(file)).toThrow(
      `invalid pipelines file ${file}:\n  ${file}:3:7: pipelines[1].name: duplicate pipeline name "a"`,
    );
  });

  it("refuses a key named __proto__ anywhere (it would vanish when the file is validated), naming its path", () => {
    const yamlFile = write(
      "proto-input.yaml",
      [
        "pipelines:",
        "  - name: two",
        "    source: { format: jsonl }",
        "    fields: { eventTime: ts }",
        "    window: { type: tumbling, size: 1 minute }",
        "    watermark: { delay: 0 seconds, inputs: { __proto__: { delay: 1 minute } } }",
        "",
      ].join("\n"),
    );
    expect(() => loadPipelines(yamlFile)).toThrow(
      `invalid pipelines file ${yamlFile}:\n  ${yamlFile}:6:46: pipelines[0].watermark.inputs.__proto__: "__proto__" cannot be a name here (JavaScript objects drop it); choose another name`,
    );
    const jsonFile = write("proto-top.json", '{"__proto__": {"pipelines": []}, "pipelines": []}');
    expect(() => loadPipelines(jsonFile)).toThrow(
      `invalid pipelines file ${jsonFile}:\n  ${jsonFile}:1:2: __proto__: "__proto__" cannot be a name here`,
    );
  });

  it("loads a pipeline without a landingDir and leaves it undefined", () => {
    const file = write(
      "http-only.yaml",
      [
        "pipelines:",
        "  - name: posted",
        "    source: { format: jsonl }",
        "    fields: { eventTime: ts, groupKey: region }",
        "    window: { type: tumbling, size: 1 minute }",
        "    watermark: { delay: 0 seconds }",
        "",
      ].join("\n"),
    );
    const [p] = loadPipelines(file);
    expect(p!.source.landingDir).toBeUndefined();
    expect(p!.fields.groupKey).toEqual(["region"]);
  });

  it("loads a valid file and resolves landingDir against the file's folder", () => {
    const file = write(
      "ok.yaml",
      [
        "pipelines:",
        "  - name: orders",
        "    source: { landingDir: landing/orders, format: jsonl }",
        "    fields: { eventTime: ts, groupKey: [region] }",
        "    timestamps: { timeZone: America/New_York }",
        "    window: { type: sliding, size: 10 minutes, slide: 5 minutes, offset: 1 minute }",
        "    watermark: { delay: 2 minutes }",
        "",
      ].join("\n"),
    );
    const [p, ...rest] = loadPipelines(file);
    expect(rest).toEqual([]);
    expect(p!.source.landingDir).toBe(path.join(dir, "landing/orders"));
    expect(p!.timestamps).toEqual({ format: "iso8601", timeZone: "America/New_York" });
    expect(windowSpecOf(p!)).toEqual({ sizeMs: 600_000, slideMs: 300_000, offsetMs: 60_000 });
    expect(p!.watermark.delay).toBe(120_000);
  });
});

describe("the shipped pipeline files", () => {
  const repo = path.resolve(__dirname, "../..");
  const skews = (file: string) =>
    Object.fromEntries(loadPipelines(path.join(repo, file)).map((p) => [p.name, p.admission.maxFutureSkew]));

  it("load, and each states or inherits the future-skew guard it means", () => {
    expect(skews("pipelines/pipelines.yaml")).toEqual({
      "nyc-taxi": 3_600_000,
      "nyc-taxi-daily": 3_600_000,
      "usgs-earthquakes": 3_600_000,
      "usgs-sessions": 3_600_000,
    });
    expect(skews("pipelines/seed-examples.yaml")).toEqual({
      "late-within-delay": 3_600_000,
      "future-outlier": 3_600_000,
      "future-outlier-unguarded": null,
    });
    expect(skews("docker/compose-pipelines.yaml")).toEqual({ events: 3_600_000 });
  });
});

describe("calendar windows (a window with a timeZone)", () => {
  const calendarOf = (window: Record<string, unknown>) =>
    pipelinesFileSchema.parse({ pipelines: [{ ...valid(), window }] }).pipelines[0]!;

  it("reads days, weeks (Monday by default) and months of a zone", () => {
    const day = calendarOf({ type: "tumbling", size: "1 day", timeZone: "America/New_York" });
    expect(day.window).toEqual({
      type: "tumbling",
      calendar: { unit: "day", span: 1, timeZone: "America/New_York", weekStart: 1 },
    });
    expect(windowSpecOf(day)).toEqual({
      calendar: { unit: "day", span: 1, timeZone: "America/New_York", weekStart: 1 },
    });
    expect(windowSpecOf(calendarOf({ type: "tumbling", size: "1 week", timeZone: "Europe/London" }))).toEqual({
      calendar: { unit: "week", span: 1, timeZone: "Europe/London", weekStart: 1 },
    });
    expect(
      windowSpecOf(calendarOf({ type: "tumbling", size: "1 week", timeZone: "UTC", weekStart: "sunday" })),
    ).toEqual({ calendar: { unit: "week", span: 1, timeZone: "UTC", weekStart: 7 } });
    expect(windowSpecOf(calendarOf({ type: "tumbling", size: "1 month", timeZone: "Asia/Kolkata" }))).toEqual({
      calendar: { unit: "month", span: 1, timeZone: "Asia/Kolkata", weekStart: 1 },
    });
  });

  it("reads sliding windows whose slide is one unit and whose size is whole slides (a week is 7 days)", () => {
    const spec = (size: string, slide: string) =>
      windowSpecOf(calendarOf({ type: "sliding", size, slide, timeZone: "America/New_York" }));
    expect(spec("7 days", "1 day")).toEqual({
      calendar: { unit: "day", span: 7, timeZone: "America/New_York", weekStart: 1 },
    });
    expect(spec("2 weeks", "1 day")).toEqual({
      calendar: { unit: "day", span: 14, timeZone: "America/New_York", weekStart: 1 },
    });
    expect(spec("4 weeks", "1 week")).toEqual({
      calendar: { unit: "week", span: 4, timeZone: "America/New_York", weekStart: 1 },
    });
    expect(spec("3 months", "1 month")).toEqual({
      calendar: { unit: "month", span: 3, timeZone: "America/New_York", weekStart: 1 },
    });
  });

  it("refuses calendar shapes that are not allowed, saying what is", () => {
    const ny = { timeZone: "America/New_York" };
    expect(issues({ ...valid(), window: { type: "tumbling", size: "2 days", ...ny } })).toBe(
      '  pipelines[0].window.size: a tumbling calendar window is 1 day, 1 week or 1 month, got "2 days" (for longer windows use type sliding with a slide of 1 day)',
    );
    expect(issues({ ...valid(), window: { type: "sliding", size: "6 days", slide: "2 days", ...ny } })).toBe(
      '  pipelines[0].window.slide: a calendar window slides by 1 day, 1 week or 1 month, got "2 days"',
    );
    expect(issues({ ...valid(), window: { type: "sliding", size: "10 days", slide: "1 week", ...ny } })).toBe(
      "  pipelines[0].window.size: a window of 10 day(s) is not a whole number of slides of 1 week",
    );
    expect(issues({ ...valid(), window: { type: "sliding", size: "1 month", slide: "1 day", ...ny } })).toBe(
      "  pipelines[0].window.size: a window of 1 month(s) is not a whole number of slides of 1 day",
    );
    expect(issues({ ...valid(), window: { type: "sliding", size: "7 days", ...ny } })).toBe(
      '  pipelines[0].window.slide: expected a slide for a sliding window, such as "1 day"',
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1 day", offset: "6 hours", ...ny } })).toBe(
      "  pipelines[0].window.offset: a calendar window starts at local midnight: window.offset applies only to fixed-length windows (without window.timeZone)",
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1 day", weekStart: "sunday", ...ny } })).toBe(
      "  pipelines[0].window.weekStart: weekStart applies to windows that start every week; these start every day",
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1 week", weekStart: "Sun", ...ny } })).toBe(
      "  pipelines[0].window.weekStart: expected weekStart to be one of monday, tuesday, wednesday, thursday, friday, saturday, sunday",
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1 day", timeZone: "America/Gotham" } })).toBe(
      '  pipelines[0].window.timeZone: expected an IANA time zone such as "UTC" or "America/New_York"',
    );
  });

  it("is part of the policy: a change of zone, size, slide, weekStart or kind is named by the key the user writes", () => {
    const change = (a: Record<string, unknown>, b: Record<string, unknown>) =>
      diffPolicies(policyOf(calendarOf(a)), policyOf(calendarOf(b))).map((c) => c.text);
    expect(
      change({ type: "tumbling", size: "1 day" }, { type: "tumbling", size: "1 day", timeZone: "America/New_York" }),
    ).toEqual(["window.timeZone: (not set) → America/New_York"]);
    expect(
      change(
        { type: "tumbling", size: "1 day", timeZone: "America/New_York" },
        { type: "sliding", size: "7 days", slide: "1 day", timeZone: "America/New_York" },
      ),
    ).toEqual(["window.size: 1 day → 7 days", "window.slide: (not set) → 1 day", "window.type: tumbling → sliding"]);
    expect(
      change(
        { type: "sliding", size: "4 weeks", slide: "1 week", timeZone: "UTC" },
        { type: "sliding", size: "28 days", slide: "1 day", timeZone: "UTC" },
      ),
    ).toEqual(["window.size: 4 weeks → 28 days", "window.slide: 1 week → 1 day"]);
    expect(
      change(
        { type: "tumbling", size: "1 day", timeZone: "America/New_York" },
        { type: "tumbling", size: "1 day", timeZone: "Europe/London" },
      ),
    ).toEqual(["window.timeZone: America/New_York → Europe/London"]);
    expect(
      change(
        { type: "tumbling", size: "1 week", timeZone: "UTC" },
        { type: "tumbling", size: "1 week", timeZone: "UTC", weekStart: "Sunday" },
      ),
    ).toEqual(["window.weekStart: monday → sunday"]);
  });

  it("keeps a zone under the tz database's spelling, whatever its case, so both spellings are one policy", () => {
    const lower = calendarOf({ type: "tumbling", size: "1 day", timeZone: "america/new_york" });
    const proper = calendarOf({ type: "tumbling", size: "1 day", timeZone: "America/New_York" });
    expect(windowSpecOf(lower)).toEqual({
      calendar: { unit: "day", span: 1, timeZone: "America/New_York", weekStart: 1 },
    });
    expect(policyHash(canonicalPolicy(policyOf(lower)))).toBe(policyHash(canonicalPolicy(policyOf(proper))));
    // Results recorded before the spelling was canonical are the same zone's: no change to refuse.
    const recorded = policyOf(proper) as { window: { calendar: { timeZone: string } } };
    recorded.window.calendar.timeZone = "america/new_york";
    expect(diffPolicies(recorded, policyOf(proper))).toEqual([]);
    expect(
      (
        calendarOf({ type: "tumbling", size: "1 day", timeZone: "etc/gmt+5" }).window as {
          calendar: { timeZone: string };
        }
      ).calendar.timeZone,
    ).toBe("Etc/GMT+5");
  });

  it("accepts fixed-offset zones (EST, Etc/GMT+5) as written, not as the zone a link points to", () => {
    expect(windowSpecOf(calendarOf({ type: "tumbling", size: "1 day", timeZone: "EST" }))).toEqual({
      calendar: { unit: "day", span: 1, timeZone: "EST", weekStart: 1 },
    });
    expect(windowSpecOf(calendarOf({ type: "tumbling", size: "1 day", timeZone: "Etc/GMT+5" }))).toEqual({
      calendar: { unit: "day", span: 1, timeZone: "Etc/GMT+5", weekStart: 1 },
    });
    expect(windowSpecOf(calendarOf({ type: "tumbling", size: "1 day", timeZone: "US/Pacific" }))).toEqual({
      calendar: { unit: "day", span: 1, timeZone: "US/Pacific", weekStart: 1 },
    });
  });

  it("reads weekStart in any case, and says weekStart needs a timeZone", () => {
    for (const day of ["Sunday", "SUNDAY", "sunday"]) {
      expect(windowSpecOf(calendarOf({ type: "tumbling", size: "1 week", timeZone: "UTC", weekStart: day }))).toEqual({
        calendar: { unit: "week", span: 1, timeZone: "UTC", weekStart: 7 },
      });
    }
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1 week", weekStart: "sunday" } })).toBe(
      "  pipelines[0].window.weekStart: window.weekStart needs window.timeZone (weeks start on a local day)",
    );
  });

  it("names the largest calendar count when a size is beyond it", () => {
    expect(
      issues({ ...valid(), window: { type: "sliding", size: "10000 days", slide: "1 day", timeZone: "UTC" } }),
    ).toBe('  pipelines[0].window.size: a calendar window\'s size is at most 9999 days, got "10000 days"');
    expect(windowSpecOf(calendarOf({ type: "sliding", size: "9999 days", slide: "1 day", timeZone: "UTC" }))).toEqual({
      calendar: { unit: "day", span: 9999, timeZone: "UTC", weekStart: 1 },
    });
  });

  it("refuses a calendar length without a zone, and sizes that are not a fixed length nor a calendar length (issue item 4)", () => {
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1 month" } })).toBe(
      '  pipelines[0].window.size: months have no fixed length: for calendar months give the window a time zone (window.timeZone, e.g. "America/New_York"), or write a fixed length such as "30 days" (window size)',
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1.5 months" } })).toBe(
      '  pipelines[0].window.size: months have no fixed length: for calendar months give the window a time zone (window.timeZone, e.g. "America/New_York"), or write a fixed length such as "30 days" (window size)',
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1.5 months", timeZone: "America/New_York" } })).toBe(
      '  pipelines[0].window.size: a calendar window\'s size is a whole number of days, weeks or months, such as "1 day", "7 days" or "1 month", got "1.5 months"; for a fixed length (hours, minutes, ...) leave out window.timeZone',
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "24 hours", timeZone: "America/New_York" } })).toBe(
      '  pipelines[0].window.size: a calendar window\'s size is a whole number of days, weeks or months, such as "1 day", "7 days" or "1 month", got "24 hours"; for a fixed length (hours, minutes, ...) leave out window.timeZone',
    );
    expect(issues({ ...valid(), window: { type: "tumbling", size: "1 year", timeZone: "America/New_York" } })).toBe(
      '  pipelines[0].window.size: a calendar window\'s size is a whole number of days, weeks or months, such as "1 day", "7 days" or "1 month", got "1 year"; for a fixed length (hours, minutes, ...) leave out window.timeZone',
    );
    // Without a zone, 1 day stays Spark's fixed 24 hours from the epoch (UTC).
    expect(windowSpecOf(calendarOf({ type: "tumbling", size: "1 day" }))).toEqual({
      sizeMs: 86_400_000,
      slideMs: 86_400_000,
      offsetMs: 0,
    });
  });
});
