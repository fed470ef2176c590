/**
 * Forgetting a pipeline (`straggler drop`, README "Forget a pipeline"): the
 * only way rows ever leave bronze by hand. Removes every row the pipeline
 * owns — bronze, landed sources and source files, checkpoint, batch progress,
 * results, late events and windows, correction runs and audit, failed
 * windows, alert states, policy versions — in one transaction, under the
 * pipeline's bronze-append lock and results lock, so no landing, micro-batch
 * or correction run interleaves: they wait, and then find a pipeline that has
 * never run (its next micro-batch records the configured policy as version 1,
 * its landing folder's files land again).
 */
import type { Pool } from "../db/pool.js";
import { withTransaction } from "../db/pool.js";
import { lockResults } from "../db/sql/stream/lockResults.js";
import {
  countPipelineRows,
  deletePipelineRows,
  lockBronzeAppend,
  pipelineTables,
} from "../db/sql/readmodel/pipelineRows.js";

/** Rows per table (schema `straggler`, tables keyed by pipeline), and their total. */
export interface PipelineRows {
  pipeline: string;
  tables: Record<string, number>;
  total: number;
}

const total = (tables: Record<string, number>) => Object.values(tables).reduce((a, b) => a + b, 0);

/**
 * What `drop` would remove: the rows of `pipeline` per table. Reads only.
 * @throws the database's error when it cannot be reached
 */
export async function pipelineRows(pool: Pool, pipeline: string): Promise<PipelineRows> {
  const tables = await countPipelineRows(pool, pipeline, await pipelineTables(pool));
  return { pipeline, tables, total: total(tables) };
}

/**
 * Removes every row of `pipeline`, in one transaction under its bronze-append
 * and results locks (waiting for a landing, micro-batch or correction in flight).
 * @returns the rows removed per table
 * @throws the database's error; nothing is removed then
 */
export async function dropPipeline(pool: Pool, pipeline: string): Promise<PipelineRows> {
  return withTransaction(pool, async (client) => {
    await lockBronzeAppend(client, pipeline);
    await lockResults(client, pipeline);
    const tables = await deletePipelineRows(client, pipeline, await pipelineTables(client));
    return { pipeline, tables, total: total(tables) };
  });
}
