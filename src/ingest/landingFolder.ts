/**
 * A landing pass over a pipeline's landing folder. Each file is its own
 * source, and one bad file never blocks another:
 *
 * - a file lands once it has been quiet for `source.settle` (its
 *   modification time at least that long ago); until then it is
 *   `waiting_to_settle`;
 * - a file that cannot be landed (unreadable, a bad CSV header, not a regular
 *   file) is `refused` with its reason, logged once, and tried again only when
 *   its size or modification time, or the pipeline's source or fields config,
 *   changes;
 * - a landed file whose size or modification time changes is hashed; when its
 *   bytes differ it is `changed_after_landing`, logged once, and not landed
 *   again. With `source.appendOnly`, a file that grows lands its new complete
 *   lines instead (no settle period: a line without its newline waits for
 *   it), and a file that shrinks is `changed_after_landing`;
 * - a database error on one file is logged with its name and the pass goes
 *   on; the pass then throws, so the caller backs off.
 *
 * Under a replica's lease every write of the pass is fenced
 * (src/cluster/fencing.ts): a landing ends with the fence in its own
 * transaction, and so does each record of a file's state (waiting, refused,
 * changed, touched, adopted). A deposed owner writes none of them
 * (LeaseLostError) and the pass stops there.
 *
 * Which entries of the folder a pass considers is src/ingest/landingEntries.ts's; what it does with
 * each file, src/ingest/landingDecision.ts's.
 */
import { lstat } from "node:fs/promises";
import path from "node:path";
import type { PipelineConfig } from "../config/pipelines.js";
import { LeaseLostError, type PipelineLease } from "../cluster/fencing.js";
import { withTransaction, type Pool, type Queryable } from "../db/pool.js";
import type { Logger } from "../log.js";
import type { LandResult } from "./landAnswer.js";
import { SourceRefused } from "./errors.js";
import { decideLanding } from "./landingDecision.js";
import { inputOfEntry, scanLandingDir } from "./landingEntries.js";
import { fileChunks, fileKind, hashFile, landOpenFile, openSourceFile } from "./landFile.js";
import {
  markSourceFile,
  readSourceFiles,
  recordFileLanding,
  sourceConfigHash,
  type SourceFileRecord,
} from "./sourceFiles.js";

export interface LandingPass {
  landed: LandResult[];
  refused: { name: string; reason: string }[];
  waiting: string[];
  changed: string[];
  /** Files landed before and unchanged: nothing to do. */
  unchanged: string[];
  /** Files whose landing failed for another reason (the database): tried again next pass. */
  failed: { name: string; error: string }[];
}

export interface LandingPassOptions {
  log?: Logger;
  /** The clock, epoch ms (tests). */
  nowMs?: () => number;
  /** The pipeline's lease (a replica): each landing and each record of a file's state ends with its fence, and the pass stops once it is lost (src/cluster/fencing.ts). */
  lease?: Pick<PipelineLease, "owns" | "assertHeld">;
}

/** True when `file` holds a line end (LF, or a CR: CR-only line ends) at or after `offset`. */
async function hasNewlineAfter(file: string, offset: number): Promise<boolean> {
  const opened = await openSourceFile(file, true);
  if (opened === null) return false;
  try {
    for await (const chunk of fileChunks(opened.fh, offset))
      if (chunk.includes(0x0a) || chunk.includes(0x0d)) return true;
    return false;
  } finally {
    await opened.fh.close();
  }
}

/**
 * Lands every file of the pipeline's landing folder that is new, settled, or
 * (append-only) has grown, in name order; records and logs (once) every
 * refused, changed and waiting file.
 * @throws LandingDirMissing; LeaseLostError when `opts.lease` is no longer held (that write rolled back, the pass stops); an Error after the pass when a file failed for another reason than itself
 */
