/**
 * Pipeline leases: with several replicas (`straggler serve` processes) on one
 * database, each pipeline's owned work — its stream loop, landing folder and
 * log consumer — runs on exactly one replica at a time.
 *
 * The lease of a pipeline is a session-level advisory lock held by the
 * replica's lease connection, a dedicated `pg.Client` (src/db/sql/lifecycle/pipelineLeases.ts).
 * Every `heartbeatMs` (default 1 s) the replica:
 *
 * 1. heartbeats on that connection, reading how many replicas are alive
 *    (`R`, lease connections on this database);
 * 2. releases one pipeline when it owns more than its share `ceil(P / R)`
 *    (a replica that joined gets work), stopping its work first;
 * 3. tries the leases of pipelines it does not own while it owns fewer than
 *    its share, starting at an offset of its own so replicas spread out.
 *
 * Release and takeover, with heartbeat H:
 * - the owner dies (SIGKILL, crash, host gone with its TCP connection reset):
 *   PostgreSQL ends the session, the locks go at once, another replica takes
 *   them at its next heartbeat, within H;
 * - the owner's lease session ends while the process lives (the server
 *   terminated it, restarted, or the connection broke): the owner fences —
 *   it starts no new micro-batch and stops its work — on the connection's
 *   error, or at the latest when a heartbeat fails (sent at most H after the
 *   last good one, failing after at most 2H); it then reconnects and competes
 *   again like a new replica;
 * - the network to the database goes silent (no reset): the lease session is
 *   opened with `idle_session_timeout` = 5H, so the server ends it, and frees
 *   the locks, 5H after the last heartbeat it received; the owner has fenced
 *   by 3H after the last heartbeat it sent, 2H earlier.
 * What one owner has started (a batch in flight on a pooled connection, a
 * replica paused past its lease) does not commit after a takeover: the taker
 * raises the lease's fencing token (epoch) before its work starts, and every
 * commit of owned work checks its own epoch, FOR SHARE, just before COMMIT
 * (src/cluster/fencing.ts). A writer that has passed that check holds the
 * token's row until it commits; the taker waits for it at most one heartbeat
 * (the lease session's `lock_timeout`), then gives the lock back and tries
 * again at its next heartbeat.
 */
import pg from "pg";
import { classifyDbError } from "../db/errors.js";
import {
  countLiveReplicas,
  raiseLeaseEpoch,
  readPipelineOwners,
  releasePipelineLease,
  REPLICA_APPLICATION_PREFIX,
  tryPipelineLease,
} from "../db/sql/lifecycle/pipelineLeases.js";
import type { Logger } from "../log.js";
import { startLoop, type Loop } from "../loop.js";
import { assertLeaseHeld, LeaseLostError, type PipelineLease } from "./fencing.js";

/** Default heartbeat (and takeover poll) of a replica's lease connection, ms. */
const DEFAULT_HEARTBEAT_MS = 1_000;

export interface LeaseHooks {
  /** The replica now owns `pipeline`, under `lease` (its fencing token): start its work. Must not throw. */
  acquired(pipeline: string, lease: PipelineLease): void;
  /** The replica no longer owns (or is about to release) `pipeline`: stop its work; resolves when stopped. Must not reject. */
  lost(pipeline: string): Promise<void>;
}

export interface LeaseOptions {
  /** The replica's id (e.g. `host:pid`), shown as the owner; at most 45 characters. */
  replicaId: string;
  /** Heartbeat and takeover poll, ms. */
  heartbeatMs?: number;
}

/** The rotation of `names` that a replica tries first: an offset from a hash of its id, so replicas start on different pipelines. */
export function preferenceOrder(names: string[], replicaId: string): string[] {
  let h = 0;
  for (const ch of replicaId) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  const sorted = [...names].sort();
  const at = sorted.length === 0 ? 0 : h % sorted.length;
  return [...sorted.slice(at), ...sorted.slice(0, at)];
}

/** The share of `pipelines` one of `replicas` live replicas owns at most: ceil(P / R). */
export const fairShare = (pipelines: number, replicas: number) => Math.ceil(pipelines / Math.max(1, replicas));

