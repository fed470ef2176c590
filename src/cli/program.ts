/**
 * The `straggler` commander program: the global options and every command (one module per
 * group under commands/). Building it runs nothing and opens no database: src/cli/main.ts
 * parses the arguments with it, scripts/cli-reference.ts prints the CLI reference from it.
 */
import { Command, Option } from "commander";
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
import { sourcesCommands } from "./commands/sources.js";
import { streamCommands } from "./commands/stream.js";
import { context, type ContextOf } from "./context.js";
import { ENVIRONMENT_HELP, packageVersion } from "./helpText.js";

// Each commands/ module defines its commands with light imports only and imports
// what an action needs when it runs: `--help`, `status` or `ingest` never load the
// service (express, the UI), NATS or what other commands use.

export function buildCli(): Command {
  const program = new Command("straggler")
    .description("Event-time windows in PostgreSQL that stay right when events arrive late")
    .addOption(new Option("-c, --config <file>", "pipelines file (YAML/JSON)").env("STRAGGLER_PIPELINES"))
    .option(
      "--verbose",
      "log at info on stderr (one-shot commands log only warnings by default; STRAGGLER_LOG_LEVEL sets any level)",
    )
    .version(packageVersion(), "-V, --version", "print the version of straggler")
    .addHelpText("after", ENVIRONMENT_HELP)
    .showHelpAfterError()
    .exitOverride(); // inherited by the commands below: usage errors exit 2, not 1
  const ctxOf: ContextOf = (kind) =>
    context(program.opts().config as string | undefined, kind, program.opts().verbose === true);
  serveCommands(program, ctxOf);
  ingestCommands(program, ctxOf);
  sourcesCommands(program, ctxOf);
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
