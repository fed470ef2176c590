/**
 * A statement tried under a savepoint, for the failure paths of windows whose
 * aggregate fails with a data exception (`windowFailures.ts`): the
 * transaction survives the failure and goes on without it.
 */
import type { DatabaseError } from "pg";
import type { PoolClient } from "./pool.js";
import { isDataException } from "./errors.js";

/**
 * Runs `fn` under `SAVEPOINT name` (`name` is a constant identifier, never
 * user input) and releases it. On a data exception (SQLSTATE class 22) rolls
 * back to the savepoint, releases it and returns the error instead.
 * @returns `{ value }` when `fn` succeeded, `{ error }` on a data exception
 * @throws any other error unchanged (the transaction is then aborted)
 */
export async function trySavepoint<T>(
  client: PoolClient,
  name: string,
  fn: () => Promise<T>,
): Promise<{ value: T; error?: undefined } | { error: DatabaseError }> {
  await client.query(`SAVEPOINT ${name}`);
  try {
    const value = await fn();
    await client.query(`RELEASE SAVEPOINT ${name}`);
    return { value };
  } catch (e) {
    if (!isDataException(e)) throw e;
    await client.query(`ROLLBACK TO SAVEPOINT ${name}`);
    await client.query(`RELEASE SAVEPOINT ${name}`);
    return { error: e };
  }
}
