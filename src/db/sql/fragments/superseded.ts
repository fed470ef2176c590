/**
 * Amended events (`admission.dedupe: latest`, README "Amended events"): a
 * bronze row superseded by a later version of its event stays accepted in
 * bronze as it landed; `straggler.superseded_events` records the supersession.
 * Every reader of accepted rows — the stream, the correction's recompute,
 * reconcile, lateness — leaves such rows out through this condition, as of
 * the `seq` it reads up to, so a reader sees the ledger as it stood at that
 * `seq`: a version superseded only by a later row still counts.
 */

/**
 * SQL condition: the bronze row aliased `alias` is not superseded by a row
 * whose `seq` is at or below `bound` (an SQL expression such as `$3`; omitted:
 * by any row). One primary-key probe of `straggler.superseded_events` per row.
 */
export function notSuperseded(alias: string, bound?: string): string {
  return `NOT EXISTS (SELECT 1 FROM straggler.superseded_events sup WHERE sup.seq = ${alias}.seq${bound === undefined ? "" : ` AND sup.superseded_by <= ${bound}`})`;
}