export class PipelineLeases {
  private client: pg.Client | undefined;
  /** The pipelines owned now, each with the epoch (fencing token) this replica raised when it took it. */
  private readonly owned = new Map<string, string>();
  /** Work stopping because a commit found its lease taken over (`deposed`). */
  private readonly deposing = new Set<Promise<void>>();
  private readonly heartbeatMs: number;
  /** The heartbeat after the first tick (src/loop.ts): a tick `heartbeatMs` after the previous one ended. */
  private heartbeat: Loop | undefined;
  /** A fence started by the lease connection's error, outside the heartbeat. */
  private fencing: Promise<void> = Promise.resolve();
  private stopped = false;
  private connectFailures = 0;

  constructor(
    private readonly url: string,
    private readonly pipelines: string[],
    private readonly options: LeaseOptions,
    private readonly hooks: LeaseHooks,
    private readonly log: Logger,
  ) {
    this.heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  }

  /** The pipelines this replica owns now. */
  ownedPipelines(): string[] {
    return [...this.owned.keys()].sort();
  }

  /** The lease of `pipeline` as held now (undefined when not owned): its epoch, `owns()` and the fence of its commits. */
  lease(pipeline: string): PipelineLease | undefined {
    const epoch = this.owned.get(pipeline);
    if (epoch === undefined) return undefined;
    return {
      pipeline,
      epoch,
      owns: () => this.owned.get(pipeline) === epoch,
      assertHeld: async (client) => {
        try {
          await assertLeaseHeld(client, pipeline, epoch);
        } catch (e) {
          if (e instanceof LeaseLostError) this.deposed(e);
          throw e;
        }
      },
    };
  }

  /** True while this replica owns `pipeline`: the guard checked before each micro-batch. */
  owns(pipeline: string): boolean {
    return this.owned.has(pipeline);
  }

  /** Connects and takes this replica's share at once, then every heartbeat. Never throws: a database away is retried each heartbeat. */
  async start(): Promise<void> {
    await this.tick();
    if (this.stopped) return;
    // A tick never throws (a database away is retried at the next one).
    this.heartbeat = startLoop(() => this.tick(), {
      intervalMs: this.heartbeatMs,
      immediate: false,
      onError: (e) => this.log.error({ err: e, replica: this.options.replicaId }, "lease heartbeat failed"),
    });
  }

  /** Stops the heartbeat, stops the work of every owned pipeline, releases the leases and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.heartbeat?.stop();
    await this.fencing;
    await Promise.all(this.deposing);
    await this.fence("the replica stops");
  }

  /**
   * A commit of `e.pipeline`'s work found its epoch taken over (fencing.ts) and rolled back: logged
   * each time. When this replica still believed it owned the pipeline under that epoch (it had not
   * noticed: a pause, a lease connection not yet seen failing), the work stops — not awaited here,
   * the caller is that work.
   */
  private deposed(e: LeaseLostError): void {
    const believed = this.owned.get(e.pipeline) === e.epoch;
    this.log.error(
      { replica: this.options.replicaId, pipeline: e.pipeline, epoch: e.epoch, current: e.current },
      `lease lost: ${e.message}${believed ? "; this replica stops the pipeline's work" : ""}`,
    );
    if (!believed) return;
    this.owned.delete(e.pipeline); // no new unit of work starts from here on
    const stopping: Promise<void> = this.hooks.lost(e.pipeline).finally(() => this.deposing.delete(stopping));
    this.deposing.add(stopping);
  }

  /** Stops the work of every owned pipeline, then closes the lease connection (which frees the locks still held). */
  private async fence(why: string): Promise<void> {
    const owned = this.ownedPipelines();
    const c = this.client;
    this.owned.clear(); // first: no new micro-batch starts from here on
    this.client = undefined;
    if (owned.length > 0)
      this.log.warn({ replica: this.options.replicaId, pipelines: owned }, `leases given up: ${why}; their work stops`);
    await Promise.all(owned.map((p) => this.hooks.lost(p)));
    // Closing the session frees the locks it still holds; only once the work has stopped.
    if (c) await this.close(c);
  }

