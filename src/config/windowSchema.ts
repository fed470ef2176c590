/**
 * The `window` block of the pipelines file: fixed-length windows (Spark's `window()`), calendar
 * windows (a `timeZone`: days, weeks, months) and session windows, each parsed to the shape the
 * core reads (`PipelineWindow`, src/core/pipelineSpec.ts). Lengths are parsed to ms.
 */
import { z } from "zod";
import { readDuration, type DurationResult } from "./duration.js";
import { tagAlternatives, tagSetting } from "./policySettings.js";
import { describeAs } from "./jsonSchemaHints.js";
import { duration } from "./settingSchemas.js";
import { isValidTimeZone } from "../core/timeZones.js";
import { canonicalTimeZone, type CalendarUnit, type CalendarWindowSpec } from "../core/windows.js";

/**
 * A fixed-length window size or slide, or a session gap: a Spark duration greater than zero; a
 * month or a year is refused here with what to write instead (they have no fixed length: a
 * calendar month needs `window.timeZone`, which a session window does not take: `calendar` false).
 */
const windowLength = (what: string, calendar = true) => tagSetting(windowLengthOf(what, calendar), "duration");

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
    z.strictObject({
      type: z.literal("tumbling"),
      size: windowLength("window size"),
      offset: duration("window start offset").default(0),
    }),
    z
      .strictObject({
        type: z.literal("sliding"),
        size: windowLength("window size"),
        slide: windowLength("window slide"),
        offset: duration("window start offset").default(0),
      })
      .refine((w) => w.slide <= w.size, {
        path: ["slide"],
        message: "expected a slide no longer than the window size",
      }),
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
export const WEEKDAYS = {
  monday: 1,
  tuesday: 2,
  wednesday: 3,
  thursday: 4,
  friday: 5,
  saturday: 6,
  sunday: 7,
} as const;

/** A calendar length: a whole number of days, weeks or months (`"1 day"`, `"7 days"`, `"1 month"`). */
type CalendarLength = { count: number; unit: CalendarUnit };
const CALENDAR_LENGTH = /^(?:interval\s+)?\+?(\d+)\s+(day|week|month)s?$/i;
/** The largest count a calendar length takes (`9999 days`): a bound on the windows each event is assigned to. */
const MAX_CALENDAR_COUNT = 9999;

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
      ctx.addIssue({
        code: "custom",
        message: `a calendar window's ${what} is at most ${MAX_CALENDAR_COUNT} ${unit}s, got ${JSON.stringify(input)}`,
      });
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
    timeZone: z
      .string()
      .refine(isValidTimeZone, { message: 'expected an IANA time zone such as "UTC" or "America/New_York"' })
      .transform(canonicalTimeZone),
    weekStart: z
      .string({ error: `expected weekStart to be one of ${Object.keys(WEEKDAYS).join(", ")}` })
      .transform((day) => day.toLowerCase())
      .refine((day): day is keyof typeof WEEKDAYS => Object.hasOwn(WEEKDAYS, day), {
        message: `expected weekStart to be one of ${Object.keys(WEEKDAYS).join(", ")}`,
      })
      .optional(),
    offset: z.unknown().optional(),
  })
  .transform((w, ctx) => {
    const fail = (path: string, message: string) => {
      ctx.addIssue({ code: "custom", path: [path], message });
      return z.NEVER;
    };
    if (w.offset !== undefined)
      return fail(
        "offset",
        "a calendar window starts at local midnight: window.offset applies only to fixed-length windows (without window.timeZone)",
      );
    const grid = w.type === "tumbling" ? w.size : w.slide;
    if (w.type === "tumbling" && w.slide !== undefined)
      return fail("slide", "a tumbling window has no slide: use type sliding");
    if (grid === undefined) return fail("slide", 'expected a slide for a sliding window, such as "1 day"');
    if (grid.count !== 1) {
      return w.type === "tumbling"
        ? fail(
            "size",
            `a tumbling calendar window is 1 day, 1 week or 1 month, got "${grid.count} ${grid.unit}s" (for longer windows use type sliding with a slide of 1 ${grid.unit})`,
          )
        : fail("slide", `a calendar window slides by 1 day, 1 week or 1 month, got "${grid.count} ${grid.unit}s"`);
    }
    let span: number;
    if (grid.unit === w.size.unit) span = w.size.count;
    else if (grid.unit === "day" && w.size.unit === "week") span = 7 * w.size.count;
    else
      return fail(
        "size",
        `a window of ${w.size.count} ${w.size.unit}(s) is not a whole number of slides of 1 ${grid.unit}`,
      );
    if (w.weekStart !== undefined && grid.unit !== "week")
      return fail("weekStart", `weekStart applies to windows that start every week; these start every ${grid.unit}`);
    const calendar = {
      unit: grid.unit,
      span,
      timeZone: w.timeZone,
      weekStart: WEEKDAYS[(w.weekStart ?? "monday") as keyof typeof WEEKDAYS],
    } satisfies CalendarWindowSpec["calendar"];
    return { type: w.type, calendar };
  });

/**
 * `window`: a session window (`type: session`), else fixed-length (Spark's)
 * without `timeZone`, calendar with it. Issues keep their paths below `window`.
 */
export const windowSchema = tagAlternatives(
  z.unknown().transform((input, ctx) => {
    const calendar = typeof input === "object" && input !== null && "timeZone" in input;
    const session = typeof input === "object" && input !== null && (input as { type?: unknown }).type === "session";
    if (!calendar && typeof input === "object" && input !== null && "weekStart" in input) {
      ctx.addIssue({
        code: "custom",
        path: ["weekStart"],
        message: "window.weekStart needs window.timeZone (weeks start on a local day)",
      });
      return z.NEVER;
    }
    const parsed = session
      ? sessionWindowSchema.safeParse(input)
      : calendar
        ? calendarWindowSchema.safeParse(input)
        : fixedWindowSchema.safeParse(input);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
    return z.NEVER;
  }),
  [fixedWindowSchema, calendarWindowSchema, sessionWindowSchema],
);
