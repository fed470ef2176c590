/**
 * Errors that belong to one source (a file, a request body), not to the
 * process: the source is refused with the message as its reason, and every
 * other source goes on.
 */

/** A source that cannot be landed as it is (unreadable, a bad CSV header, not a regular file). The message is its reason; `cause` the file system's error, when there was one. */
export class SourceRefused extends Error {
  override name = "SourceRefused";
}

/** A pipeline's landing folder does not exist (or is not a folder). `cause`: the file system's error, when there was one. */
export class LandingDirMissing extends Error {
  override name = "LandingDirMissing";
  constructor(
    readonly dir: string,
    detail: string,
    options?: ErrorOptions,
  ) {
    super(`landing folder ${dir} ${detail}`, options);
  }
}

/**
 * A named file refused because a different file (other bytes) under the same name has already landed: a file
 * source is known by its name (`landed_sources`, `source_files`), so landing it would be skipped as already
 * landed and its events would never land. Nothing is landed or recorded; the landed file's record stays.
 */
export class SourceNameTaken extends SourceRefused {
  override name = "SourceNameTaken";
  constructor(
    file: string,
    sourceName: string,
    landed: { sizeBytes: number | null; sha256: string },
    these: { bytes: number; sha256: string },
  ) {
    super(
      `a different file named ${sourceName} has already landed (${landed.sizeBytes ?? "?"} bytes, SHA-256 ${landed.sha256.slice(0, 12)}…; ` +
        `${file} has ${these.bytes} bytes, SHA-256 ${these.sha256.slice(0, 12)}…): nothing was landed. A file source is known by its name: ` +
        `give this file a name of its own (e.g. a date in it) and land it again`,
    );
  }
}
