/**
 * A source's encoding judged from its first bytes: records are read as UTF-8, and a UTF-16 or UTF-32
 * source (with or without a byte order mark) is refused whole with the way to convert it.
 */
/**
 * Why a source's first bytes say it is not UTF-8, or undefined: a UTF-16 or
 * UTF-32 byte order mark (spreadsheet "Unicode text" exports, PowerShell's
 * `>` redirection), or, without a mark, NUL bytes in the pattern of UTF-16 or
 * UTF-32 text in the first four bytes (RFC 4627 §3's detection). Read as UTF-8 every line of such a file would be
 * MALFORMED for a NUL or invalid UTF-8, which names the symptom, not the cause.
 */
export function notUtf8(first: Buffer): string | undefined {
  const hex = (n: number) =>
    [...first.subarray(0, n)].map((b) => b.toString(16).toUpperCase().padStart(2, "0")).join(" ");
  const says = (name: string, n: number) =>
    `${name} text (byte order mark ${hex(n)}): records are read as UTF-8; convert it (e.g. iconv -f ${name} -t UTF-8)`;
  if (first.length >= 4 && first[0] === 0xff && first[1] === 0xfe && first[2] === 0 && first[3] === 0)
    return says("UTF-32", 4);
  if (first.length >= 4 && first[0] === 0 && first[1] === 0 && first[2] === 0xfe && first[3] === 0xff)
    return says("UTF-32", 4);
  if (first.length >= 2 && ((first[0] === 0xff && first[1] === 0xfe) || (first[0] === 0xfe && first[1] === 0xff)))
    return says("UTF-16", 2);
  // No byte order mark: the pattern of NUL bytes in the first four (RFC 4627 §3: a JSON text starts with two
  // ASCII characters, so 00 00 00 xx is UTF-32BE, 00 xx 00 xx UTF-16BE, xx 00 00 00 UTF-32LE, xx 00 xx 00 UTF-16LE;
  // a CSV header starts with ASCII as well). UTF-8 text never holds a NUL: read as UTF-8, every line would be MALFORMED.
  if (first.length >= 4) {
    const [a, b, c, d] = [first[0] === 0, first[1] === 0, first[2] === 0, first[3] === 0];
    const name =
      a && b && c && !d
        ? "UTF-32BE"
        : a && !b && c && !d
          ? "UTF-16BE"
          : !a && b && c && d
            ? "UTF-32LE"
            : !a && b && !c && d
              ? "UTF-16LE"
              : undefined;
    if (name !== undefined)
      return `${name} text (no byte order mark; its first bytes ${hex(4)}): records are read as UTF-8; convert it (e.g. iconv -f ${name} -t UTF-8)`;
  }
  return undefined;
}
