/**
 * Starts one of the replay's worker threads (src/replay/spanWorker.ts, src/replay/checkWorker.ts) from its module
 * beside this one. Run from the TypeScript sources (tests, tsx), the module is TypeScript too: tsx's loader is
 * registered in the worker first (a worker does not inherit the loader hooks of the thread that starts it).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

/**
 * The worker's young generation, MiB: V8's default lets it grow to about 48 MiB beside the replay thread's own,
 * and the replay's peak RSS with it (1M peers events: 340–380 MB against 220 MB on one thread; 275–290 MB at 8).
 */
const WORKER_YOUNG_MB = 8;

/** A worker running `./<name>` (`spanWorker`, `checkWorker`) with `data` as its `workerData`. */
export function startWorker(name: string, data: unknown): Worker {
  const ext = path.extname(fileURLToPath(import.meta.url));
  const entry = new URL(`./${name}${ext}`, import.meta.url);
  const options = { workerData: data, resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_MB } };
  return ext === ".ts"
    ? new Worker(
        `import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(entry.href)}); });`,
        { ...options, eval: true },
      )
    : new Worker(entry, options);
}
