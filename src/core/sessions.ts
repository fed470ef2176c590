/**
 * Session windows — the pure rules the stream's and the correction's SQL
 * implement (src/db/sql/stream/sessionStream.ts, sessionCorrection.ts,
 * compareFinalSessions.ts), and the batch sessionization the tests use as
 * their oracle. docs/DESIGN.md "Session windows".
 *
 * Per group key, an event at `t` opens the interval [t, t + gap). A session
 * is a run of events in which each starts at or before the end of the
 * session so far; its window is [first event, last event + gap). Two
 * sessions of one key merge when the later one starts at or before the
 * earlier one's end (Spark's merge rule: sessions that just touch merge).
 * Instants are epoch microseconds (`bigint`), the gap whole milliseconds.
 */

/** One window as epoch microseconds, `[startUs, endUs)`. */
export interface SessionBounds {
  startUs: bigint;
  endUs: bigint;
}

/** A session and the events it holds (their indexes in the input, in event-time order). */
export interface Session<E> extends SessionBounds {
  events: E[];
}

/** The gap in µs, checked: a whole number of ms > 0. */
export function gapUs(gapMs: number): bigint {
  if (!Number.isSafeInteger(gapMs) || gapMs <= 0)
    throw new RangeError(`a session gap must be a whole number of ms > 0, got ${gapMs}`);
  return BigInt(gapMs) * 1000n;
}

/**
 * Spark's late rule for session windows: an event is late when the end of its
 * own session window (event time + gap) is at or before the watermark.
 * @param watermarkUs the watermark of earlier batches, epoch µs; null before the first batch (nothing is late)
 */
export function isLateSessionEvent(eventUs: bigint, gapMs: number, watermarkUs: bigint | null): boolean {
  return watermarkUs !== null && eventUs + gapUs(gapMs) <= watermarkUs;
}

/** Whether two windows of one key merge: they overlap or touch (`a` starts at or before `b` ends and `b` at or before `a` ends). */
export function sessionsTouch(a: SessionBounds, b: SessionBounds): boolean {
  return a.startUs <= b.endUs && b.startUs <= a.endUs;
}

/**
 * Batch sessionization of one key's events: sorts them by event time and cuts
 * a new session where an event starts after the end of the session so far.
 * @param events any order; `us` the event time, epoch µs
 * @returns the sessions, oldest first, each with its events in event-time order
 */
export function sessionize<E extends { us: bigint }>(events: readonly E[], gapMs: number): Session<E>[] {
  const gap = gapUs(gapMs);
  const sorted = [...events].sort((a, b) => (a.us < b.us ? -1 : a.us > b.us ? 1 : 0));
  const out: Session<E>[] = [];
  for (const e of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && e.us <= last.endUs) {
      last.events.push(e);
      if (e.us + gap > last.endUs) last.endUs = e.us + gap;
    } else out.push({ startUs: e.us, endUs: e.us + gap, events: [e] });
  }
  return out;
}

/**
 * Merges windows of one key that touch (intervals, e.g. stored sessions and
 * events' own windows) into the windows they form together, oldest first.
 */
export function mergeTouching(windows: readonly SessionBounds[]): SessionBounds[] {
  const sorted = [...windows].sort((a, b) => (a.startUs < b.startUs ? -1 : a.startUs > b.startUs ? 1 : 0));
  const out: SessionBounds[] = [];
  for (const w of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && w.startUs <= last.endUs) {
      if (w.endUs > last.endUs) last.endUs = w.endUs;
    } else out.push({ startUs: w.startUs, endUs: w.endUs });
  }
  return out;
}