  /**
   * Ends `c`, waiting at most two heartbeats: over a network gone silent the
   * goodbye is never answered, so the socket is then destroyed (the server
   * ends that session itself, `idle_session_timeout`).
   */
  private async close(c: pg.Client): Promise<void> {
    const ended = c.end().then(
      () => true,
      () => true,
    );
    const timer = new Promise<false>((resolve) => setTimeout(() => resolve(false), 2 * this.heartbeatMs).unref());
    // pg.Client has no public destroy(): its socket is `connection.stream`.
    if (!(await Promise.race([ended, timer])))
      (c as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  }

  private async connect(): Promise<pg.Client> {
    const c = new pg.Client({
      connectionString: this.url,
      application_name: `${REPLICA_APPLICATION_PREFIX}${this.options.replicaId}`,
      query_timeout: 2 * this.heartbeatMs,
      connectionTimeoutMillis: Math.max(5_000, 2 * this.heartbeatMs),
      // The server ends a silent lease session (network gone without a reset), and frees its locks, 5 heartbeats after the last one.
      // A taking waits at most one heartbeat for a deposed owner's writer to commit (raiseLeaseEpoch).
      options: `-c idle_session_timeout=${5 * this.heartbeatMs} -c lock_timeout=${this.heartbeatMs}`,
    });
    // The session is gone or going: PostgreSQL frees its locks, so the work stops now, before another replica takes it.
    const gone = (why: string) => {
      if (this.client === c) this.fencing = this.fence(why);
    };
    c.on("error", (e) => gone(`the lease connection failed (${e.message})`));
    c.on("end", () => gone("the lease connection ended"));
    await c.connect();
    return c;
  }

  /**
   * Raises the fencing token of `pipeline`, whose lock this session just took. A writer of the
   * previous owner still committing holds the token's row: after `lock_timeout` (one heartbeat)
   * the lock is given back and taken again at a later heartbeat.
   * @returns the new epoch; undefined when the lock was given back
   * @throws the database's other errors (the heartbeat fails)
   */
  private async raiseEpoch(client: pg.Client, pipeline: string): Promise<string | undefined> {
    try {
      return await raiseLeaseEpoch(client, pipeline, this.options.replicaId);
    } catch (e) {
      if (classifyDbError(e) !== "lock_not_available") throw e;
      await releasePipelineLease(client, pipeline);
      this.log.info(
        { replica: this.options.replicaId, pipeline },
        "lease not taken: a commit of the previous owner still holds its fencing token; tried again next heartbeat",
      );
      return undefined;
    }
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      if (!this.client) {
        this.client = await this.connect().catch((e: unknown) => {
          if (this.connectFailures++ === 0)
            this.log.warn(
              { err: (e as Error).message },
              "lease connection failed; no pipeline is owned by this replica until it connects (retried every heartbeat)",
            );
          return undefined;
        });
        if (!this.client) return;
        if (this.connectFailures > 0) this.log.info("lease connection back");
        this.connectFailures = 0;
      }
      const client = this.client;
      const share = fairShare(this.pipelines.length, await countLiveReplicas(client));
      if (this.owned.size > share) {
        const surplus = this.ownedPipelines().at(-1)!;
        this.owned.delete(surplus);
        await this.hooks.lost(surplus);
        if (this.client !== client) return; // fenced meanwhile: the session, and its lock, are gone
        await releasePipelineLease(client, surplus);
        this.log.info(
          { replica: this.options.replicaId, pipeline: surplus, share },
          "lease released: this replica owned more than its share",
        );
        return;
      }
      for (const pipeline of preferenceOrder(this.pipelines, this.options.replicaId)) {
        if (this.owned.size >= share || this.stopped) break;
        if (this.owned.has(pipeline) || !(await tryPipelineLease(client, pipeline))) continue;
        if (this.client !== client) return; // the session failed meanwhile (fenced): the lock went with it
        const epoch = await this.raiseEpoch(client, pipeline);
        if (this.client !== client) return; // as above
        if (epoch === undefined) continue;
        this.owned.set(pipeline, epoch);
        this.log.info(
          { replica: this.options.replicaId, pipeline, epoch },
          "lease taken: this replica owns the pipeline",
        );
        this.hooks.acquired(pipeline, this.lease(pipeline)!);
      }
    } catch (e) {
      // A heartbeat that failed or timed out: the lease session may be gone, so the work stops now.
      if (this.client) await this.fence(`the heartbeat failed (${(e as Error).message})`);
    }
  }
}

{
  readPipelineOwners;
}
