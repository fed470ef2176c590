/**
 * Advisory lock keys. One namespace (the first key) per purpose, the pipeline
 * name hashed into the second, so locks never collide with other apps'.
 */
export const LockNamespace = {
  /** Bronze appends of one pipeline: sequence order = commit order (DESIGN §10). */
  bronzeAppend: 0x5741_0001,
  /** The results of one pipeline: one writer at a time, stream or correction. */
  results: 0x5741_0002,
  /** Schema migrations. */
  migrate: 0x5741_0003,
  /** The owner of one pipeline (src/cluster/leases.ts): a session-level lock held by one replica's lease connection. */
  pipelineOwner: 0x5741_0004,
  /** A rebuild of one pipeline (held by its session while it runs: one rebuild at a time). */
  rebuild: 0x5741_0005,
  /**
   * The live holder of one correction run (src/correction/runLease.ts): a session-level lock on
   * the run's own connection, second key the run id modulo 2^31. A `running` run whose lock nobody
   * holds has lost its process.
   */
  correctionRun: 0x5741_0006,
  /** Bronze's archive and restore (src/retention/): one at a time across replicas (second key 0). */
  retention: 0x5741_0023,
} as const;

/** SQL fragment taking a transaction-scoped advisory lock for (namespace, pipeline). Params: $1 namespace, $2 pipeline. */
export const XACT_LOCK_SQL = "SELECT pg_advisory_xact_lock($1::int, hashtext($2))";

/**
 * SQL condition: the correction run `runIdSql` (a bigint expression) has a live holder, i.e. some
 * session of this database holds its session-level lock (namespace `correctionRun`, second key the
 * run id modulo 2^31: src/correction/runLease.ts). Reads pg_locks only: takes nothing.
 */
export function runHolderAliveSql(runIdSql: string): string {
  return `EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ${LockNamespace.correctionRun}::int::oid AND l.objid::bigint = ${runIdSql} % 2147483648)`;
}

/** SQL expression: the second key of a correction run's holder lock, from a bigint expression. */
export function runHolderKeySql(runIdSql: string): string {
  return `(${runIdSql} % 2147483648)::int`;
}
