/** How a CLI command run over several pipelines (`-p all`) reports one pipeline refused and goes on with the others. */

/**
 * Prints the refusal of one pipeline on stderr and raises the exit code, so that
 * `-p all` goes on with the other pipelines and ends with the worst code — the
 * message and code a single-pipeline run gives (src/cli/main.ts):
 * TimeZoneRefusedError (src/guards/timeZone.ts) is a configuration error,
 * `straggler: <message>` and exit 2; PolicyRefusedError (src/guards/policy.ts)
 * and HorizonRefusedError (src/guards/horizon.ts) are `<message>` and exit 1.
 * (The guards are imported here, when a command failed, not when the CLI starts.)
 * @returns false (nothing printed) when `e` is neither refusal: the caller rethrows it
 */
export async function reportRefusal(e: unknown): Promise<boolean> {
  const { PolicyRefusedError, TimeZoneRefusedError, HorizonRefusedError } = await import("../guards/index.js");
  if (e instanceof TimeZoneRefusedError) {
    console.error(`straggler: ${e.message}`);
    worstExit(2);
    return true;
  }
  if (e instanceof PolicyRefusedError || e instanceof HorizonRefusedError) {
    console.error(e.message);
    worstExit(1);
    return true;
  }
  return false;
}

/** Sets the process exit code to `code` unless a worse (higher) one is already set. */
export function worstExit(code: number): void {
  const current = typeof process.exitCode === "number" ? process.exitCode : 0;
  process.exitCode = Math.max(current, code);
}
