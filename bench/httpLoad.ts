/**
 * The load generator of the HTTP ingest benchmark (bench/httpIngest.ts),
 * run in a worker thread of its own (`runLoad`): its work stays off the
 * service's event loop, and the share of a core it takes is measured (its
 * event loop's utilization) and reported beside the figures.
 *
 * autocannon, keep-alive connections, each posting `eventsPerRequest`
 * NDJSON events per request; every event id is new (`<name>-<request>-<i>`),
 * so every event is accepted once. A body is built from a template: event
 * times come from a table of 64 ISO strings renewed every second (the
 * events span the last 40 s), so a body costs string concatenation only.
 */
import { performance } from "node:perf_hooks";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import autocannon from "autocannon";

export interface LoadSpec {
  /** Base URL of the service. */
  url: string;
  pipeline: string;
  token: string;
  connections: number;
  seconds: number;
  eventsPerRequest: number;
}

export interface LoadResult {
  /** Latency percentiles of the answers, ms. */
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** The source of every request answered 201. */
  sources: string[];
  /** Events those requests landed. */
  acknowledged: number;
  /** Share of one core the generator's thread was busy (event loop utilization, 0–1). */
  busy: number;
}

/** Runs `spec` in a new worker thread. @returns what it measured @throws the worker's error */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const file = new URL("./httpLoad.ts", import.meta.url).href;
  // The worker loads this TypeScript module through tsx, as the bench itself runs.
  const worker = new Worker(
    `import("tsx/esm/api").then(({ tsImport }) => tsImport(${JSON.stringify(file)}, ${JSON.stringify(file)}))`,
    { eval: true, workerData: spec },
  );
  return new Promise((resolve, reject) => {
    worker.once("message", (r: LoadResult) => {
      resolve(r);
      void worker.terminate();
    });
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`the load generator's thread exited (${code}) without a result`)));
  });
}

async function generate(spec: LoadSpec): Promise<LoadResult> {
  const { pipeline: name, eventsPerRequest } = spec;
  const times: string[] = [];
  const renew = () => {
    const now = Date.now();
    for (let j = 0; j < 64; j++) times[j] = new Date(now - ((j * 613) % 40_000)).toISOString();
  };
  renew();
  const timer = setInterval(renew, 1_000);
  const sources: string[] = [];
  let counter = 0,
    acknowledged = 0;
  const started = performance.eventLoopUtilization();
  let result: autocannon.Result;
  try {
    result = await autocannon({
      url: spec.url,
      connections: spec.connections,
      duration: spec.seconds,
      requests: [
        {
          method: "POST",
          path: `/pipelines/${name}/events`,
          headers: { authorization: `Bearer ${spec.token}`, "content-type": "application/x-ndjson" },
          setupRequest: (req) => {
            const c = counter++;
            let body = "";
            for (let i = 0; i < eventsPerRequest; i++) {
              body += `{"id":"${name}-${c}-${i}","t":"${times[(c * 7 + i * 13) & 63]}","k":"k${(c + i) % 20}","v":${(c % 1000) / 100 + i}}\n`;
            }
            return { ...req, body };
          },
          onResponse: (status, body) => {
            if (status !== 201) return;
            const r = JSON.parse(body) as { landed: number; source: string };
            acknowledged += r.landed;
            sources.push(r.source);
          },
        },
      ],
    });
  } finally {
    clearInterval(timer);
  }
  const busy = performance.eventLoopUtilization(started).utilization;
  // In a worker thread autocannon answers its raw counts: the percentiles are aggregated here.
  const aggregate = (autocannon as unknown as { aggregateResult(r: unknown, o: unknown): autocannon.Result })
    .aggregateResult;
  if (result.latency === undefined) result = aggregate([result], { url: spec.url, connections: spec.connections });
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    sources,
    acknowledged,
    busy,
  };
}

if (!isMainThread && parentPort && (workerData as LoadSpec | undefined)?.pipeline !== undefined) {
  parentPort.postMessage(await generate(workerData as LoadSpec));
}
