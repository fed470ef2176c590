/**
 * Progress for long work: a cli-progress bar on a terminal, a line every 10%
 * otherwise (logs, CI), all on stderr so stdout stays for results.
 */
import { createRequire } from "node:module";

/** cli-progress, loaded by the first bar on a terminal (not when the CLI starts). */
const loadCliProgress = () => createRequire(import.meta.url)("cli-progress") as typeof import("cli-progress");

export interface Progress {
  update(done: number, info?: string): void;
  stop(): void;
}

export function progressBar(label: string, total: number): Progress {
  if (process.stderr.isTTY) {
    const cliProgress = loadCliProgress();
    const bar = new cliProgress.SingleBar(
      { stream: process.stderr, format: `${label} [{bar}] {percentage}% | {value}/{total} rows | {info}`, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { info: "" });
    return { update: (done, info = "") => bar.update(done, { info }), stop: () => bar.stop() };
  }
  let nextTenth = 1;
  return {
    update(done, info = "") {
      if (total > 0 && done >= (total * nextTenth) / 10) {
        process.stderr.write(`${label}: ${Math.floor((done / total) * 100)}% (${done}/${total} rows) ${info}\n`);
        while (done >= (total * nextTenth) / 10) nextTenth++;
      }
    },
    stop() {},
  };
}
