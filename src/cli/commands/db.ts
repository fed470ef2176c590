/**
 * `db url`, `db psql` and `db grant-reader`: how to reach the database Straggler uses — the one
 * `DATABASE_URL` names, else the embedded PostgreSQL (user, password and
 * database `straggler` on 127.0.0.1, port `STRAGGLER_EMBEDDED_PORT` or 54329).
 * The embedded server runs only while a Straggler process does: `db psql`
 * starts it for the session when none is running and stops it afterwards.
 * `db grant-reader` creates the read-only role of the read model (src/db/sql/readmodel/grantReader.ts).
 */
import { spawn } from "node:child_process";
import path from "node:path";
import type { Command } from "commander";
import type { Env } from "../../config/env.js";

/** The line `db url` writes on stderr when the embedded server is not answering. */
function notRunningNote(dataDir: string): string {
  return (
    `straggler: the embedded PostgreSQL (${path.resolve(dataDir, "pgdata")}) is not running: it runs only while a straggler command does. ` +
    "Keep it up with `npm start` in another terminal, or use `straggler db psql`, which starts it for the session."
  );
}

/** Prints the URL; for the embedded server, also whether it is running (stderr). */
async function printUrl(env: Env): Promise<void> {
  const [{ embeddedUrl, runningDataDir }, { embeddedPort }] = await Promise.all([
    import("../../db/embedded.js"),
    import("../../db/open.js"),
  ]);
  if (env.DATABASE_URL !== undefined) {
    console.log(env.DATABASE_URL);
    return;
  }
  const url = embeddedUrl(embeddedPort());
  console.log(url);
  const running = await runningDataDir(url);
  if (running === undefined) console.error(notRunningNote(env.STRAGGLER_DATA_DIR));
  else if (path.resolve(running) !== path.resolve(env.STRAGGLER_DATA_DIR, "pgdata")) {
    console.error(
      `straggler: port ${embeddedPort()} is used by another embedded PostgreSQL (${running}); set STRAGGLER_EMBEDDED_PORT to another port`,
    );
    process.exitCode = 1;
  }
}

/** Runs `psql <url> <args>` with this terminal; resolves to psql's exit code. Rejects with a clear message when psql is not installed. */
function runPsql(url: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn("psql", [url, ...args], { stdio: "inherit" });
    child.on("error", (e: NodeJS.ErrnoException) =>
      reject(
        e.code === "ENOENT"
          ? new Error(
              "psql is not installed (not found on PATH): install PostgreSQL's client (Debian: apt-get install postgresql-client), or connect another client to the URL `straggler db url` prints",
            )
          : e,
      ),
    );
    // Ctrl-C belongs to psql (it cancels the query): do not stop this process for it.
    const ignore = () => undefined;
    process.on("SIGINT", ignore);
    child.on("exit", (code, signal) => {
      process.removeListener("SIGINT", ignore);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

export function dbCommands(program: Command): void {
  const db = program
    .command("db")
    .description("reach the database: print its connection URL, open psql on it, or create the read-only role");

  db.command("url")
    .description(
      "print the connection URL (DATABASE_URL, or the embedded server's; says on stderr when the embedded server is not running)",
    )
    .action(async () => printUrl((await import("../../config/env.js")).loadEnv()));

  db.command("psql")
    .description(
      "open psql on the database (starting the embedded server for the session when none runs); arguments after -- go to psql",
    )
    .argument("[psql-args...]", "arguments for psql, after --, e.g. -- -c 'SELECT 1'")
    .action(async (args: string[]) => {
      const [{ loadEnv }, { openDatabase }, { commandLogLevel, createLogger }] = await Promise.all([
        import("../../config/env.js"),
        import("../../db/open.js"),
        import("../../log.js"),
      ]);
      const env = loadEnv();
      const database = await openDatabase(
        env,
        createLogger(commandLogLevel("one-shot", env, program.opts().verbose === true)),
      );
      try {
        process.exitCode = await runPsql(database.url, args);
      } finally {
        await database.close();
      }
    });

  db.command("grant-reader")
    .description(
      "create the NOLOGIN role straggler_reader (or --role) with SELECT on every view of schema straggler, and grant it to login roles (--to); idempotent: run again after a migrate",
    )
    .option("--role <name>", "the role's name", "straggler_reader")
    .option("--to <login...>", "existing roles to grant it to (e.g. a dashboard's login)", [])
    .option("--json", 'print JSON: { "role", "created", "views", "grantedTo" }')
    .action(async (opts: { role: string; to: string[]; json?: boolean }) => {
      const [{ loadEnv }, { openDatabase }, { commandLogLevel, createLogger }, { grantReader }] = await Promise.all([
        import("../../config/env.js"),
        import("../../db/open.js"),
        import("../../log.js"),
        import("../../db/sql/readmodel/grantReader.js"),
      ]);
      const env = loadEnv();
      const database = await openDatabase(
        env,
        createLogger(commandLogLevel("one-shot", env, program.opts().verbose === true)),
      );
      try {
        const client = await database.pool.connect();
        try {
          const r = await grantReader(client, opts.role, opts.to);
          if (opts.json) console.log(JSON.stringify(r));
          else {
            console.log(
              `role ${r.role}: ${r.created ? "created (NOLOGIN)" : "exists"}; SELECT on ${r.views.length} views of schema straggler`,
            );
            if (r.grantedTo.length > 0) console.log(`granted to ${r.grantedTo.join(", ")}`);
          }
        } finally {
          client.release();
        }
      } finally {
        await database.close();
      }
    });
}
