/**
 * The alert webhook: a JSON POST of each alert change to the URL in the pipeline's
 * `alerts.webhook`, retried with the project's backoff (src/db/retry.ts) when the
 * receiver cannot be reached or answers 429 or 5xx.
 */
import { backoffMs, sleep } from "../db/retry.js";
import type { AlertState } from "../db/sql/observe/alertStates.js";
import type { Logger } from "../log.js";

/** Attempts at most per change. */
const WEBHOOK_ATTEMPTS = 6;
/** Longest wait for one attempt's answer, ms. */
const ATTEMPT_TIMEOUT_MS = 10_000;

/** The body POSTed: the alert's new state (`since` ISO 8601 UTC), its threshold, and a line for people. */
export interface AlertChange extends AlertState {
  threshold: number | null;
  message: string;
}

const retryable = (status: number) => status === 429 || status >= 500;

/**
 * POSTs `change` to `url` until it is accepted (any 2xx) or `WEBHOOK_ATTEMPTS` have failed;
 * never throws: a change that could not be delivered is logged at warn.
 * @returns true when the receiver accepted it
 */
export async function sendAlertWebhook(url: string, change: AlertChange, log: Logger, baseMs = 500): Promise<boolean> {
  const backoff = { baseMs, capMs: 30_000 };
  let last = "";
  for (let attempt = 1; attempt <= WEBHOOK_ATTEMPTS; attempt++) {
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(change),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      await res.arrayBuffer().catch(() => undefined);
      if (res.ok) return true;
      last = `HTTP ${res.status}`;
      if (!retryable(res.status)) break;
    } catch (e) {
      last = (e as Error).message;
    }
    if (attempt < WEBHOOK_ATTEMPTS) await sleep(backoffMs(attempt, backoff));
  }
  log.warn(
    { pipeline: change.pipeline, alert: change.alert, state: change.state, error: last },
    "alert webhook not delivered",
  );
  return false;
}
