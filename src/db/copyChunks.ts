/**
 * Groups COPY text lines into chunks of about 64 KiB: pg-copy-streams sends
 * every chunk it is given as its own message (a socket write each), so one
 * write per row would cost more than the rows.
 */
export async function* inChunks(lines: AsyncIterable<string>, chunkChars = 65_536): AsyncGenerator<string> {
  let buffer: string[] = [];
  let size = 0;
  for await (const line of lines) {
    buffer.push(line);
    size += line.length;
    if (size >= chunkChars) {
      yield buffer.join("");
      buffer = [];
      size = 0;
    }
  }
  if (buffer.length > 0) yield buffer.join("");
}
