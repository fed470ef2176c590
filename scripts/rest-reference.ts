/**
 * Writes docs/rest-reference.md, every operation of the REST API as the OpenAPI document
 * describes it (the document `GET /openapi.json` serves, built as scripts/openapi.ts builds it:
 * no database): per operation, grouped by path in the document's order, its method and path,
 * operationId, summary and description, security (public, read token or write token), parameters,
 * request body media types and every response; then the webhooks.
 * `node --import tsx scripts/rest-reference.ts` writes the file; `--check` writes nothing and exits
 * 1 when the file differs from what it would write (test/unit/references.test.ts fails likewise).
 * The output has no date: the same document gives the same bytes.
 */
import { apiDocument } from "../src/app.js";
import { runWhenMain, writeOrCheckFile } from "./generatedFile.js";

/** The file this script writes, relative to the repository's root. */
const REST_REFERENCE_FILE = "docs/rest-reference.md";

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Json;
}
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Json }> };
  responses?: Record<string, { description?: string; content?: Record<string, unknown> }>;
}
type PathItem = Record<string, Operation> & { parameters?: Parameter[] };
interface Document {
  info: { title: string; version: string; description?: string };
  security?: Operation["security"];
  paths: Record<string, PathItem>;
  webhooks?: Record<string, PathItem>;
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** Prose whose `<` and `>` outside code spans are entities, so that `<id>` is not read as HTML. */
function prose(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/</g, "&lt;").replace(/>/g, "&gt;")))
    .join("");
}

/** Text safe in a Markdown table cell: one line, `|` escaped, no HTML. */
function cell(text: string): string {
  return prose(text)
    .replace(/\s*\n\s*/g, " ")
    .replace(/\|/g, "\\|");
}

/** GitHub's anchor of a heading (the rule test/unit/docsLinks.test.ts checks). */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, "")
    .replace(/ /g, "-");
}

/** Who may call the operation, from its `security` (or the document's): public, read token, write token. */
function securityOf(op: Operation, doc: Document, webhook: boolean): string {
  const security = op.security ?? doc.security ?? [];
  if (webhook && security.length === 0) return "none: the service sends no token";
  if (security.length === 0) return "public: no token";
  if (security.some((s) => Object.keys(s).length === 0)) {
    return "read token: open unless `STRAGGLER_READ_TOKEN` is set, then `Authorization: Bearer` with that token or `STRAGGLER_API_TOKEN`";
  }
  return "write token: `Authorization: Bearer` with `STRAGGLER_API_TOKEN` (refused with 401 while it is unset)";
}

/** A schema in a few words: its type (or referenced component), format, allowed values, default. */
function schemaText(schema: Json | undefined): string {
  if (schema === undefined) return "";
  if (typeof schema.$ref === "string") return schema.$ref.replace("#/components/schemas/", "");
  for (const key of ["anyOf", "oneOf"]) {
    if (Array.isArray(schema[key])) return (schema[key] as Json[]).map(schemaText).join(" or ");
  }
  const type = Array.isArray(schema.type) ? (schema.type as string[]).join(" or ") : String(schema.type ?? "any");
  const parts = [typeof schema.format === "string" ? `${type} (${schema.format})` : type];
  if (type === "array" && schema.items !== undefined) parts[0] = `array of ${schemaText(schema.items as Json)}`;
  if (Array.isArray(schema.enum))
    parts.push(`one of ${(schema.enum as unknown[]).map((v) => `\`${String(v)}\``).join(", ")}`);
  if (schema.default !== undefined) parts.push(`default \`${JSON.stringify(schema.default)}\``);
  return parts.join(", ");
}

function parametersTable(params: Parameter[]): string[] {
  if (params.length === 0) return ["Parameters: none.", ""];
  return [
    "| name | in | required | type | description |",
    "| --- | --- | --- | --- | --- |",
    ...params.map((p) => {
      const description = p.description ?? (typeof p.schema?.description === "string" ? p.schema.description : "");
      return `| \`${p.name}\` | ${p.in} | ${p.required === true ? "yes" : "no"} | ${cell(schemaText(p.schema))} | ${cell(description)} |`;
    }),
    "",
  ];
}