export async function landPendingFiles(
  pool: Pool,
  pipeline: PipelineConfig,
  opts: LandingPassOptions = {},
): Promise<LandingPass> {
  const entries = await scanLandingDir(pipeline);
  const known = await readSourceFiles(pool, pipeline.name);
  const pass: LandingPass = { landed: [], refused: [], waiting: [], changed: [], unchanged: [], failed: [] };
  const log = opts.log?.child({ pipeline: pipeline.name });
  const rules = {
    appendOnly: pipeline.source.appendOnly,
    settleMs: pipeline.source.settle,
    configHash: sourceConfigHash(pipeline),
  };
  const now = opts.nowMs ?? Date.now;
  const lease = opts.lease;
  /** A write of a file's record: under a lease, in a transaction of its own ending with the fence (nothing written when the lease is lost); without one, a statement of its own. */
  const record = (write: (client: Queryable) => Promise<void>): Promise<void> =>
    lease === undefined
      ? write(pool)
      : withTransaction(pool, async (client) => {
          await write(client);
          await lease.assertHeld(client); // fencing: a deposed owner records nothing (LeaseLostError rolls it back)
        });
  const mark = (
    name: string,
    state: Parameters<typeof markSourceFile>[3],
    facts: { sizeBytes: number; mtimeMs: number },
    reason: string | null = null,
  ) => record((client) => markSourceFile(client, pipeline, name, state, facts, reason));
  const leaseLost = (e: unknown) => e instanceof LeaseLostError || lease?.owns() === false;

  const refuse = async (name: string, reason: string, facts: { sizeBytes: number; mtimeMs: number }) => {
    await mark(name, "refused", facts, reason);
    pass.refused.push({ name, reason });
    log?.warn({ file: name, reason }, `file ${name} refused: ${reason}`);
  };

  for (const entry of entries) {
    const name = entry.name;
    const file = path.join(pipeline.source.landingDir!, name); // entries exist only when the folder does
    try {
      const st = await lstat(file).catch((e: NodeJS.ErrnoException) =>
        e.code === "ENOENT" ? null : Promise.reject(e),
      );
      if (st === null) continue; // gone since the listing
      const row = known.get(name);
      const facts = { sizeBytes: st.size, mtimeMs: st.mtimeMs };
      const regular = entry.regular && st.isFile();
      const decision = decideLanding(
        { regular, refusal: regular ? undefined : (entry.refusal ?? `not a regular file: ${fileKind(st)}`), ...facts },
        row,
        rules,
        now(),
      );
      switch (decision.do) {
        case "skip":
        case "unchanged":
          if (decision.do === "unchanged") pass.unchanged.push(name);
          break;
        case "refuse":
          if (decision.record) await refuse(name, decision.reason, facts);
          break;
        case "keepChanged":
          if (decision.record) await mark(name, "changed_after_landing", facts, row!.reason);
          break;
        case "landAppended":
          if (await hasNewlineAfter(file, row!.landedBytes)) await landOne(name, file, row);
          break;
        case "shrank":
          await changed(name, facts, `shrank from ${decision.landedBytes} landed bytes to ${st.size} bytes`);
          break;
        case "checkLanded":
          await checkLanded(name, file, row!, facts);
          break;
        case "wait":
          if (decision.record)
            await mark(name, "waiting_to_settle", facts, decision.empty ? "empty: waits for content" : null);
          if (decision.log) log?.info({ file: name, settleMs: pipeline.source.settle }, `file ${name} waits to settle`);
          pass.waiting.push(name);
          break;
        case "land":
          if (!decision.needsLine || (await hasNewlineAfter(file, 0))) await landOne(name, file, undefined);
          break;
      }
    } catch (e) {
      if (leaseLost(e)) throw e; // the lease is lost (a fenced landing or record rolled back): the pass stops here
      if (e instanceof SourceRefused) {
        const st = await lstat(file).catch(() => undefined);
        await refuse(name, e.message, { sizeBytes: st?.size ?? 0, mtimeMs: st?.mtimeMs ?? 0 }).catch((err) => {
          if (leaseLost(err)) throw err;
          pass.failed.push({ name, error: (err as Error).message });
        });
      } else {
        pass.failed.push({ name, error: (e as Error).message });
        log?.error({ file: name, err: e }, `landing ${name} failed; tried again next pass`);
      }
    }
  }
  if (pass.failed.length > 0)
    throw Object.assign(
      new Error(`landing failed for ${pass.failed.map((f) => `${f.name} (${f.error})`).join(", ")}`),
      { pass },
    );
  return pass;

  async function landOne(name: string, file: string, continueFrom: SourceFileRecord | undefined): Promise<void> {
    const opened = await openSourceFile(file, true);
    if (opened === null) return;
    try {
      const input = inputOfEntry(name);
      const r = await landOpenFile(pool, pipeline, opened.fh, opened.st, name, {
        continueFrom,
        ...(input === undefined ? {} : { input }),
        ...(opts.lease ? { fence: opts.lease.assertHeld } : {}),
      });
      if (r.alreadyLanded) {
        // Landed before this record of files existed (or by a replay): adopt it as it is now.
        const h = await hashFile(opened.fh);
        await record((client) =>
          recordFileLanding(
            client,
            pipeline,
            name,
            {
              sizeBytes: opened.st.size,
              mtimeMs: opened.st.mtimeMs,
              sha256: h.sha256,
              landedBytes: h.bytes,
              landedLines: h.lines,
            },
            r,
          ),
        );
        return;
      }
      pass.landed.push(r);
      log?.info(
        { file: name, source: r.source, landed: r.landed, accepted: r.accepted, quarantined: r.quarantined },
        "file landed",
      );
    } finally {
      await opened.fh.close();
    }
  }

  async function changed(name: string, facts: { sizeBytes: number; mtimeMs: number }, how: string): Promise<void> {
    const reason = `changed after landing: ${how}; not landed again`;
    await mark(name, "changed_after_landing", facts, reason);
    pass.changed.push(name);
    log?.warn({ file: name, reason }, `file ${name} ${reason}`);
  }

  async function checkLanded(
    name: string,
    file: string,
    row: SourceFileRecord,
    facts: { sizeBytes: number; mtimeMs: number },
  ): Promise<void> {
    const opened = await openSourceFile(file, true);
    if (opened === null) return;
    try {
      const h = await hashFile(opened.fh);
      if (h.sha256 === row.sha256) {
        await mark(name, "landed", facts); // touched, same bytes
        pass.unchanged.push(name);
      } else
        await changed(
          name,
          facts,
          `size ${row.sizeBytes} -> ${h.bytes} bytes, SHA-256 ${String(row.sha256).slice(0, 12)}… -> ${h.sha256.slice(0, 12)}…`,
        );
    } finally {
      await opened.fh.close();
    }
  }
}
