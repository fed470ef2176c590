/**
 * The exchanges a pool's connections have with the server, each as the first word of each of its
 * statements (`"BEGIN SELECT SET SELECT"` for one simple-protocol query of four): what a landing's
 * round trips are, in order. Wraps each connection's `query` once, at its first acquisition.
 */
import type { Pool } from "../../src/db/pool.js";

/**
 * Calls `seen` with the text of every query the pool's connections send from now on (each connection's `query`
 * wrapped once, at its first acquisition).
 */
export function onQueryText(pool: Pool, seen: (text: string) => void): void {
  pool.on("acquire", (client) => {
    const marked = client as unknown as { counted?: boolean; query: (...a: unknown[]) => unknown };
    if (marked.counted) return;
    marked.counted = true;
    const query = marked.query.bind(client);
    marked.query = (q: unknown, ...rest: unknown[]) => {
      seen(typeof q === "string" ? q : ((q as { text?: string }).text ?? ""));
      return query(q, ...rest);
    };
  });
}

/** @returns the list the exchanges are appended to (clear it with `length = 0`) */
export function recordExchanges(pool: Pool): string[] {
  const exchanges: string[] = [];
  onQueryText(pool, (text) =>
    exchanges.push(
      [...text.matchAll(/(?:^|;)\s*(BEGIN|SELECT|SET|UPDATE|INSERT|WITH|COPY|COMMIT)\b/g)].map((m) => m[1]).join(" "),
    ),
  );
  return exchanges;
}
