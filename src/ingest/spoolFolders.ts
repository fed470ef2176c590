/**
 * Temporary spool folders: where a large HTTP body (`straggler-body-…`,
 * src/http/body.ts) or stdin (`straggler-spool-…`, landStream in
 * src/ingest/landFile.ts) is written before it lands. Each is removed when
 * its landing ends, but a process killed meanwhile (SIGKILL, OOM, power)
 * leaves its folder behind, with up to a whole body in it; a service killed
 * again and again would fill the temporary folder. `sweepStaleSpools` runs
 * when the service starts and removes such leftovers.
 *
 * A folder's name carries the id of the process that made it
 * (`straggler-body-<pid>-XXXXXX`), so the sweep removes only folders
 *   - named by this module's prefixes (nothing else in the folder is touched),
 *   - whose own modification time and every entry's are older than `maxAgeMs`
 *     (default 1 hour), and
 *   - whose process is gone (another replica on the same machine may be
 *     reading a body right now). A name without a process id (written by an
 *     earlier release) is judged by its age alone.
 * A spool folder lives for one request or one stdin landing; the data in a
 * removed one was never acknowledged (the answer comes after COMMIT), so its
 * client sends it again.
 */
import { lstat, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";

/** Prefix of a spool folder made by process `pid` for `kind` (`body`: an HTTP body; `spool`: stdin), for `mkdtemp`. */
export function spoolPrefix(kind: "body" | "spool", pid = process.pid): string {
  return path.join(tmpdir(), `straggler-${kind}-${pid}-`);
}

/** Spool folder names: `straggler-body-` or `straggler-spool-`, an optional `<pid>-`, then mkdtemp's 6 characters. */
const SPOOL_NAME = /^straggler-(?:body|spool)-(?:(\d+)-)?[A-Za-z0-9]{6}$/;

/** Default age past which a leftover spool folder is removed, ms (1 hour). */
export const STALE_SPOOL_MS = 3_600_000;

/** True when a process with id `pid` exists (signal 0 checks without sending anything). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // exists, owned by another user
  }
}

/** Newest modification time of `dir` and its entries, epoch ms; undefined when it is not a folder (or vanished). */
async function newestChange(dir: string): Promise<number | undefined> {
  try {
    const st = await lstat(dir);
    if (!st.isDirectory()) return undefined;
    let newest = st.mtimeMs;
    for (const name of await readdir(dir)) {
      const e = await lstat(path.join(dir, name)).catch(() => undefined);
      if (e !== undefined) newest = Math.max(newest, e.mtimeMs);
    }
    return newest;
  } catch {
    return undefined;
  }
}

export interface SweepOptions {
  /** Folder to sweep (default `os.tmpdir()`). */
  dir?: string;
  /** Age past which a folder is stale, ms (default `STALE_SPOOL_MS`). */
  maxAgeMs?: number;
  /** Now, epoch ms (default `Date.now()`). */
  nowMs?: number;
  /** Whether a process id is alive (default: signal 0). */
  alive?: (pid: number) => boolean;
}

/**
 * Removes stale spool folders left by processes that ended without removing them.
 * @returns the names of the folders removed (never throws: a folder that cannot be read or removed is left)
 */
export async function sweepStaleSpools(opts: SweepOptions = {}): Promise<string[]> {
  const dir = opts.dir ?? tmpdir();
  const maxAge = opts.maxAgeMs ?? STALE_SPOOL_MS;
  const now = opts.nowMs ?? Date.now();
  const alive = opts.alive ?? processAlive;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = SPOOL_NAME.exec(name);
    if (m === null) continue;
    const pid = m[1] === undefined ? undefined : Number(m[1]);
    if (pid !== undefined && (pid === process.pid || alive(pid))) continue;
    const full = path.join(dir, name);
    const changed = await newestChange(full);
    if (changed === undefined || now - changed < maxAge) continue;
    try {
      await rm(full, { recursive: true, force: true });
      removed.push(name);
    } catch {
      // left for the next start
    }
  }
  return removed;
}