function requestBodyText(op: Operation): string[] {
  if (op.requestBody === undefined) return [];
  const media = Object.entries(op.requestBody.content ?? {}).map(([type, m]) => {
    const ref = typeof m.schema?.$ref === "string" ? ` (schema \`${schemaText(m.schema)}\`)` : "";
    return `\`${type}\`${ref}`;
  });
  return [`Request body (${op.requestBody.required === true ? "required" : "optional"}): ${media.join(", ")}.`, ""];
}

function responsesTable(op: Operation): string[] {
  const responses = Object.entries(op.responses ?? {});
  if (responses.length === 0) return [];
  return [
    "| status | description | media type |",
    "| --- | --- | --- |",
    ...responses.map(
      ([status, r]) =>
        `| ${status} | ${cell(r.description ?? "")} | ${Object.keys(r.content ?? {})
          .map((t) => `\`${t}\``)
          .join(", ")} |`,
    ),
    "",
  ];
}

/** The operations of a path item, in the document's order: [method, operation]. */
function operationsOf(item: PathItem): Array<[string, Operation]> {
  return Object.entries(item).filter(([method]) => METHODS.includes(method)) as Array<[string, Operation]>;
}

function operationSection(
  heading: string,
  op: Operation,
  shared: Parameter[],
  doc: Document,
  webhook = false,
): string[] {
  const out = [`### ${heading}`, "", `operationId \`${op.operationId ?? "(none)"}\``, ""];
  if (op.summary) out.push(prose(op.summary), "");
  if (op.description) out.push(prose(op.description), "");
  out.push(`Security: ${securityOf(op, doc, webhook)}.`, "");
  out.push(...parametersTable([...shared, ...(op.parameters ?? [])]), ...requestBodyText(op), ...responsesTable(op));
  return out;
}

/** The Markdown of the REST reference for an OpenAPI 3.1 document (default: the service's). */
export function restReference(document: object = apiDocument()): string {
  const doc = document as Document;
  const seen = new Set<string>();
  const heading = (text: string) => {
    const a = anchor(text);
    if (seen.has(a)) throw new Error(`two headings with the anchor #${a} (${text})`);
    seen.add(a);
    return a;
  };
  const contents: string[] = [];
  const body: string[] = ["## Operations", ""];
  for (const [route, item] of Object.entries(doc.paths)) {
    const links: string[] = [];
    for (const [method, op] of operationsOf(item)) {
      const title = `${method.toUpperCase()} ${route}`;
      links.push(`[${method.toUpperCase()}](#${heading(title)})`);
      body.push(...operationSection(title, op, item.parameters ?? [], doc));
    }
    contents.push(`  - \`${route}\`: ${links.join(", ")}`);
  }
  const webhooks = Object.entries(doc.webhooks ?? {});
  const hookContents: string[] = [];
  const hookBody: string[] = [];
  if (webhooks.length > 0) {
    hookBody.push(
      "## Webhooks",
      "",
      "Requests the service sends (the receiver's side: what it is sent and how its answer is read).",
      "",
    );
    for (const [name, item] of webhooks) {
      for (const [method, op] of operationsOf(item)) {
        const title = `${name} (${method.toUpperCase()})`;
        hookContents.push(`  - [${title}](#${heading(title)})`);
        hookBody.push(...operationSection(title, op, item.parameters ?? [], doc, true));
      }
    }
  }
  const out = [
    "# REST reference",
    "",
    `Every operation of the ${doc.info.title} REST API (version ${doc.info.version}), generated from the OpenAPI document`,
    "`GET /openapi.json` serves by `node --import tsx scripts/rest-reference.ts`: do not edit it by hand; a test fails when",
    "it is stale. How the API behaves (errors, tokens, the walkthrough): [REST API](rest.md).",
    "",
    "## Contents",
    "",
    `- [Operations](#${heading("Operations")})`,
    ...contents,
    ...(webhooks.length > 0 ? [`- [Webhooks](#${heading("Webhooks")})`, ...hookContents] : []),
    "",
    ...body,
    ...hookBody,
  ];
  return `${out.join("\n").trimEnd()}\n`;
}

/** Writes the file, or with `check` compares it: returns the message to print and the exit code. */
export function writeOrCheck(root: string, check: boolean): { message: string; code: number } {
  return writeOrCheckFile(
    root,
    {
      file: REST_REFERENCE_FILE,
      source: "the OpenAPI document",
      command: "node --import tsx scripts/rest-reference.ts",
    },
    restReference(),
    check,
  );
}

runWhenMain(import.meta.url, writeOrCheck);
