/**
 * Writes docs/cli-reference.md, every command of `straggler` as commander knows it (the program
 * src/cli/program.ts builds, without running a command or opening a database): per command and
 * subcommand its usage line, description, arguments and options (flags, description, default),
 * and the global options, environment variables and exit codes first. `node --import tsx scripts/cli-reference.ts` writes the file;
 * `--check` writes nothing and exits 1 when the file differs from what it would write
 * (test/unit/references.test.ts fails likewise). The output has no date: the same program gives
 * the same bytes.
 */
import type { Argument, Command, Help, Option } from "commander";
import { ENVIRONMENT_HELP } from "../src/cli/helpText.js";
import { buildCli } from "../src/cli/program.js";
import { runWhenMain, writeOrCheckFile } from "./generatedFile.js";

/** The file this script writes, relative to the repository's root. */
const CLI_REFERENCE_FILE = "docs/cli-reference.md";

/** Text safe in a Markdown table cell: one line, `|` escaped, `<` and `>` as entities (not HTML). */
function cell(text: string): string {
  return text
    .replace(/\s*\n\s*/g, " ")
    .replace(/\|/g, "\\|")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;");
}

/** A code span for a table cell (backticks doubled when the text holds one; `|` escaped). */
function code(text: string): string {
  const fence = text.includes("`") ? "``" : "`";
  return `${fence}${text.replace(/\|/g, "\\|")}${fence}`;
}

/** The option's default as commander would print it in `--help` ("" when it has none). */
function defaultOf(o: Option): string {
  if (o.defaultValueDescription !== undefined) return o.defaultValueDescription;
  if (o.defaultValue === undefined || (o.negate && o.defaultValue === true)) return "";
  return JSON.stringify(o.defaultValue);
}

/** The option's description, with its choices and environment variable when it has them. */
function describeOption(o: Option): string {
  const extra: string[] = [];
  if (o.argChoices) extra.push(`choices: ${o.argChoices.map((c) => JSON.stringify(c)).join(", ")}`);
  if (o.envVar) extra.push(`env: ${o.envVar}`);
  if (o.mandatory) extra.push("required");
  return cell([o.description, ...extra.map((e) => `(${e})`)].filter((t) => t !== "").join(" "));
}

function optionsTable(help: Help, cmd: Command): string[] {
  const options = help.visibleOptions(cmd);
  if (options.length === 0) return [];
  return [
    "| flags | description | default |",
    "| --- | --- | --- |",
    ...options.map(
      (o) => `| ${code(o.flags)} | ${describeOption(o)} | ${defaultOf(o) === "" ? "" : code(defaultOf(o))} |`,
    ),
    "",
  ];
}

function argumentsTable(help: Help, cmd: Command): string[] {
  const args: readonly Argument[] = help.visibleArguments(cmd);
  if (args.length === 0) return [];
  const label = (a: Argument) =>
    a.required ? `<${a.name()}${a.variadic ? "..." : ""}>` : `[${a.name()}${a.variadic ? "..." : ""}]`;
  return [
    "| argument | description |",
    "| --- | --- |",
    ...args.map((a) => `| ${code(label(a))} | ${cell(a.description)} |`),
    "",
  ];
}

/** Every command below `cmd`, depth first in the order they were added (`help` left out). */
function commandsOf(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...commandsOf(c)]);
}

/** The full name of a command, e.g. "straggler db url". */
function fullName(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c !== null; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/** GitHub's anchor of a heading (the rule test/unit/docsLinks.test.ts checks). */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, "")
    .replace(/ /g, "-");
}

/** The Markdown of the CLI reference for `program` (default: the straggler program). */
export function cliReference(program: Command = buildCli()): string {
  const help = program.createHelp();
  const commands = commandsOf(program).filter((c) => !(c as unknown as { _hidden: boolean })._hidden);
  const out = [
    "# CLI reference",
    "",
    "Every command and option of `straggler`, generated from the commander program (`src/cli/program.ts`) by",
    "`node --import tsx scripts/cli-reference.ts`: do not edit it by hand; a test fails when it is stale.",
    "What the commands print and how they fail: [CLI](cli.md). The same text, per command: `straggler <command> --help`.",
    "",
    "## Contents",
    "",
    "- [Global options](#global-options)",
    "- [Environment variables and exit codes](#environment-variables-and-exit-codes)",
    ...commands.map((c) => `- [${fullName(c)}](#${anchor(fullName(c))})`),
    "",
    "## Global options",
    "",
    "```text",
    help.commandUsage(program),
    "```",
    "",
    program.description(),
    "",
    "They go before the command (`straggler --config pipelines.yaml status`).",
    "",
    ...optionsTable(help, program),
    "## Environment variables and exit codes",
    "",
    "What `straggler --help` prints after the commands (`src/cli/helpText.ts`):",
    "",
    "```text",
    ENVIRONMENT_HELP.trim(),
    "```",
    "",
  ];
  for (const c of commands) {
    out.push(`## ${fullName(c)}`, "", "```text", help.commandUsage(c), "```", "");
    const description = help.commandDescription(c);
    if (description !== "") out.push(description, "");
    const subcommands = help.visibleCommands(c).filter((s) => s.name() !== "help");
    if (subcommands.length > 0) {
      out.push("Subcommands: " + subcommands.map((s) => `[${s.name()}](#${anchor(fullName(s))})`).join(", ") + ".", "");
    }
    out.push(...argumentsTable(help, c), ...optionsTable(help, c));
  }
  return `${out.join("\n").trimEnd()}\n`;
}

/** Writes the file, or with `check` compares it: returns the message to print and the exit code. */
export function writeOrCheck(root: string, check: boolean): { message: string; code: number } {
  return writeOrCheckFile(
    root,
    {
      file: CLI_REFERENCE_FILE,
      source: "the CLI's commands and options",
      command: "node --import tsx scripts/cli-reference.ts",
    },
    cliReference(),
    check,
  );
}

runWhenMain(import.meta.url, writeOrCheck);
