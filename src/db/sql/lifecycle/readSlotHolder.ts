/** Reads the run that holds a cron slot. */
import type { Queryable } from "../../pool.js";
import { runHolderAliveSql } from "../../locks.js";
import { prepared } from "../../prepared.js";

/** The run that holds a cron slot: it succeeded, or is running with a live lease and a live holder. */
export interface SlotHolder {
  runId: number;
  status: "running" | "succeeded";
  /** ISO 8601; for a running holder, when its lease ends unless renewed. */
  leaseUntil: string | null;
}

const READ_SLOT_HOLDER = "read_slot_holder";
const READ_SLOT_HOLDER_SQL = `SELECT run_id, status, lease_until, status = 'running' AND (lease_until < clock_timestamp() OR NOT ${runHolderAliveSql("run_id")}) AS expired
  FROM straggler.correction_runs WHERE pipeline = $1 AND cron_slot = $2 AND status IN ('running', 'succeeded')`;

/**
 * The run of `pipeline` holding `cronSlot` (ISO 8601).
 * @returns the holder, or null when none holds it any more (it failed) or its lease has expired (database clock) or its holder is gone
 */
export async function readSlotHolder(
  client: Queryable,
  pipeline: string,
  cronSlot: string | null,
): Promise<SlotHolder | null> {
  const { rows } = await client.query(prepared(READ_SLOT_HOLDER, READ_SLOT_HOLDER_SQL, [pipeline, cronSlot]));
  const h = rows[0];
  return h && !h.expired ? { runId: h.run_id, status: h.status, leaseUntil: h.lease_until } : null;
}
