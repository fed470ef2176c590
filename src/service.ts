/**
 * The service (`npm start`): REST API, one stream loop per owned pipeline
 * (woken by LISTEN/NOTIFY when rows land), scheduled corrections, graceful
 * stop on SIGINT/SIGTERM. Several services (replicas) may run on one
 * database: each pipeline's owned work runs on the replica holding its lease
 * (src/cluster/leases.ts); HTTP ingest and reads work on every replica.
 * The LISTEN session that wakes them is src/listenSession.ts.
 */
import type { Server } from "node:http";
import { hostname } from "node:os";
import type { Env } from "./config/env.js";
import type { PipelineConfig } from "./config/pipelines.js";
import type { Database } from "./db/open.js";
import { sweepExpiredRuns } from "./correction/runLease.js";
import { logPolicyAdopted, scheduleCorrections } from "./correction/schedule.js";
import { scheduleReconciles } from "./correction/reconcileSchedule.js";
import { createPool } from "./db/pool.js";
import { LeaseLostError } from "./cluster/fencing.js";
import { PipelineLeases } from "./cluster/leases.js";
import { OwnedWork, type OwnedTaskStarter } from "./cluster/ownedWork.js";
import { createApp } from "./app.js";
import { answerClientErrors } from "./http/errors.js";
import { appendQueuesIdle } from "./ingest/appendLock.js";
import { endChangeStreams, wakeChangeStreams } from "./http/feedRoutes.js";
import { LandingDirMissing } from "./ingest/errors.js";
import { landPendingFiles } from "./ingest/landingFolder.js";
import { sweepStaleSpools } from "./ingest/spoolFolders.js";
import type { Logger } from "./log.js";
import { startAlerts } from "./observe/alerts.js";
import { runBatch } from "./stream/runBatch.js";
import { logConsumerStarter } from "./sources/logConsumer.js";
import { analyzeIfStale } from "./db/statistics.js";
import { statisticsRefresher } from "./db/statisticsRefresh.js";
import { startRetention } from "./retention/schedule.js";
import { StreamLoop } from "./stream/streamLoop.js";
import { appendQueueTail } from "./ingest/appendLock.js";
import { listenForLandings } from "./listenSession.js";

/** The shortest time between two statistics refreshes of one pipeline after its catch-ups, ms. */
const STATISTICS_EVERY_MS = 10_000;

export interface Service {
  port: number;
  stop(): Promise<void>;
}

/** This replica's id: `STRAGGLER_REPLICA_ID`, else `host:pid` (the host name cut to fit 45 characters). */
export function replicaIdOf(env: Pick<Env, "STRAGGLER_REPLICA_ID">): string {
  if (env.STRAGGLER_REPLICA_ID) return env.STRAGGLER_REPLICA_ID;
  const pid = `:${process.pid}`;
  return hostname().slice(0, 45 - pid.length) + pid;
}

/** A read's longest wait for a read connection, ms: over it, 503 `busy`. */
const READ_ACQUIRE_TIMEOUT_MS = 2_000;

/** `/health`'s longest wait for a connection of its own, ms: over it, the database counts as unreachable. */
const HEALTH_TIMEOUT_MS = 2_000;

/**
 * Starts listening on `port` (0: any free port).
 * @throws Error naming the port and the reason (e.g. `port 8080 is already in use (EADDRINUSE)`) when it cannot listen
 */
function listen(app: ReturnType<typeof createApp>, port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = app.listen(port);
    answerClientErrors(s); // a request Node's parser refuses (431 for a 100 KB query string) gets a JSON message too
    s.once("listening", () => resolve(s));
    s.once("error", (e: NodeJS.ErrnoException) => {
      const why =
        e.code === "EADDRINUSE"
          ? "is already in use"
          : e.code === "EACCES"
            ? "needs privileges this process does not have"
            : `cannot be listened on: ${e.message}`;
      reject(new Error(`port ${port} ${why}${e.code ? ` (${e.code})` : ""}`));
    });
  });
}

/**
 * Starts the service: listens on `env.PORT`, then starts a stream loop per
 * pipeline, the LISTEN connection and the correction schedule.
 * @throws Error when the port cannot be listened on (nothing is left running then)
 */
