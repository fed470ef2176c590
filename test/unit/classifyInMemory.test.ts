/**
 * `classifyInMemory` (src/ingest/classifyLines.ts): a source's lines held in memory up to a count of records
 * and about a count of characters, whichever comes first; the rest read after, every record once.
 */
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../../src/core/admission.js";
import { classifyInMemory } from "../../src/ingest/classifyLines.js";
import { pipeline } from "../helpers/fixtures.js";

const p = pipeline({
  name: "in-memory",
  source: { format: "csv" },
  fields: { eventId: "id", eventTime: "t" },
  window: { type: "tumbling", size: "10 minutes" },
  watermark: { delay: "10 minutes" },
});

async function* records(n: number): AsyncGenerator<RawRecord> {
  for (let i = 0; i < n; i++) {
    const t = `2024-01-15T12:00:0${i}.000Z`;
    yield { line: i + 2, raw: `e${i},${t}`, fields: { id: `e${i}`, t } };
  }
}

async function split(maxLines: number, maxChars?: number) {
  const c = await classifyInMemory(
    p,
    "s",
    records(10),
    { landingTimeMs: Date.UTC(2024, 0, 15, 13) },
    maxLines,
    maxChars,
  );
  const rest: string[] = [];
  if (c.rest !== null) for await (const l of c.rest) rest.push(l);
  return { held: c.lines.length, rest: rest.length, landed: c.tally.landed };
}

describe("classifyInMemory", () => {
  it("holds lines up to the first bound reached, records or characters, and leaves the rest to be read", async () => {
    const one = (await classifyInMemory(p, "s", records(1), { landingTimeMs: Date.UTC(2024, 0, 15, 13) }, 10)).lines[0]!
      .length;
    expect(await split(4)).toEqual({ held: 4, rest: 6, landed: 10 });
    // Stops once the lines held reach the characters: the third line passes 2.5 lines' worth.
    expect(await split(4, Math.floor(one * 2.5))).toEqual({ held: 3, rest: 7, landed: 10 });
    expect(await split(20, Infinity)).toEqual({ held: 10, rest: 0, landed: 10 });
  });
});
