/**
 * Pipeline leases (src/cluster/leases.ts): session-level advisory locks
 * (namespace `pipelineOwner`, the pipeline name hashed) held by one replica's
 * lease connection, whose `application_name` names the replica. The lock is
 * the lease: PostgreSQL releases it when that session ends, however it ends.
 * Its fencing token is the pipeline's row of `straggler.pipeline_leases`
 * (migration 0027, src/cluster/fencing.ts): each taking sets `epoch` to the
 * next value of the sequence `pipeline_lease_epochs`, so an epoch is never handed out twice.
 */
import { LockNamespace } from "../../locks.js";
import type { Queryable } from "../../pool.js";

/** The `application_name` prefix of a replica's lease connection; the replica id follows it. */
export const REPLICA_APPLICATION_PREFIX = "straggler replica ";

/**
 * Takes the lease of `pipeline` on the lease connection `client` if no session holds it.
 * Session-level locks stack: call it only for a pipeline this session does not hold.
 * @returns true when taken (held until released or the session ends)
 */
export async function tryPipelineLease(client: Queryable, pipeline: string): Promise<boolean> {
  const { rows } = await client.query("SELECT pg_try_advisory_lock($1::int, hashtext($2)) AS taken", [
    LockNamespace.pipelineOwner,
    pipeline,
  ]);
  return rows[0].taken === true;
}

/** Releases the lease of `pipeline` held by `client`'s session; false when it held none. */
export async function releasePipelineLease(client: Queryable, pipeline: string): Promise<boolean> {
  const { rows } = await client.query("SELECT pg_advisory_unlock($1::int, hashtext($2)) AS released", [
    LockNamespace.pipelineOwner,
    pipeline,
  ]);
  return rows[0].released === true;
}

/**
 * The heartbeat of a lease connection: the replicas alive on this database now
 * (sessions whose `application_name` starts with the prefix), this one included.
 */
export async function countLiveReplicas(client: Queryable): Promise<number> {
  const { rows } = await client.query(
    "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND starts_with(application_name, $1)",
    [REPLICA_APPLICATION_PREFIX],
  );
  return rows[0].n;
}

/** The ids of the replicas alive on this database now (their lease connections), sorted. */
export async function listLiveReplicas(client: Queryable): Promise<string[]> {
  const { rows } = await client.query(
    `SELECT DISTINCT substr(application_name, length($1) + 1) AS replica FROM pg_stat_activity
      WHERE datname = current_database() AND starts_with(application_name, $1) ORDER BY 1`,
    [REPLICA_APPLICATION_PREFIX],
  );
  return rows.map((r: { replica: string }) => r.replica);
}

/**
 * The replica that owns each of `pipelines` now, null where none does: read
 * from the granted locks (pg_locks) and the holder's `application_name`, so
 * every process — a replica, `straggler status` — sees the same answer.
 * The second key of a two-key advisory lock is in `objid` as an unsigned 32-bit number.
 */
export async function readPipelineOwners(client: Queryable, pipelines: string[]): Promise<Map<string, string | null>> {
  const { rows } = await client.query(
    `SELECT p.name AS pipeline, substr(a.application_name, length($3) + 1) AS replica
       FROM unnest($2::text[]) AS p(name)
       LEFT JOIN pg_locks l
         ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND l.classid::bigint = $1 AND l.objid::bigint = (hashtext(p.name)::bigint & 4294967295)
       LEFT JOIN pg_stat_activity a ON a.pid = l.pid`,
    [LockNamespace.pipelineOwner, pipelines, REPLICA_APPLICATION_PREFIX],
  );
  return new Map(rows.map((r: { pipeline: string; replica: string | null }) => [r.pipeline, r.replica]));
}

const RAISE_LEASE_EPOCH_SQL = `INSERT INTO straggler.pipeline_leases AS l (pipeline, epoch, owner) VALUES ($1, nextval('straggler.pipeline_lease_epochs'), $2)
  ON CONFLICT (pipeline) DO UPDATE SET epoch = EXCLUDED.epoch, owner = EXCLUDED.owner, taken_at = now()
  RETURNING epoch::text AS epoch`;

/**
 * Raises the fencing token of `pipeline`'s lease, just taken by `owner` on the lease connection
 * `client`: from its commit on, a commit checked against an older epoch rolls back. The UPDATE
 * waits for a writer that has read the row FOR SHARE (`readLeaseEpochForShare`) until it commits:
 * that writer's commit comes before the taking. Run it with a `lock_timeout`.
 * @returns the new epoch (a bigint as a decimal string), greater than every epoch handed out before
 * @throws the database's error (SQLSTATE 55P03 when the `lock_timeout` ran out first)
 */
export async function raiseLeaseEpoch(client: Queryable, pipeline: string, owner: string): Promise<string> {
  const { rows } = await client.query<{ epoch: string }>(RAISE_LEASE_EPOCH_SQL, [pipeline, owner]);
  return rows[0]!.epoch;
}

const READ_LEASE_EPOCH_FOR_SHARE_SQL = `SELECT epoch::text AS epoch, owner FROM straggler.pipeline_leases WHERE pipeline = $1 FOR SHARE`;

/**
 * The fencing token of `pipeline`'s lease, read FOR SHARE in the caller's transaction: no taking
 * can raise it before that transaction ends.
 * @returns the epoch (decimal string) and the replica that took it; undefined when it was never taken
 */
export async function readLeaseEpochForShare(
  client: Queryable,
  pipeline: string,
): Promise<{ epoch: string; owner: string } | undefined> {
  const { rows } = await client.query<{ epoch: string; owner: string }>(READ_LEASE_EPOCH_FOR_SHARE_SQL, [pipeline]);
  return rows[0];
}