export async function startService(env: Env, db: Database, pipelines: PipelineConfig[], log: Logger): Promise<Service> {
  // Listen first: a port that cannot be had stops start-up before anything else runs.
  // /health gets connections of its own, so it answers while every pooled one is busy.
  const healthPool = createPool(db.url, 2, HEALTH_TIMEOUT_MS);
  // Reads get connections of their own, each query bounded by the read timeout (src/http/readBudget.ts).
  const readPool = createPool(
    db.url,
    env.STRAGGLER_READ_CONNECTIONS,
    READ_ACQUIRE_TIMEOUT_MS,
    env.STRAGGLER_READ_TIMEOUT,
  );
  const app = createApp({
    pool: db.pool,
    healthPool,
    readPool,
    readConcurrency: env.STRAGGLER_READ_CONCURRENCY,
    readToken: env.STRAGGLER_READ_TOKEN,
    pipelines,
    log,
    token: env.STRAGGLER_API_TOKEN,
    groupCommit: env.STRAGGLER_GROUP_COMMIT !== "off",
  });
  let server: Server;
  try {
    server = await listen(app, env.PORT);
  } catch (e) {
    await Promise.all([healthPool.end(), readPool.end()]);
    throw e;
  }
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : env.PORT;
  // Spool folders of bodies and stdin landings whose process was killed before it removed them.
  const swept = await sweepStaleSpools();
  if (swept.length > 0)
    log.info(
      { removed: swept.length, folders: swept.slice(0, 20) },
      "removed stale spool folders left by ended processes",
    );
  const loops = new Map<string, StreamLoop>();
  // Statistics refreshes run beside the stream after its catch-ups, at most once every 10 s a pipeline
  // (src/db/statisticsRefresh.ts): an ANALYZE of a large bronze takes up to a second, which a
  // waiting micro-batch would add to the freshness of every event behind it.
  const statistics = statisticsRefresher(
    (pipeline) =>
      analyzeIfStale(db.pool, pipeline).then(
        () => undefined,
        (e) =>
          log.warn(
            { pipeline, err: (e as Error).message },
            "statistics refresh failed; retried after the next catch-up",
          ),
      ),
    STATISTICS_EVERY_MS,
  );
  // The stream loop of an owned pipeline, with its landing folder. A loop whose
  // lease is lost starts no new micro-batch (`owns()`), then stops; a batch or a
  // landing it had in flight rolls back at its fence (LeaseLostError, logged by the lease).
  const streamLoop: OwnedTaskStarter = (pipeline, lease) => {
    const owns = lease.owns;
    const fenced = (e: unknown) => e instanceof LeaseLostError && !owns();
    // A missing landing folder is reported once (and again once it has come back and gone).
    let dirMissing = false;
    const loop = new StreamLoop(pipeline, {
      landingInFlight: () => appendQueueTail(db.pool, pipeline.name),
      landPending: async () => {
        if (pipeline.source.landingDir === undefined || !owns()) return;
        try {
          await landPendingFiles(db.pool, pipeline, { log, lease });
          dirMissing = false;
        } catch (e) {
          if (fenced(e)) return;
          if (!(e instanceof LandingDirMissing)) throw e;
          if (!dirMissing)
            log.warn(
              { pipeline: pipeline.name, landingDir: e.dir },
              `pipeline ${pipeline.name}: ${e.message}; no files land until it exists`,
            );
          dirMissing = true;
        }
      },
      runBatch: async (trigger) =>
        owns()
          ? runBatch(db.pool, pipeline, trigger, { lease, onPolicyAdopted: (a) => logPolicyAdopted(log, a) }).catch(
              (e: unknown) => (fenced(e) ? null : Promise.reject(e)),
            )
          : null,
      afterCaughtUp: async () => statistics.request(pipeline.name),
      log,
    });
    loops.set(pipeline.name, loop);
    loop.start();
    return {
      stop: async () => {
        if (loops.get(pipeline.name) === loop) loops.delete(pipeline.name);
        await loop.stop();
      },
    };
  };
  // Each kind of owned work: the stream loop, and a log source's consumer (source.nats).
  const ownedStarters: OwnedTaskStarter[] = [streamLoop, await logConsumerStarter(db.pool, pipelines, log)];
  const replicaId = replicaIdOf(env);
  const work = new OwnedWork(pipelines, ownedStarters, log);
  const leases = new PipelineLeases(
    db.url,
    pipelines.map((p) => p.name),
    { replicaId, heartbeatMs: env.STRAGGLER_LEASE_HEARTBEAT },
    { acquired: (name, lease) => work.start(name, lease), lost: (name) => work.stop(name) },
    log,
  );
  await leases.start();
  const stopListening = listenForLandings(
    db.url,
    (name) => loops.get(name)?.wake(),
    () => loops.forEach((l) => l.wake()),
    log,
    wakeChangeStreams,
  );
  // Correction runs a previous process left behind: abandoned once their lease has expired.
  await sweepExpiredRuns(db.pool).then(
    (ids) =>
      ids.length > 0 &&
      log.warn(
        { runIds: ids },
        "correction runs marked abandoned: their lease expired (the process running them stopped or lost the database)",
      ),
    (e) =>
      log.warn(
        { err: (e as Error).message },
        "could not sweep abandoned correction runs; the next run of each pipeline does",
      ),
  );
  const schedule = scheduleCorrections(db.pool, pipelines, log);
  const reconciles = scheduleReconciles(db.pool, pipelines, log);
  // Alerts are judged by each pipeline's owner only: one judgement per pipeline across the replicas.
  const stopAlerts = startAlerts(db.pool, pipelines, log, { owns: (name) => leases.owns(name) });
  const retention = startRetention(db.pool, pipelines, log);
  log.info(
    {
      port,
      replica: replicaId,
      pipelines: pipelines.map((pipeline) => pipeline.name),
      owned: leases.ownedPipelines(),
      database: db.kind,
    },
    "straggler service started",
  );
  return {
    port,
    async stop() {
      endChangeStreams(); // open Server-Sent Events streams would keep the server from closing
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // A request whose client has gone may still be landing: let it finish before the loops stop.
      await appendQueuesIdle(db.pool);
      await leases.stop(); // stops every owned pipeline's work, then frees its lease for another replica
      await statistics.stop();
      await schedule.stop();
      await reconciles.stop();
      await stopAlerts();
      await retention.stop();
      await stopListening();
      await healthPool.end();
      await readPool.end();
    },
  };
}
