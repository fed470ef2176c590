/**
 * A byte-level line splitter with a bounded buffer: the input's lines as
 * bytes, split on `\n` with `Buffer.indexOf`; `\r\n` and a lone `\r` end a
 * line too (as Node's readline reads them).
 *
 * A line longer than `maxBytes` is never held whole: the splitter keeps its
 * first `maxBytes` bytes (for the quarantine row), counts and drops the rest
 * up to the next newline, and yields the line with `tooLong: true`. What it
 * holds between input chunks is therefore at most `maxBytes` bytes, whatever
 * the input (a 1 GB line costs no more memory than a 1 MiB one).
 *
 * A final line without its newline is yielded with `terminated: false` when
 * `unterminated` is `"record"`, and held back (not yielded) when it is
 * `"hold"` (append-only files: the line may still be being written).
 */

export interface SplitLine {
  /** The line's bytes without its newline (and trailing `\r`); at most `maxBytes` of them. */
  bytes: Buffer;
  /** 1-based physical line number (counting from `firstLine`). */
  line: number;
  /** The line was longer than `maxBytes`: `bytes` holds its start only. */
  tooLong: boolean;
  /** Length of the whole line in bytes, newline excluded (a trailing `\r` included). */
  length: number;
  /** The line ended with a newline. */
  terminated: boolean;
  /** Byte offset in the input just after this line (and its newline), counting from `startOffset`. */
  endOffset: number;
}

export interface SplitOptions {
  /** Longest line kept whole, bytes. */
  maxBytes: number;
  /** A final line without a newline: yielded (`record`) or held back (`hold`). */
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
 * @param input chunks of bytes (strings are read as UTF-8)
 * @returns an async iterable of the lines completed by each input chunk (one
 *   array per chunk, never empty: one await per chunk, not per line), in order;
 *   never throws by itself (errors of `input` pass through)
 */
export async function* splitLines(input: AsyncIterable<Buffer | string>, opts: SplitOptions): AsyncGenerator<SplitLine[]> {
  const max = opts.maxBytes;
  let parts: Buffer[] = [];
  let kept = 0; // bytes held in parts (<= max)
  let length = 0; // bytes of the current line so far, dropped ones included
  let offset = opts.startOffset ?? 0; // offset of the current line's first byte
  let line = opts.firstLine ?? 1;

  // The line(s) held so far, onto `out`. A lone CR (old Mac line ending) also ends a
  // line: a line is split at each CR not followed by LF (rare: found with one indexOf).
  const take = (terminated: boolean, out: SplitLine[]): void => {
    let bytes = parts.length === 1 ? parts[0]! : parts.length === 0 ? EMPTY : Buffer.concat(parts, kept);
    const tooLong = length > max;
    if (!tooLong) {
      let cr = bytes.indexOf(CR);
      while (cr !== -1 && cr < bytes.length - 1) {
        out.push({ bytes: bytes.subarray(0, cr), line: line++, tooLong: false, length: cr, terminated: true, endOffset: offset + cr + 1 });
        offset += cr + 1;
        bytes = bytes.subarray(cr + 1);
        cr = bytes.indexOf(CR);
      }
      length = bytes.length;
    }
    const end = offset + length + (terminated ? 1 : 0);
    if (!tooLong && bytes.length > 0 && bytes[bytes.length - 1] === CR) bytes = bytes.subarray(0, bytes.length - 1);
    out.push({ bytes, line: line++, tooLong, length, terminated, endOffset: end });
    offset = end;
    parts = [];
    kept = 0;
    length = 0;
  };

  for await (const chunk of input) {
    const buf = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    opts.onChunk?.(buf);
    const batch: SplitLine[] = [];
    let pos = 0;
    while (pos < buf.length) {
      const nl = buf.indexOf(LF, pos);
      const end = nl === -1 ? buf.length : nl;
      const piece = end - pos;
      if (kept < max && piece > 0) {
        const n = Math.min(piece, max - kept);
        // A piece carried over to the next chunk is copied, so it does not pin the whole chunk.
        parts.push(nl === -1 ? Buffer.from(buf.subarray(pos, pos + n)) : buf.subarray(pos, pos + n));
        kept += n;
      }
      length += piece;
      if (nl === -1) break;
      take(true, batch);
      pos = nl + 1;
    }
    if (batch.length > 0) yield batch;
  }
  if (length > 0 && opts.unterminated === "record") {
    const last: SplitLine[] = [];
    take(false, last);
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
