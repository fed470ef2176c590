#!/usr/bin/env node
/**
 * `straggler` — the CLI: the commands (one module per group under
 * commands/) wired to commander. Every command builds what it needs from
 * the validated config when it runs; nothing runs at import time. Exit
 * codes: 0 done, 1 failed (or a command's own failure, e.g. a mismatch),
 * 2 usage or configuration error.
 */
import { Command, CommanderError, Option } from "commander";
import { correctCommands } from "./commands/correct.js";
import { dbCommands } from "./commands/db.js";
import { dropCommand } from "./commands/drop.js";
import { explainCommand } from "./commands/explain.js";
import { holdCommands } from "./commands/hold.js";
import { cutoverCommand } from "./commands/cutover.js";
import { rebuildCommand } from "./commands/rebuild.js";
import { ingestCommands } from "./commands/ingest.js";
import { latenessCommand } from "./commands/lateness.js";
import { replayCommand } from "./commands/replay.js";
import { retentionCommands } from "./commands/retention.js";
import { serveCommands } from "./commands/serve.js";
import { streamCommands } from "./commands/stream.js";
import { context, UsageError, type ContextOf } from "./context.js";
import { redactSecrets } from "../secrets.js";
import { ENVIRONMENT_HELP, packageVersion } from "./helpText.js";
import { databaseHint } from "./dbHints.js";

// Each commands/ module defines its commands with light imports only and imports
// what an action needs when it runs: `--help`, `status` or `ingest` never load the
// service (express, the UI), NATS or what other commands use.

export function buildCli(): Command {
  const program = new Command("straggler")
    .description("Event-time windows in PostgreSQL that stay right when events arrive late")
    .addOption(new Option("-c, --config <file>", "pipelines file (YAML/JSON)").env("STRAGGLER_PIPELINES"))
    .option("--verbose", "log at info on stderr (one-shot commands log only warnings by default; STRAGGLER_LOG_LEVEL sets any level)")
    .version(packageVersion(), "-V, --version", "print the version of straggler")
    .addHelpText("after", ENVIRONMENT_HELP)
    .showHelpAfterError()
    .exitOverride(); // inherited by the commands below: usage errors exit 2, not 1
  const ctxOf: ContextOf = (kind) => context(program.opts().config as string | undefined, kind, program.opts().verbose === true);
  serveCommands(program, ctxOf);
  ingestCommands(program, ctxOf);
  streamCommands(program, ctxOf);
  replayCommand(program, ctxOf);
  correctCommands(program, ctxOf);
  latenessCommand(program, ctxOf);
  explainCommand(program, ctxOf);
  dbCommands(program);
  dropCommand(program, ctxOf);
  holdCommands(program, ctxOf);
  rebuildCommand(program, ctxOf);
  cutoverCommand(program, ctxOf);
  retentionCommands(program, ctxOf);
  return program;
}

async function main(): Promise<void> {
  // `straggler … | head` closes stdout early: that is not an error.
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(0);
    throw e;
  });
  try {
    await buildCli().parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has printed its message; help and version are not errors.
      process.exitCode = e.exitCode === 0 ? 0 : 2;
      return;
    }
    const { ConfigError } = await import("../config/pipelines.js");
    if (e instanceof ConfigError || e instanceof UsageError) {
      console.error(`straggler: ${redactSecrets(e.message)}`);
      process.exitCode = 2;
      return;
    }
    console.error(`straggler: ${redactSecrets((e as Error).message)}`);
    const hint = databaseHint(e);
    if (hint !== null) console.error(`straggler: ${hint}`);
    process.exitCode = 1;
  }
}

await main();
// Exit now with our code: a library's leftover handle must not keep a finished command alive.
process.exit(process.exitCode ?? 0);
