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
 *   - other settings changed, but the live results hold nothing the change
 *     would invalidate — no window results, no windows awaiting correction,
 *     no session retractions, no held results, no archived accepted rows, no
 *     row in bronze accepted under another policy (src/db/sql/observe/resultsFootprint.ts): the configured policy is
 *     **adopted**, the live version's policy rewritten to it in place (its
 *     number kept), and the adoption returned to be logged or printed
 *     (a configuration fixed after its first files were all refused);
 *   - otherwise: `PolicyRefusedError`, naming each changed setting
 *     (`admission.maxFutureSkew: null → 1 hour`) and the ways forward.
 */
import {
  canonicalPolicy,
  diffPolicies,
  policyHash,
  policyOf,
  type PolicyChange,
  type PolicyDocument,
} from "../config/policy.js";
import type { PipelineConfig } from "../config/pipelines.js";
import type { PoolClient, Queryable } from "../db/pool.js";
import {
  readLivePolicy,
  recordLivePolicy,
  restampLivePolicy,
  type PolicyVersionRow,
} from "../db/sql/stream/policyVersions.js";
import { readResultsFootprint } from "../db/sql/observe/resultsFootprint.js";
import { timeZoneRefusal, type TimeZoneRefusedError } from "./timeZone.js";

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
function refusalMessage(
  pipeline: string,
  live: { version: number; policyVersion: string },
  changes: PolicyChange[],
): string {
  return [
    `pipeline ${pipeline} is not streamed: its configured policy differs from the policy of its live results (version ${live.version}, policy ${live.policyVersion}) in ${changes.length} setting${changes.length === 1 ? "" : "s"}:`,
    ...changes.map((c) => `  ${c.text}`),
    `Either put the setting${changes.length === 1 ? "" : "s"} back in the pipelines file, or rebuild the results under the new policy with \`straggler rebuild -p ${pipeline}\` and serve them with \`straggler cutover\`.`,
  ].join("\n");
}

/** A configured policy adopted as the live results' policy, which had nothing it would invalidate. */
export interface PolicyAdoption {
  pipeline: string;
  /** The live results version, whose policy was rewritten in place. */
  version: number;
  /** Policy versions (hashes): the one recorded before, the one adopted. */
  from: string;
  to: string;
  /** The changed settings, `path: before → after`. */
  changes: string[];
  /** In words, as logged and printed. */
  message: string;
}

/** The adoption in words: what changed and why it could be adopted. */
function adoptionMessage(pipeline: string, version: number, changes: string[]): string {
  return (
    `pipeline ${pipeline}: the configured policy is adopted as the policy of its live results (version ${version}), which hold nothing it would invalidate ` +
    `(no window results, no rows accepted under another policy): ${changes.join("; ")}`
  );
}

/** Where a pipeline stands against its live results. */
export interface PolicyCheck {
  /**
   * `unrecorded`: no results version yet, or one whose results hold nothing (no
   * window results, no rows accepted under another policy): the next batch records the configured policy (adopts it, when another was
   * recorded: `live` and `changes` then say which, `message` says so); `live`: configured = live;
   * `refused`: they differ, or the window's zone is one PostgreSQL does not know (`changes` empty, `message` says so).
   */
  state: "unrecorded" | "live" | "refused";
  /** The configured policy's version (hash). */
  policyVersion: string;
  /** The live results' version number and policy version; null when none is recorded. */
  live: { version: number; policyVersion: string } | null;
  /** The changed settings (`path: before → after`); empty unless refused or to be adopted. */
  changes: string[];
  /** The refusal message, or the adoption to come; null otherwise. */
  message: string | null;
}

