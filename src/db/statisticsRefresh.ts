/**
 * When the service refreshes a pipeline's planner statistics (`analyzeIfStale`, src/db/statistics.ts): after its
 * stream catches up, beside the stream (never in front of its next micro-batch), and at most once every `everyMs`
 * per pipeline. Under steady ingest a catch-up follows nearly every micro-batch: each look at the statistics
 * (pg_stat_user_tables, an EXPLAIN) cost about 2 ms of the server and a table-wide ANALYZE of bronze 0.4 s, 13 % of
 * the server's time under HTTP load (BENCHMARKS.md, issue 30). A request inside the interval books one refresh at
 * its end, so the last catch-up is always followed by one.
 */

/** Asks for refreshes; `stop` cancels the booked ones and waits for those running. */
export interface StatisticsRefresher {
  request(pipeline: string): void;
  stop(): Promise<void>;
}

/**
 * @param refresh runs one refresh of a pipeline (its failure is its own to report: a rejection is ignored here)
 * @param everyMs the shortest time between the starts of two refreshes of one pipeline, ms
 */
export function statisticsRefresher(
  refresh: (pipeline: string) => Promise<void>,
  everyMs: number,
): StatisticsRefresher {
  const running = new Map<string, Promise<void>>();
  const started = new Map<string, number>();
  const booked = new Map<string, NodeJS.Timeout>();
  let stopped = false;
  const request = (pipeline: string): void => {
    if (stopped || running.has(pipeline) || booked.has(pipeline)) return;
    const wait = (started.get(pipeline) ?? -Infinity) + everyMs - performance.now();
    if (wait > 0) {
      const timer = setTimeout(() => {
        booked.delete(pipeline);
        request(pipeline);
      }, wait);
      timer.unref();
      booked.set(pipeline, timer);
      return;
    }
    started.set(pipeline, performance.now());
    const run = refresh(pipeline)
      .catch(() => undefined)
      .finally(() => running.delete(pipeline));
    running.set(pipeline, run);
  };
  return {
    request,
    async stop() {
      stopped = true;
      for (const timer of booked.values()) clearTimeout(timer);
      booked.clear();
      await Promise.all(running.values());
    },
  };
}
