/** The cause of a correction's change that a reconcile run found (docs/continuous-reconcile.md). */
import { keyIn } from "../core/keys.js";
import type { ReconcileCause } from "../db/sql/reconcile/mismatches.js";
import type { WindowChange } from "../db/sql/correction/writeAudit.js";

/** `changes` with `reconcileRunId` set on those a reconcile run's mismatch caused (`causes`, group keys as stored). */
export function withReconcileCauses(changes: WindowChange[], causes: ReconcileCause[]): WindowChange[] {
  if (causes.length === 0) return changes;
  const byWindow = new Map(
    causes.map((c) => [`${c.groupKey}\u0000${c.windowStart}\u0000${c.windowEnd}`, c.reconcileRunId]),
  );
  return changes.map((ch) => {
    const runId = byWindow.get(`${keyIn(ch.groupKey)}\u0000${ch.windowStart}\u0000${ch.windowEnd}`);
    return runId === undefined ? ch : { ...ch, reconcileRunId: runId };
  });
}
