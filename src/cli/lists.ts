/**
 * How every command prints a list that can be long, for people: the summary line comes first
 * (the command's own), then the first `--limit` items (default `DEFAULT_LIMIT`), then one line
 * counting the rest (`  … and 5 more mismatches (--limit N shows more, --json all)`); `--json`
 * has every item. Every command with such a list takes `--limit` (`limitOption`).
 */
import { UsageError } from "./context.js";

/** Items of a long list a command prints for people before "… and N more" (`--limit`). */
export const DEFAULT_LIMIT = 20;

/** The `--limit` option's text: the flag, what it does (commander adds the default). */
const LIMIT_HELP =
  'at most this many items of each list for people, then "… and N more"; 0: the summary alone; --json has them all';

/** The end of the line counting what a list left out: how to see more. */
const MORE_HINT = " (--limit N shows more, --json all)";

/**
 * `--limit` as given: a whole number from 0 to 1000000.
 * @throws UsageError naming the flag and what was given (exit 2)
 */
function limitArg(text: string): number {
  const n = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(n) || n > 1_000_000) {
    throw new UsageError(`--limit: expected a whole number from 0 to 1000000, got ${JSON.stringify(text)}`);
  }
  return n;
}

/** `--limit <n>` for commander: `.option(...limitOption)`. */
export const limitOption = ["--limit <n>", LIMIT_HELP, limitArg, DEFAULT_LIMIT] as const;

export interface MoreOptions {
  /** Before each item line and the count line (default two spaces). */
  indent?: string;
  /** What the items are, in the count line: `… and 5 more <what>`. */
  what?: string;
  /** After the count (default `MORE_HINT`). */
  hint?: string;
  /** How many there are in all (default `items.length`; more when `items` is itself a page). */
  total?: number;
  /** When items are left out, the last one too, after the count line (`…, then the last:`): e.g. the micro-batch where the stream stands. */
  last?: boolean;
}

/**
 * The first `limit` of `items` as lines, then `<indent>… and N more <what><hint>` when some are left out.
 * @returns the lines (none for an empty list)
 */
export function moreLines<T>(
  items: readonly T[],
  limit: number,
  line: (item: T) => string,
  opts: MoreOptions = {},
): string[] {
  const total = opts.total ?? items.length;
  // With `last`, a list one longer than the limit is shown whole: the count line would replace one item.
  if (opts.last && total === items.length && items.length <= limit + 1) return items.map(line);
  const shown = items.slice(0, limit).map(line);
  const keepLast = opts.last === true && items.length > limit;
  const rest = total - shown.length - (keepLast ? 1 : 0);
  const last = keepLast ? [line(items[items.length - 1]!)] : [];
  if (rest <= 0) return [...shown, ...last];
  const count = `${opts.indent ?? "  "}… and ${rest} more${opts.what ? ` ${opts.what}` : ""}${opts.hint ?? MORE_HINT}`;
  return keepLast ? [...shown, `${count}, then the last:`, ...last] : [...shown, count];
}

/** The first `limit` of `names` joined with ", ", then ` … and N more` (for a list inside one line). */
export function moreInline(names: readonly string[], limit: number): string {
  const shown = names.slice(0, limit).join(", ");
  const rest = names.length - Math.min(limit, names.length);
  return rest > 0 ? `${shown}${shown ? " " : ""}… and ${rest} more` : shown;
}
