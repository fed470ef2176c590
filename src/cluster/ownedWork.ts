/**
 * The work a replica runs only for the pipelines it owns (src/cluster/leases.ts):
 * the stream loop with its landing folder, a log consumer. Each kind is a
 * starter; the service lists them. A starter is called when the lease is
 * taken, and its task is stopped before the lease is given up.
 */
import type { PipelineConfig } from "../config/pipelines.js";
import type { Logger } from "../log.js";
import type { PipelineLease } from "./fencing.js";

/** A running piece of owned work. `stop()` resolves once it has stopped (a unit in flight finished or rolled back) and must not reject. */
export interface OwnedTask {
  stop(): Promise<void>;
}

/**
 * Starts one kind of owned work for `pipeline`; undefined when the pipeline has
 * none of that kind (e.g. no log source). `lease.owns()` turns false the moment
 * the lease is lost: check it before each unit of work (a micro-batch, a fetch),
 * so a fenced replica starts nothing new while its task stops; and end each
 * transaction that commits the work with `lease.assertHeld(client)`, so a
 * replica deposed without knowing it commits nothing (src/cluster/fencing.ts).
 */
export type OwnedTaskStarter = (pipeline: PipelineConfig, lease: PipelineLease) => OwnedTask | undefined;

/** The owned tasks running per pipeline. */
export class OwnedWork {
  private readonly running = new Map<string, OwnedTask[]>();
  private readonly byName: Map<string, PipelineConfig>;

  constructor(
    pipelines: PipelineConfig[],
    private readonly starters: OwnedTaskStarter[],
    private readonly log: Logger,
  ) {
    this.byName = new Map(pipelines.map((p) => [p.name, p]));
  }

  /** Starts every kind of work of `name` under `lease` (just taken). A starter that throws is logged; the others run. */
  start(name: string, lease: PipelineLease): void {
    const pipeline = this.byName.get(name);
    if (!pipeline || this.running.has(name)) return;
    const tasks: OwnedTask[] = [];
    for (const start of this.starters) {
      try {
        const task = start(pipeline, lease);
        if (task) tasks.push(task);
      } catch (e) {
        this.log.error({ err: e, pipeline: name }, "owned work could not start");
      }
    }
    this.running.set(name, tasks);
  }

  /** Stops every task of `name` and waits for them. */
  async stop(name: string): Promise<void> {
    const tasks = this.running.get(name) ?? [];
    this.running.delete(name);
    await Promise.all(
      tasks.map((t) =>
        t.stop().catch((e: unknown) => this.log.error({ err: e, pipeline: name }, "owned work failed to stop cleanly")),
      ),
    );
  }
}
