/**
 * The guards, one seam: what must hold before a pipeline's results are written or recomputed, and the
 * refusals the callers answer with. The stream, the correction, reconcile, rebuild, the HTTP routes,
 * the CLI and the pages call the guards through this module only (test/unit/architecture.test.ts).
 *
 * | guard | checks | called by | refuses with |
 * |---|---|---|---|
 * | policy (policy.ts) | the configured policy is the live results' one (README "Policy versions") | each micro-batch and correction run, under the results lock (`guardPolicy`); a correction before it claims a run (`refuseEarly`); status (`checkPolicy`) | `PolicyRefusedError` |
 * | time zone (timeZone.ts) | PostgreSQL knows the calendar window's zone | the policy guard; reconcile and rebuild (`guardTimeZone`) | `TimeZoneRefusedError` (a configuration error) |
 * | horizon (horizon.ts) | no archived row could be in the windows recomputed (README "Retention and archives") | a correction range, reconcile, rebuild (`refuseArchived`); a correction run's targets (`dropArchivedTargets`, `dropArchivedSpans`) | `HorizonRefusedError` |
 * | hold rules (holdRules.ts) | the pipeline's `hold` block (README "Incidents: hold") | each micro-batch, before its MERGE (`applyHoldRules`) | opens a hold, refuses nothing |
 */
export { applyHoldRules } from "./holdRules.js";
export { HorizonRefusedError, dropArchivedSpans, dropArchivedTargets, refuseArchived } from "./horizon.js";
export {
  PolicyRefusedError,
  checkPolicy,
  guardPolicy,
  refuseEarly,
  type PolicyAdoption,
  type PolicyCheck,
} from "./policy.js";
export { TimeZoneRefusedError, guardTimeZone } from "./timeZone.js";
