/**
 * The event ids one replay has landed in its pipeline, kept in a Bloom filter (the `bloomfilter` package), so that a
 * span's landing can tell without asking the server that none of its accepted ids is in bronze yet and skip the
 * probe of the event-id index (src/db/sql/ingest/probeEventIds.ts: about 25 ms of server time for a span of 5,850
 * rows on the peers workload, every span). A Bloom filter never answers "no" for an id it holds; "maybe" sends the
 * span back to the probe.
 *
 * The filter speaks for bronze only while bronze holds nothing of the pipeline but what this replay landed:
 *
 * - the pipeline had no bronze row when the first span landed (its highest `seq` read under the append lock was 0);
 * - no other writer landed a row of the pipeline since: each landing finds the pipeline's highest `seq` where the
 *   replay's previous landing left it (read under the lock above `floor()`, the replay's last landed `seq`:
 *   src/db/sql/ingest/bronzeSeqHighWater.ts);
 * - every span the replay landed had all its ids collected, its accepted ones each once, and its quarantined
 *   records' ids as well: a quarantined row is not in the event-id index, but a cutover to another policy version
 *   may accept it later, so its id goes in the filter (an event id never changes: it is a raw column).
 *
 * Once one of these fails, the filter is given up for the rest of the replay and every span is probed as before.
 */
import { BloomFilter } from "bloomfilter";

/** Bits per id: with 20 hash functions about one false "maybe" in 1.5 million ids (measured: none in 1,000,000). */
const BITS_PER_ID = 29;
const HASHES = 20;
/** At most 32 MiB of filter (9.2 million ids at the rate above; past that the false "maybe" grows, never a wrong "no"). */
const MAX_BITS = 2 ** 28;

/** What a landing asks of the filter, and tells it once the landing is over. */
export class LandedIds {
  private readonly filter: BloomFilter;
  /** The pipeline's highest bronze `seq` as the replay's last landing left it: 0 before the first (an empty pipeline). */
  private expectedSeq = 0;
  /** The last `seq` the replay landed (0 before its first row), kept when the filter is given up. */
  private floorSeq = 0;
  private usable = true;

  /** @param expected the ids the replay may land (its record count): the filter's size */
  constructor(expected: number) {
    this.filter = new BloomFilter(Math.min(MAX_BITS, Math.max(1024, Math.ceil(expected * BITS_PER_ID))), HASHES);
  }

  /**
   * Whether a landing of `ids` (the span's accepted ids, each once) may skip its probe before it has read the
   * pipeline's highest `seq`: the filter is still usable and holds none of them.
   */
  mayBeNew(ids: readonly string[]): boolean {
    return this.usable && !ids.some((id) => this.filter.test(id));
  }

  /**
   * Under the append lock, with the pipeline's highest `seq` read there: true when the filter speaks for bronze
   * (`mayBeNew` said so and nothing else landed since); false gives the filter up, and the landing dedupes.
   */
  confirms(seqBefore: number): boolean {
    if (this.usable && seqBefore === this.expectedSeq) return true;
    this.usable = false;
    return false;
  }

  /**
   * Once a landing of the replay committed (copyToBronze.ts tells it): its accepted and its quarantined ids go in
   * the filter and its `lastSeq` is where the next landing must find the pipeline. `ids` null (not collected, read
   * during the COPY, or repeated within the span) or `quarantinedIds` null (not collected, or too many) give the
   * filter up. A row the landing's dedupe quarantined (DUPLICATE) was accepted by its classification: in `ids`.
   */
  landed(ids: Iterable<string> | null, quarantinedIds: Iterable<string> | null, lastSeq: number | null): void {
    if (lastSeq !== null) this.floorSeq = lastSeq;
    if (!this.usable) return;
    if (ids === null || quarantinedIds === null) {
      this.usable = false;
      return;
    }
    for (const id of ids) this.filter.add(id);
    for (const id of quarantinedIds) this.filter.add(id);
    if (lastSeq !== null) this.expectedSeq = lastSeq;
  }

  /**
   * The last `seq` this replay landed, 0 before its first row: the pipeline's rows above it are another writer's, so
   * a landing reads the pipeline's highest `seq` above it only (one index range, empty while the replay is alone).
   */
  floor(): number {
    return this.floorSeq;
  }

  /**
   * A landing failed or was skipped (landed before): bronze may hold what the filter does not. A skipped landing's
   * `lastSeq` (a row of the pipeline) still raises the floor.
   */
  giveUp(lastSeq: number | null = null): void {
    this.usable = false;
    if (lastSeq !== null && lastSeq > this.floorSeq) this.floorSeq = lastSeq;
  }
}
