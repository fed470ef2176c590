/**
 * The pipelines file's JSON Schema (pipelines.schema.json) is what the zod schema generates now,
 * every pipelines file of the repository points editors at it, and a bad file's errors give
 * file:line:column with "did you mean" for a mistyped key.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { allowedKeys, nearestKey } from "../../src/config/fileErrors.js";
import { ConfigError, loadPipelines } from "../../src/config/pipelines.js";
import { pipelinesJsonSchema } from "../../src/config/pipelinesJsonSchema.js";

const root = path.resolve(import.meta.dirname, "../..");
const dir = mkdtempSync(path.join(os.tmpdir(), "straggler-config-errors-"));

function errorOf(name: string, lines: string[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, lines.join("\n") + "\n");
  try {
    loadPipelines(file);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message.replaceAll(file, "FILE");
  }
  throw new Error(`${name} loaded, but it is invalid`);
}

type Json = Record<string, unknown>;
const props = (s: unknown) => (s as { properties: Record<string, Json> }).properties;

describe("pipelines.schema.json", () => {
  it("is what the zod schema generates (node --import tsx scripts/pipelines-schema.ts writes it)", () => {
    const written = JSON.parse(readFileSync(path.join(root, "pipelines.schema.json"), "utf8"));
    expect(written).toEqual(pipelinesJsonSchema());
  });

  it("describes durations as text with their defaults written as durations, shares, instants, and refuses unknown keys", () => {
    const schema = pipelinesJsonSchema();
    const pipeline = (schema.properties as { pipelines: { items: Json } }).pipelines.items;
    const p = props(pipeline);
    expect([schema.$schema, schema.additionalProperties, pipeline.additionalProperties, pipeline.required]).toEqual([
      "http://json-schema.org/draft-07/schema#",
      false,
      false,
      ["name", "fields", "window", "watermark"],
    ]);
    const settle = props(p.source).settle!;
    expect([
      settle.type,
      settle.default,
      props(p.trigger).interval!.default,
      props(p.correction).lease!.default,
      props(p.admission).maxFutureSkew!.default,
    ]).toEqual(["string", "2 seconds", "5 seconds", "1 minute", "1 hour"]);
    expect(props(p.admission).minEventTime).toMatchObject({ type: "string", format: "date-time" });
    const dropShare = (props(p.alerts).dropShare!.anyOf as Json[])[0]!;
    expect([props(dropShare).above!.anyOf, props(p.alerts).dropShare!.default]).toEqual([
      [
        { type: "number", minimum: 0, maximum: 1 },
        { type: "string", pattern: "^\\s*(\\d+(\\.\\d+)?|\\.\\d+)\\s*%?\\s*$" },
      ],
      { above: 0.01, batches: 10 },
    ]);
    // The window: fixed-length (tumbling, sliding), calendar, session.
    expect(allowedKeys(["pipelines", 0, "window"])).toEqual([
      "type",
      "size",
      "offset",
      "slide",
      "timeZone",
      "weekStart",
      "gap",
    ]);
    expect(allowedKeys(["pipelines", 0, "watermark", "inputs", "mobile"])).toEqual(["delay"]);
    const pattern = new RegExp(settle.pattern as string);
    expect(
      ["10 minutes", "1 hour 30 minutes", "interval 2 days", "10", "10minutes", "ten minutes"].map((t) =>
        pattern.test(t),
      ),
    ).toEqual([true, true, true, false, false, false]);
  });

  it("is the first line of every pipelines file in the repository, and those files load", () => {
    const files = ["pipelines/pipelines.yaml", "pipelines/seed-examples.yaml", "docker/compose-pipelines.yaml"];
    expect(files.map((f) => readFileSync(path.join(root, f), "utf8").split("\n")[0])).toEqual(
      files.map(() => "# yaml-language-server: $schema=../pipelines.schema.json"),
    );
    expect(files.map((f) => loadPipelines(path.join(root, f)).length > 0)).toEqual([true, true, true]);
    const examples = [
      "examples/incidents/pipelines.yaml",
      "examples/several-inputs/pipelines.yaml",
      "examples/nats/pipelines.yaml",
    ];
    expect(examples.map((f) => readFileSync(path.join(root, f), "utf8").split("\n")[0])).toEqual(
      examples.map(() => "# yaml-language-server: $schema=../../pipelines.schema.json"),
    );
    expect(examples.map((f) => loadPipelines(path.join(root, f)).map((p) => p.name))).toEqual([
      ["future-outlier"],
      ["inputs-min", "inputs-max"],
      ["orders"],
    ]);
  });
});

describe("pipelines file errors", () => {
  const good = [
    "pipelines:",
    "  - name: orders",
    "    fields: { eventTime: ts }",
    "    window: { type: tumbling, size: 10 minutes }",
    "    watermark: { delay: 5 minutes }",
  ];

  it("a mistyped key comes first, at its line and column, with the key meant", () => {
    expect(
      errorOf("typo.yaml", [
        "pipelines:",
        "  - name: orders",
        "    fields: { eventTime: ts }",
        "    window: { type: tumbling, size: 10 minutes }",
        "    watermrk:",
        "      delay: 5 minutes",
      ]),
    ).toBe(
      "invalid pipelines file FILE:\n" +
        '  FILE:5:5: pipelines[0].watermrk: unknown key; did you mean "watermark"?\n' +
        "  FILE:2:5: pipelines[0].watermark: missing (required)",
    );
  });

  it("unknown keys in the file's order, nested ones too; a key not near any allowed one lists them", () => {
    expect(
      errorOf("keys.yaml", [
        ...good,
        "    source: { format: jsonl, landingdir: in }",
        "    alerts:",
        "      frobnicate: true",
        "      dropShare: { above: 2%, batchez: 3 }",
      ]),
    ).toBe(
      "invalid pipelines file FILE:\n" +
        '  FILE:6:30: pipelines[0].source.landingdir: unknown key; did you mean "landingDir"?\n' +
        "  FILE:8:7: pipelines[0].alerts.frobnicate: unknown key; expected one of webhook, dropShare, quarantineShare, watermarkStalled, backlog, correctionFailed, reconcileDrift\n" +
        '  FILE:9:31: pipelines[0].alerts.dropShare.batchez: unknown key; did you mean "batches"?',
    );
  });

  it("a bad value is named at the value's key, in a second pipeline too; a JSON file has positions as well", () => {
    expect(
      errorOf("value.yaml", [
        ...good,
        "  - name: Bad Name",
        "    fields: { eventTime: ts }",
        "    window: { type: tumbling, size: 10 minutes }",
        "    watermark: { delay: 5 minuets }",
      ]),
    ).toBe(
      "invalid pipelines file FILE:\n" +
        "  FILE:6:5: pipelines[1].name: expected 1-63 characters of a-z, 0-9, '_' or '-', starting with a letter or digit\n" +
        '  FILE:9:18: pipelines[1].watermark.delay: unknown unit "minuets" in "5 minuets": expected weeks, days, hours, minutes, seconds, milliseconds or microseconds (watermark delay)',
    );
    expect(
      errorOf("p.json", [
        '{"pipelines": [{"name": "j", "fields": {"eventTime": "ts"},',
        '  "window": {"type": "tumbling", "size": "1 minute"}, "watermark": {"delay": "0 seconds"}, "trigerr": {}}]}',
      ]),
    ).toBe('invalid pipelines file FILE:\n  FILE:2:92: pipelines[0].trigerr: unknown key; did you mean "trigger"?');
  });

  it("suggests only plausible typos, ignoring case", () => {
    expect(
      ["watermark", "WaterMark", "watermak", "wtrmrk", "windw", "xyz", "inputs"].map(
        (k) => nearestKey(k, ["watermark", "window", "name"]) ?? null,
      ),
    ).toEqual(["watermark", "watermark", "watermark", null, "window", null, null]);
  });
});
