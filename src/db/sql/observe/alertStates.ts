/** Alert states (table `straggler.alert_states`, migration 0013): read them, and record a change. */
import type { Queryable } from "../../pool.js";

/** One alert's state: `since` is ISO 8601 UTC (when it last changed), `value` what it was judged on then. */
export interface AlertState {
  pipeline: string;
  alert: string;
  state: "ok" | "firing";
  since: string;
  value: number | null;
}

/** The recorded states of `pipelines`' alerts, ordered by pipeline and alert. */
export async function readAlertStates(client: Queryable, pipelines: string[]): Promise<AlertState[]> {
  const { rows } = await client.query({
    name: "read_alert_states",
    text: "SELECT pipeline, alert, state, since, value FROM straggler.alert_states WHERE pipeline = ANY($1) ORDER BY pipeline, alert",
    values: [pipelines],
  });
  return rows;
}

/**
 * Records `state` for an alert unless it is already in that state (the first record of
 * an alert counts as a change only when it fires). Safe for several processes at once:
 * only one of them sees a given change.
 * @returns the new state when this call changed it, else undefined
 */
export async function recordAlertState(
  client: Queryable,
  pipeline: string,
  alert: string,
  state: "ok" | "firing",
  value: number | null,
): Promise<AlertState | undefined> {
  const { rows } = await client.query({
    name: "record_alert_state",
    text: `INSERT INTO straggler.alert_states AS a (pipeline, alert, state, since, value) VALUES ($1, $2, $3, now(), $4)
           ON CONFLICT (pipeline, alert) DO UPDATE SET state = excluded.state, since = excluded.since, value = excluded.value
            WHERE a.state <> excluded.state
           RETURNING pipeline, alert, state, since, value, (xmax = 0) AS inserted`,
    values: [pipeline, alert, state, value],
  });
  const r = rows[0];
  if (!r || (r.inserted && state === "ok")) return undefined;
  return { pipeline: r.pipeline, alert: r.alert, state: r.state, since: r.since, value: r.value };
}
