/**
 * The service's LISTEN session: one connection listening for bronze's landing notifications and the
 * change feed's, reconnected with backoff when it drops (src/service.ts wakes the stream loops and the
 * change streams from it).
 */
import pg from "pg";
import { backoffMs, type Backoff } from "./db/retry.js";
import { listenForLanded } from "./db/sql/ingest/bronzeChannel.js";
import { CHANGES_CHANNEL, listenForChanges } from "./db/sql/feed/notifyChanges.js";
import type { Logger } from "./log.js";
import { startLoop, type RoundContext } from "./loop.js";

/** The wait between two LISTEN reconnection attempts: 500 ms doubling, at most 5 s (each attempt is cheap, and until one succeeds no landing wakes the stream). */
const LISTEN_BACKOFF: Backoff = { baseMs: 500, capMs: 5_000 };

/**
 * Listens for bronze notifications, and the change feed's (`onChanges`); reconnects with backoff when the connection drops.
 * `onConnected` runs after every successful LISTEN: notifications sent while the
 * connection was down are lost, so the stream must look for itself.
 */
export function listenForLandings(
  connectionString: string,
  onPipeline: (name: string) => void,
  onConnected: () => void,
  log: Logger,
  onChanges: (name: string) => void,
): () => Promise<void> {
  /** One LISTEN session: connects and listens, then lasts until its connection ends or the loop stops; a failed connection throws. */
  const session = async ({ signal }: RoundContext): Promise<void> => {
    const c = new pg.Client({ connectionString });
    c.on("notification", (n) => n.payload && (n.channel === CHANGES_CHANNEL ? onChanges : onPipeline)(n.payload));
    c.on("error", () => undefined);
    const ended = new Promise<void>((resolve) => c.on("end", () => resolve()));
    const end = () => void c.end().catch(() => undefined);
    signal.addEventListener("abort", end, { once: true }); // a stop ends a connection being made too
    try {
      try {
        await c.connect();
        await listenForLanded(c);
        await listenForChanges(c); // the change feed's: wakes its open streams (src/http/feedRoutes.ts)
      } catch (e) {
        await c.end().catch(() => undefined);
        throw e;
      }
      if (signal.aborted) return;
      onConnected();
      await ended;
    } finally {
      signal.removeEventListener("abort", end);
    }
  };
  // A session that ended is followed by a new one after the first step of the backoff; failed connections back off further.
  const loop = startLoop(session, {
    intervalMs: () => backoffMs(1, LISTEN_BACKOFF),
    backoff: LISTEN_BACKOFF,
    onError: (e) =>
      log.warn(
        { err: e },
        "LISTEN connection failed; the stream falls back to its trigger interval until it reconnects",
      ),
  });
  return () => loop.stop();
}
