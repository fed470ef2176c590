/**
 * The policy guard (README "Policy versions"): results computed under one
 * policy are never extended under another. Before every micro-batch and
 * correction, under the pipeline's results lock, the configured policy
 * (src/config/policy.ts) is compared with the policy of the live results
 * (`straggler.policy_versions`):
 *
 *   - none recorded yet (a new pipeline): the configured one is recorded as
 *     version 1, live;
 *   - the same: go on;
 *   - only settings a newer Straggler added or dropped, at their defaults:
 *     the live version's text is rewritten, go on;
 *   - otherwise: `PolicyRefusedError`, naming each changed setting
 *     (`admission.maxFutureSkew: null → 1 hour`) and the ways forward.
 */
import { canonicalPolicy, diffPolicies, policyHash, policyOf, type PolicyChange, type PolicyDocument } from "../config/policy.js";
import type { PipelineConfig } from "../config/pipelines.js";
import type { PoolClient, Queryable } from "../db/pool.js";
import { readLivePolicy, recordLivePolicy, restampLivePolicy, type PolicyVersionRow } from "../db/sql/policyVersions.js";
import { timeZoneRefusal, type TimeZoneRefusedError } from "./zoneGuard.js";

/** The pipeline's configured policy differs from the policy of its live results: it is not streamed. */
export class PolicyRefusedError extends Error {
  override name = "PolicyRefusedError";
  constructor(
    readonly pipeline: string,
    /** The live results' version number and policy version (hash). */
    readonly live: { version: number; policyVersion: string },
    readonly changes: PolicyChange[],
  ) {
    super(refusalMessage(pipeline, live, changes));
  }
}

/** The refusal as the service logs it and the CLI prints it: the changed settings, one a line, then the ways forward. */
export function refusalMessage(pipeline: string, live: { version: number; policyVersion: string }, changes: PolicyChange[]): string {
  return [
    `pipeline ${pipeline} is not streamed: its configured policy differs from the policy of its live results (version ${live.version}, policy ${live.policyVersion}) in ${changes.length} setting${changes.length === 1 ? "" : "s"}:`,
    ...changes.map((c) => `  ${c.text}`),
    `Either put the setting${changes.length === 1 ? "" : "s"} back in the pipelines file, or rebuild the results under the new policy with \`straggler rebuild -p ${pipeline}\` and serve them with \`straggler cutover\`.`,
  ].join("\n");
}

/** Where a pipeline stands against its live results. */
export interface PolicyCheck {
  /** `unrecorded`: no results version yet (the first batch records it); `live`: configured = live; `refused`: they differ, or the window's zone is one PostgreSQL does not know (`changes` empty, `message` says so). */
  state: "unrecorded" | "live" | "refused";
  /** The configured policy's version (hash). */
  policyVersion: string;
  /** The live results' version number and policy version; null when none is recorded. */
  live: { version: number; policyVersion: string } | null;
  /** The changed settings (`path: before → after`); empty unless refused. */
  changes: string[];
  /** The refusal message; null unless refused. */
  message: string | null;
}

interface Compared {
  check: PolicyCheck;
  canonical: string;
  /** The live text differs only in settings at their defaults: rewrite it. */
  restamp: boolean;
  changes: PolicyChange[];
  /** The calendar window's zone is one PostgreSQL does not know (src/stream/zoneGuard.ts). */
  zone?: TimeZoneRefusedError;
}

/** The configured policy's canonical text and hash, computed once per pipeline config (a config is not changed once loaded). */
const configured = new WeakMap<PipelineConfig, { canonical: string; policyVersion: string }>();

function configuredPolicy(pipeline: PipelineConfig): { canonical: string; policyVersion: string } {
  let c = configured.get(pipeline);
  if (c === undefined) {
    const canonical = canonicalPolicy(policyOf(pipeline));
    c = { canonical, policyVersion: policyHash(canonical) };
    configured.set(pipeline, c);
  }
  return c;
}

/** `preRead`: the live policy row when the caller read it already under the results lock (null: none recorded); omitted, it is read here. */
async function compare(client: Queryable, pipeline: PipelineConfig, preRead?: PolicyVersionRow | null): Promise<Compared> {
  const { canonical, policyVersion } = configuredPolicy(pipeline);
  const row = preRead === undefined ? await readLivePolicy(client, pipeline.name) : (preRead ?? undefined);
  const recorded = row ? { version: row.version, policyVersion: row.policyVersion } : null;
  const zone = await timeZoneRefusal(client, pipeline);
  if (zone) return { check: { state: "refused", policyVersion, live: recorded, changes: [], message: zone.message }, canonical, restamp: false, changes: [], zone };
  if (!row) return { check: { state: "unrecorded", policyVersion, live: null, changes: [], message: null }, canonical, restamp: false, changes: [] };
  const live = { version: row.version, policyVersion: row.policyVersion };
  if (row.policyVersion === policyVersion) return { check: { state: "live", policyVersion, live, changes: [], message: null }, canonical, restamp: false, changes: [] };
  const changes = diffPolicies(JSON.parse(row.policy) as PolicyDocument, policyOf(pipeline));
  if (changes.length === 0) return { check: { state: "live", policyVersion, live, changes: [], message: null }, canonical, restamp: true, changes };
  const check: PolicyCheck = { state: "refused", policyVersion, live, changes: changes.map((c) => c.text), message: refusalMessage(pipeline.name, live, changes) };
  return { check, canonical, restamp: false, changes };
}

/**
 * Reads, without writing, where `pipeline`'s configured policy stands against
 * its live results (for status, the service's start and GET /pipelines).
 * @throws the database's error when it cannot be reached
 */
export async function checkPolicy(client: Queryable, pipeline: PipelineConfig): Promise<PolicyCheck> {
  return (await compare(client, pipeline)).check;
}

/**
 * Refuses early, without the results lock and without writing: throws what
 * guardPolicy would throw for a refused policy or an unknown zone, and
 * returns otherwise (an unrecorded policy is recorded later, by guardPolicy
 * under the lock). Lets a correction say "refused" before it claims a run.
 * @throws PolicyRefusedError; TimeZoneRefusedError; the database's error when it cannot be reached
 */
export async function refuseEarly(client: Queryable, pipeline: PipelineConfig): Promise<void> {
  const { check, changes, zone } = await compare(client, pipeline);
  if (zone) throw zone;
  if (check.state === "refused") throw new PolicyRefusedError(pipeline.name, check.live!, changes);
}

/**
 * The guard of a micro-batch or a correction run: call inside its transaction,
 * after taking the pipeline's results lock (src/db/sql/lockResults.ts).
 * Records the configured policy as live when none is.
 * @param live the live policy row, when the caller read it under the lock already
 *   (a micro-batch reads it with its checkpoint: src/db/sql/openBatch.ts); null when none is recorded
 * @returns the live results version the batch or run extends
 * @throws PolicyRefusedError when the configured policy differs from the live one;
 *   TimeZoneRefusedError (src/stream/zoneGuard.ts) when the calendar window's zone is one PostgreSQL does not know
 */
export async function guardPolicy(client: PoolClient, pipeline: PipelineConfig, live?: PolicyVersionRow | null): Promise<number> {
  const { check, canonical, restamp, changes, zone } = await compare(client, pipeline, live);
  if (zone) throw zone;
  if (check.state === "unrecorded") return recordLivePolicy(client, pipeline.name, check.policyVersion, canonical);
  if (check.state === "refused") throw new PolicyRefusedError(pipeline.name, check.live!, changes);
  if (restamp) await restampLivePolicy(client, pipeline.name, check.policyVersion, canonical);
  return check.live!.version;
}