interface Compared {
  check: PolicyCheck;
  canonical: string;
  /** The live text differs only in settings at their defaults, or the results hold nothing the change would invalidate: rewrite it. */
  restamp: boolean;
  /** The settings changed, and the results hold nothing they would invalidate: the rewrite is an adoption. */
  adopt?: boolean;
  changes: PolicyChange[];
  /** The calendar window's zone is one PostgreSQL does not know (src/guards/timeZone.ts). */
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
async function compare(
  client: Queryable,
  pipeline: PipelineConfig,
  preRead?: PolicyVersionRow | null,
): Promise<Compared> {
  const { canonical, policyVersion } = configuredPolicy(pipeline);
  const row = preRead === undefined ? await readLivePolicy(client, pipeline.name) : (preRead ?? undefined);
  const recorded = row ? { version: row.version, policyVersion: row.policyVersion } : null;
  const zone = await timeZoneRefusal(client, pipeline);
  if (zone)
    return {
      check: { state: "refused", policyVersion, live: recorded, changes: [], message: zone.message },
      canonical,
      restamp: false,
      changes: [],
      zone,
    };
  if (!row)
    return {
      check: { state: "unrecorded", policyVersion, live: null, changes: [], message: null },
      canonical,
      restamp: false,
      changes: [],
    };
  const live = { version: row.version, policyVersion: row.policyVersion };
  if (row.policyVersion === policyVersion)
    return {
      check: { state: "live", policyVersion, live, changes: [], message: null },
      canonical,
      restamp: false,
      changes: [],
    };
  const changes = diffPolicies(JSON.parse(row.policy) as PolicyDocument, policyOf(pipeline));
  if (changes.length === 0)
    return {
      check: { state: "live", policyVersion, live, changes: [], message: null },
      canonical,
      restamp: true,
      changes,
    };
  if ((await readResultsFootprint(client, pipeline.name, policyVersion)).length === 0) {
    const texts = changes.map((c) => c.text);
    return {
      check: {
        state: "unrecorded",
        policyVersion,
        live,
        changes: texts,
        message: adoptionMessage(pipeline.name, live.version, texts),
      },
      canonical,
      restamp: true,
      adopt: true,
      changes,
    };
  }
  const check: PolicyCheck = {
    state: "refused",
    policyVersion,
    live,
    changes: changes.map((c) => c.text),
    message: refusalMessage(pipeline.name, live, changes),
  };
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

/** What the guard let through: the live results version extended, and the adoption it made, if any. */
export interface GuardOutcome {
  version: number;
  /** Set when the configured policy was adopted in place (it commits with the caller's transaction). */
  adopted?: PolicyAdoption;
}

/**
 * The guard of a micro-batch or a correction run: call inside its transaction,
 * after taking the pipeline's results lock (src/db/sql/stream/lockResults.ts).
 * Records the configured policy as live when none is, and adopts it when the
 * live results hold nothing it would invalidate (README "Policy versions").
 * @param live the live policy row, when the caller read it under the lock already
 *   (a micro-batch reads it with its checkpoint: src/db/sql/stream/openBatch.ts); null when none is recorded
 * @returns the live results version the batch or run extends, with the adoption when one was made
 * @throws PolicyRefusedError when the configured policy differs from the live one and the results hold something;
 *   TimeZoneRefusedError (src/guards/timeZone.ts) when the calendar window's zone is one PostgreSQL does not know
 */
export async function guardPolicy(
  client: PoolClient,
  pipeline: PipelineConfig,
  live?: PolicyVersionRow | null,
): Promise<GuardOutcome> {
  const { check, canonical, restamp, adopt, changes, zone } = await compare(client, pipeline, live);
  if (zone) throw zone;
  if (check.state === "refused") throw new PolicyRefusedError(pipeline.name, check.live!, changes);
  if (check.state === "unrecorded" && !adopt)
    return { version: await recordLivePolicy(client, pipeline.name, check.policyVersion, canonical) };
  if (restamp) await restampLivePolicy(client, pipeline.name, check.policyVersion, canonical);
  const version = check.live!.version;
  if (!adopt) return { version };
  return {
    version,
    adopted: {
      pipeline: pipeline.name,
      version,
      from: check.live!.policyVersion,
      to: check.policyVersion,
      changes: check.changes,
      message: check.message!,
    },
  };
}
