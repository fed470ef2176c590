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
  /** Bronze's archive and restore (src/retention/): one at a time across replicas (second key 0). */
  retention: 0x5741_0023,
} as const;

/** SQL fragment taking a transaction-scoped advisory lock for (namespace, pipeline). Params: $1 namespace, $2 pipeline. */
export const XACT_LOCK_SQL = "SELECT pg_advisory_xact_lock($1::int, hashtext($2))";
