/**
 * The read-only role of the read model (docs/operations.md "Read model for dashboards";
 * `straggler db grant-reader` names it `straggler_reader` unless told otherwise): a
 * NOLOGIN role with USAGE on schema `straggler` and SELECT on each of its views, the
 * dashboards' contract (DESIGN "Tables": views, never private tables). A view reads its tables
 * with its owner's rights, so the role needs no right on any table. Users GRANT the role to
 * their login roles (`--to`). Idempotent: run again after a migrate that adds a view.
 */
import pg from "pg";
import type { Queryable } from "../../pool.js";

export interface GrantReaderResult {
  role: string;
  /** True when this call created the role; false when it existed. */
  created: boolean;
  /** The views it may now SELECT (names without the schema), sorted. */
  views: string[];
  /** The roles it was granted to (`--to`), as given. */
  grantedTo: string[];
}

const VIEWS_SQL = "SELECT viewname FROM pg_views WHERE schemaname = 'straggler' ORDER BY viewname";

/**
 * Creates `role` NOLOGIN when absent, grants it USAGE on schema `straggler` and SELECT on every
 * view there, then grants it to each of `grantTo`; in one transaction of `client` (a client, not a
 * pool). Throws PostgreSQL's error when the user lacks CREATEROLE (42501) or a `grantTo` role does
 * not exist (42704); nothing is changed then.
 */
export async function grantReader(
  client: Queryable,
  role: string,
  grantTo: readonly string[],
): Promise<GrantReaderResult> {
  const id = pg.escapeIdentifier(role);
  await client.query("BEGIN");
  try {
    const exists = (await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role])).rowCount === 1;
    if (!exists) await client.query(`CREATE ROLE ${id} NOLOGIN`);
    await client.query(`GRANT USAGE ON SCHEMA straggler TO ${id}`);
    const views = (await client.query(VIEWS_SQL)).rows.map((r: { viewname: string }) => r.viewname);
    if (views.length > 0)
      await client.query(
        `GRANT SELECT ON ${views.map((v) => `straggler.${pg.escapeIdentifier(v)}`).join(", ")} TO ${id}`,
      );
    for (const login of grantTo) await client.query(`GRANT ${id} TO ${pg.escapeIdentifier(login)}`);
    await client.query("COMMIT");
    return { role, created: !exists, views, grantedTo: [...grantTo] };
  } catch (e) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw e;
  }
}
