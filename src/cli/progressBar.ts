/**
 * Progress for long work, on stderr so stdout stays for results (and for `--json`):
 * - on a terminal, a cli-progress bar: `label [████░░] 41% | 1.2 MB of 2.9 MB | ETA 3s | info`
 *   when the whole is known, `label 20,000 rows | info` (a count, no bar) when it is not;
 * - otherwise (a pipe, a log file, CI), a line at most every `everyMs`
 *   (STRAGGLER_PROGRESS_EVERY, default 5 s; `0 seconds`: at every step), none for work
 *   quicker than that, and the last figure when the work ends after a line was printed:
 *   `label: 41% (1.2 MB of 2.9 MB) info` or `label: 20,000 rows info`.
 */
import { createRequire } from "node:module";

/** cli-progress, loaded by the first bar on a terminal (not when the CLI starts). */
const loadCliProgress = () => createRequire(import.meta.url)("cli-progress") as typeof import("cli-progress");

/** How often a progress line is printed when stderr is not a terminal, by default (ms). */
const DEFAULT_PROGRESS_EVERY_MS = 5_000;

export interface Progress {
  /** `done`: how far the work is, in the progress's unit; `info`: a short text shown after it. */
  update(done: number, info?: string): void;
  /** Ends the bar (or prints the last figure, when lines were printed); further updates are ignored. */
  stop(): void;
}

/** Where progress is written: stderr, or (tests) a stream that says whether it is a terminal. */
type ProgressStream = Pick<NodeJS.WriteStream, "write"> & { isTTY?: boolean };

export interface ProgressOptions {
  /** What `done` counts: rows, or bytes (shown as kB, MB, GB). */
  unit: "rows" | "bytes";
  /** The whole, when it is known cheaply (a file's size, a replay's rows); undefined: a count without a total. */
  total?: number;
  /** Not a terminal: at most one line per this many ms (default `DEFAULT_PROGRESS_EVERY_MS`). */
  everyMs?: number;
  stream?: ProgressStream;
  /** The clock, epoch ms (tests). */
  now?: () => number;
}

/** `n` bytes for people, in SI units with one decimal: `512 B`, `1.2 kB`, `3.4 MB`, `1.0 GB`. */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let v = n / 1000,
    u = 0;
  while (v >= 999.95 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${v.toFixed(1)} ${units[u]}`;
}

/** `n` in the progress's unit: `12,345 rows` or `1.2 MB`. */
function amount(n: number, unit: ProgressOptions["unit"]): string {
  return unit === "bytes" ? formatBytes(n) : `${n.toLocaleString("en-US")} rows`;
}

/** The figure after the label: `41% (1.2 MB of 2.9 MB)` with a whole, `20,000 rows` without one. */
export function progressFigure(done: number, opts: Pick<ProgressOptions, "unit" | "total">): string {
  if (opts.total === undefined) return amount(done, opts.unit);
  const share = opts.total > 0 ? Math.min(100, Math.floor((done / opts.total) * 100)) : 100;
  return `${share}% (${opts.unit === "bytes" ? `${formatBytes(done)} of ${formatBytes(opts.total)}` : `${done.toLocaleString("en-US")} of ${amount(opts.total, "rows")}`})`;
}

/** A progress bar (terminal) or progress lines (otherwise) for `label`; see the module comment. */
export function progressBar(label: string, opts: ProgressOptions): Progress {
  const stream = opts.stream ?? process.stderr;
  return stream.isTTY === true ? terminalBar(label, opts, stream) : progressLines(label, opts, stream);
}

function terminalBar(label: string, opts: ProgressOptions, stream: ProgressStream): Progress {
  const cliProgress = loadCliProgress();
  const known = opts.total !== undefined;
  const bar = new cliProgress.SingleBar(
    {
      stream: stream as NodeJS.WritableStream,
      format: known
        ? `${label} [{bar}] {percentage}% | {done} of {whole} | ETA {eta_formatted}{info}`
        : `${label} {done}{info}`,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const whole = known ? amount(opts.total!, opts.unit) : "";
  // Without a whole the bar's own total is only what has been done (nothing shows it).
  bar.start(opts.total ?? 0, 0, { done: amount(0, opts.unit), whole, info: "" });
  let stopped = false;
  return {
    update(done, info = "") {
      if (stopped) return;
      if (!known) bar.setTotal(done);
      bar.update(done, { done: amount(done, opts.unit), whole, info: info ? ` | ${info}` : "" });
    },
    stop() {
      if (!stopped) bar.stop();
      stopped = true;
    },
  };
}

function progressLines(label: string, opts: ProgressOptions, stream: ProgressStream): Progress {
  const now = opts.now ?? Date.now;
  const everyMs = opts.everyMs ?? DEFAULT_PROGRESS_EVERY_MS;
  let lastAt = now();
  let printed: string | undefined;
  let last: string | undefined;
  let stopped = false;
  const write = (line: string) => {
    stream.write(`${line}\n`);
    printed = line;
    lastAt = now();
  };
  return {
    update(done, info = "") {
      if (stopped) return;
      last = `${label}: ${progressFigure(done, opts)}${info ? ` ${info}` : ""}`;
      if (now() - lastAt >= everyMs) write(last);
    },
    stop() {
      if (!stopped && printed !== undefined && last !== printed) write(last!);
      stopped = true;
    },
  };
}
