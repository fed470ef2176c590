#!/usr/bin/env node
/**
 * `straggler` — the CLI: parses the arguments with the commander program
 * src/cli/program.ts builds (one module per command group under commands/).
 * Every command builds what it needs from the validated config when it runs; nothing runs at import time. Exit
 * codes: 0 done, 1 failed (or a command's own failure, e.g. a mismatch),
 * 2 usage or configuration error.
 */
import { CommanderError } from "commander";
import { UsageError } from "./context.js";
import { buildCli } from "./program.js";
import { redactSecrets } from "../secrets.js";
import { databaseHint } from "./dbHints.js";

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
