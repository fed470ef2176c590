/**
 * Records of the domain that the query modules (src/db/sql) decode rows into and the features
 * take from them: owned here, beside the core's other shapes, so a query module and its readers
 * share them without importing each other. Instants are ISO 8601 UTC strings (µs kept); seqs are
 * bronze `seq`s.
 */

/** One pipeline's rows in a bronze partition (src/retention/archive.ts): how many, their greatest seq, their event-time range (null when none has one). */
export interface PipelineInPartition {
  pipeline: string;
  rows: number;
  maxSeq: number;
  minEventTime: string | null;
  maxEventTime: string | null;
}
