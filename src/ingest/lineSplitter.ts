/**
 * A byte-level line splitter with a bounded buffer: the input's lines as
 * bytes, each ended by `\n`, `\r\n` or a lone `\r` (as Node's readline reads
 * them), found with `Buffer.indexOf` on the bytes, so a file with CR-only line
 * ends is read line by line like any other. Each line says which ending it
 * had (`eol`), so a record of several lines (a quoted CSV field that spans
 * lines) can be put back together byte for byte.
 *
 * A line longer than `maxBytes` is never held whole: the splitter keeps its
 * first `maxBytes` bytes (for the quarantine row), counts and drops the rest
 * up to the next line end, and yields the line with `tooLong: true`. What it
 * holds between input chunks is therefore at most `maxBytes` bytes, whatever
 * the input (a 1 GB line costs no more memory than a 1 MiB one).
 *
 * A final line without its line end is yielded with `terminated: false` when
 * `unterminated` is `"record"`, and held back (not yielded) when it is
 * `"hold"` (append-only files: the line may still be being written; a `\r`
 * as the input's last byte may be the start of a `\r\n`, so it is held too).
 */

export interface SplitLine {
  /** The line's bytes without its line end; at most `maxBytes` of them. */
  bytes: Buffer;
  /** 1-based physical line number (counting from `firstLine`). */
  line: number;
  /** The line was longer than `maxBytes`: `bytes` holds its start only. */
  tooLong: boolean;
  /** Length of the whole line in bytes, its line end excluded. */
  length: number;
  /** The line ended with a line end. */
  terminated: boolean;
  /** The line end it had: `"\n"`, `"\r\n"`, `"\r"`, or `""` for a final line without one. */
  eol: "\n" | "\r\n" | "\r" | "";
  /** Byte offset in the input just after this line (and its line end), counting from `startOffset`. */
  endOffset: number;
}

export interface SplitOptions {
  /** Longest line kept whole, bytes. */
  maxBytes: number;
  /** A final line without a line end: yielded (`record`) or held back (`hold`). */
  unterminated: "record" | "hold";
  /** Offset of the input's first byte in its file (append-only pieces start mid-file). */
  startOffset?: number;
  /** Number of the input's first line (default 1). */
  firstLine?: number;
  /** Sees every input chunk as read (e.g. to hash the bytes). */
  onChunk?: (chunk: Buffer) => void;
}

const LF = 0x0a;
const EMPTY = Buffer.alloc(0);
const CR = 0x0d;

/**
 * Splits `input` into lines.
 * @returns an async iterable of the lines completed by each input chunk (one
 *   array per chunk, never empty: one await per chunk, not per line), in order;
 *   never throws by itself (errors of `input` pass through)
 */
export async function* splitLines(
  input: AsyncIterable<Buffer | string>,
  opts: SplitOptions,
): AsyncGenerator<SplitLine[]> {
  const max = opts.maxBytes;
  let parts: Buffer[] = [];
  let kept = 0; // bytes held in parts (<= max)
  let length = 0; // bytes of the current line so far, dropped ones included
  let offset = opts.startOffset ?? 0; // offset of the current line's first byte
  let line = opts.firstLine ?? 1;
  let crPending = false; // the previous chunk ended with a CR: its line ends with the next byte (LF or not)

  const take = (eol: SplitLine["eol"], out: SplitLine[]): void => {
    const bytes = parts.length === 1 ? parts[0]! : parts.length === 0 ? EMPTY : Buffer.concat(parts, kept);
    const end = offset + length + eol.length;
    out.push({ bytes, line: line++, tooLong: length > max, length, terminated: eol !== "", eol, endOffset: end });
    offset = end;
    parts = [];
    kept = 0;
    length = 0;
  };
  const add = (buf: Buffer, from: number, to: number, carried: boolean): void => {
    const piece = to - from;
    if (kept < max && piece > 0) {
      const n = Math.min(piece, max - kept);
      // A piece carried over to the next chunk is copied, so it does not pin the whole chunk.
      parts.push(carried ? Buffer.from(buf.subarray(from, from + n)) : buf.subarray(from, from + n));
      kept += n;
    }
    length += piece;
  };

  for await (const chunk of input) {
    const buf = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    opts.onChunk?.(buf);
    const batch: SplitLine[] = [];
    let pos = 0;
    if (crPending && buf.length > 0) {
      crPending = false;
      if (buf[0] === LF) {
        take("\r\n", batch);
        pos = 1;
      } else take("\r", batch);
    }
    // The next CR of the chunk, found once per CR (most inputs have none, or one before each LF).
    let cr = buf.indexOf(CR, pos);
    while (pos < buf.length) {
      const nl = buf.indexOf(LF, pos);
      if (cr !== -1 && cr < pos) cr = buf.indexOf(CR, pos);
      if (cr !== -1 && (nl === -1 || cr < nl)) {
        add(buf, pos, cr, cr === buf.length - 1);
        if (cr === buf.length - 1) {
          crPending = true; // CRLF across chunks, or a lone CR: the next chunk's first byte tells
          pos = buf.length;
          break;
        }
        if (buf[cr + 1] === LF) {
          take("\r\n", batch);
          pos = cr + 2;
        } else {
          take("\r", batch);
          pos = cr + 1;
        }
        cr = buf.indexOf(CR, pos);
        continue;
      }
      add(buf, pos, nl === -1 ? buf.length : nl, nl === -1);
      if (nl === -1) break;
      take("\n", batch);
      pos = nl + 1;
    }
    if (batch.length > 0) yield batch;
  }
  if (crPending && opts.unterminated === "record") {
    const last: SplitLine[] = [];
    take("\r", last);
    yield last;
  } else if (!crPending && length > 0 && opts.unterminated === "record") {
    const last: SplitLine[] = [];
    take("", last);
    yield last;
  }
}

/**
 * The UTF-8 text of at most `maxBytes` bytes of `bytes`, cut back to a
 * character boundary (a cut never leaves half a character behind).
 */
export function utf8Prefix(bytes: Buffer, maxBytes: number): string {
  if (bytes.length <= maxBytes) return bytes.toString("utf8");
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
  let back = 0;
  while (end > 0 && back < 3 && (bytes[end]! & 0xc0) === 0x80) {
    end--;
    back++;
  }
  return bytes.subarray(0, end).toString("utf8");
}
