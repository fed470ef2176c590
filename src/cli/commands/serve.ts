/** `serve` (the service: REST API and stream loops) and `migrate`. */
import type { Command } from "commander";
import { json, withDb, type ContextOf } from "../context.js";

export function serveCommands(program: Command, ctxOf: ContextOf): void {
  program
    .command("serve")
    .description("run the service: REST API and the stream loop of every pipeline (what `npm start` runs)")
    .action(async () => {
      const ctx = await ctxOf("service");
      const [{ openDatabase }, { startService }] = await Promise.all([
        import("../../db/open.js"),
        import("../../service.js"),
      ]);
      const db = await openDatabase(ctx.env, ctx.log);
      let service;
      try {
        service = await startService(ctx.env, db, ctx.pipelines, ctx.log);
      } catch (e) {
        // e.g. the port is in use: exit 1 with the reason, never a service that serves nothing.
        await db.close();
        throw e;
      }
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
      ctx.log.info("stopping");
      await service.stop();
      await db.close();
    });

  program
    .command("migrate")
    .description("apply the database migrations in drizzle/ and exit")
    .option("--json", 'print JSON: { "migrated": true, "database": "embedded" | "external" }')
    .action(async (opts: { json?: boolean }) => {
      const ctx = await ctxOf();
      await withDb(ctx, async (db) =>
        opts.json
          ? json({ migrated: true, database: db.kind })
          : console.log(`migrations applied (${db.kind} database)`),
      );
    });
}
