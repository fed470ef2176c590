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
  constructor(readonly dir: string, detail: string, options?: ErrorOptions) {
    super(`landing folder ${dir} ${detail}`, options);
  }
}
