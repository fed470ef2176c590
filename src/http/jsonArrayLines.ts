/**
 * A JSON array request body split into its elements, one per line of JSON text (src/http/body.ts):
 * stream-json's tokenizer (not recursive: any depth is safe to read) called synchronously on each
 * chunk, numbers kept as their text, strings re-escaped. An element nested deeper than
 * `MAX_JSON_DEPTH` or a body that is not a valid JSON array is a 400.
 */
import { Readable, Transform, Writable, type TransformCallback } from "node:stream";
import { pipeline as pipe } from "node:stream/promises";
import { StringDecoder } from "node:string_decoder";
import { getManyValues, none } from "stream-chain/defs.js";
import { jsonParser as jsonTokenizer } from "stream-json/core/parser.js";
import { MAX_JSON_DEPTH } from "../ingest/jsonRecords.js";
import { spoolFault } from "./bodySpool.js";
import { HttpError } from "./errors.js";

type Token = { name: string; value?: string | null | boolean };

/**
 * Tokens of one JSON array → its elements as JSON text, one per line.
 * Strings are re-escaped by `JSON.stringify` (JSON text cannot hold a raw
 * line break), numbers keep their text. Not recursive: any depth is safe.
 */
class ElementsAsLines {
  private depth = 0; // the array itself is depth 1
  private line = "";
  private afterKey = false;
  private readonly needsComma: boolean[] = [];

  /** The complete elements among `tokens`, each followed by a line feed. */
  take(tokens: Token[]): string {
    let out = "";
    for (const t of tokens) {
      switch (t.name) {
        case "startObject":
        case "startArray":
          if (this.depth === 0) {
            if (t.name !== "startArray")
              throw new HttpError(400, "invalid_request", "body: expected a JSON array of events or NDJSON");
            this.depth = 1;
            break;
          }
          if (this.depth > MAX_JSON_DEPTH)
            throw new HttpError(
              400,
              "invalid_request",
              `body: invalid JSON array: an element is nested deeper than ${MAX_JSON_DEPTH} levels`,
            );
          this.separate();
          this.line += t.name === "startObject" ? "{" : "[";
          this.needsComma[++this.depth] = false;
          break;
        case "endObject":
        case "endArray":
          if (this.depth === 1) {
            this.depth = 0;
            break;
          }
          this.line += t.name === "endObject" ? "}" : "]";
          if (--this.depth === 1) out += this.endElement();
          break;
        case "keyValue":
          if (this.needsComma[this.depth]) this.line += ",";
          this.needsComma[this.depth] = true;
          this.line += JSON.stringify(t.value) + ":";
          this.afterKey = true;
          break;
        case "stringValue":
        case "numberValue":
        case "nullValue":
        case "trueValue":
        case "falseValue":
          this.separate();
          this.line += t.name === "stringValue" ? JSON.stringify(t.value) : String(t.value);
          if (this.depth === 1) out += this.endElement();
          break;
      }
    }
    return out;
  }

  private separate(): void {
    if (this.depth < 2) return;
    if (this.afterKey) this.afterKey = false;
    else if (this.needsComma[this.depth]) this.line += ",";
    this.needsComma[this.depth] = true;
  }

  private endElement(): string {
    const text = this.line + "\n";
    this.line = "";
    return text;
  }
}

/**
 * A Transform from the bytes of a JSON array to its elements, one per line.
 * stream-json's tokenizer is called synchronously per chunk (its stream
 * form costs a promise per token: three times slower on a 15 MB body).
 */
function arrayToLines(): Transform {
  const decoder = new StringDecoder("utf8");
  const tokenize = jsonTokenizer({ streamValues: false }) as unknown as (text: string | symbol) => unknown;
  const splitter = new ElementsAsLines();
  let first = true;
  const run = (text: string | symbol): string => {
    const r = tokenize(text);
    return r === none ? "" : splitter.take(getManyValues(r as never) as Token[]);
  };
  const wrap = (fn: () => string, done: TransformCallback) => {
    try {
      done(null, fn());
    } catch (e) {
      done(
        e instanceof HttpError
          ? e
          : new HttpError(400, "invalid_request", `body: invalid JSON array: ${(e as Error).message.slice(0, 200)}`),
      );
    }
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      wrap(() => {
        let text = decoder.write(chunk);
        if (first && text !== "") {
          first = false;
          if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        }
        return text === "" ? "" : run(text);
      }, done);
    },
    flush(done) {
      wrap(() => {
        const rest = decoder.end();
        return (rest === "" ? "" : run(rest)) + run(none);
      }, done);
    },
  });
}

/** A JSON array's bytes from `from` to its elements, one per line, into `to`. @throws HttpError 400 when it is not a valid JSON array or is too deep */
export async function splitArray(from: Readable, to: Writable): Promise<void> {
  try {
    await pipe(from, arrayToLines(), to);
  } catch (e) {
    if (e instanceof HttpError) throw e;
    throw (
      spoolFault(e) ??
      new HttpError(400, "invalid_request", `body: invalid JSON array: ${(e as Error).message.slice(0, 200)}`, {
        cause: e,
      })
    );
  }
}
