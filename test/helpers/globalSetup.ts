/**
 * One PostgreSQL per test run: `TEST_DATABASE_URL` when set (the quick loop),
 * otherwise a Testcontainers container (image: `STRAGGLER_TEST_PG_IMAGE`,
 * default the official `postgres:16`). A migrated template database is made
 * once; every test file clones it (see `db.ts`). The compiled CLI that tests
 * spawn is built first when dist/ is older than src/ (see `build.ts`).
 */
import type { TestProject } from "vitest/node";
import pg from "pg";
import { runMigrations } from "../../src/db/migrate.js";
import { createPool } from "../../src/db/pool.js";
import { ensureBuilt } from "./build.js";

declare module "vitest" {
  export interface ProvidedContext {
    adminUrl: string;
    templateDb: string;
  }
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  ensureBuilt();
  let adminUrl = process.env.TEST_DATABASE_URL;
  let stopContainer: (() => Promise<unknown>) | undefined;
  if (!adminUrl) {
    const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
    const image = process.env.STRAGGLER_TEST_PG_IMAGE ?? "postgres:16";
    const started = Date.now();
    const container = await new PostgreSqlContainer(image)
      .withDatabase("postgres")
      .withUsername("postgres")
      .withPassword("postgres")
      .start();
    console.log(`[test] PostgreSQL container ${image} started in ${Date.now() - started} ms`);
    adminUrl = container.getConnectionUri();
    stopContainer = () => container.stop();
  }
  // Unique per run: two suites may share one server (the quick loop).
  const TEMPLATE_DB = `straggler_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB}`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  await admin.end();
  const pool = createPool(withDatabase(adminUrl, TEMPLATE_DB), 2);
  await runMigrations(pool);
  await pool.end();
  project.provide("adminUrl", adminUrl);
  project.provide("templateDb", TEMPLATE_DB);
  return async () => {
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB}`);
    await c.end();
    await stopContainer?.();
  };
}
