/** Shapes of windows and their values as the query layer returns them. */

/** A window's value: count, and exact decimals as strings (null when no row has a value). */
export interface Aggregate {
  count: number;
  sum: string | null;
  min: string | null;
  max: string | null;
}

/** A window of one group key: the key as stored (the null group is `NULL_KEY`), bounds as ISO 8601 instants. */
export interface KeyedWindow {
  groupKey: string;
  windowStart: string;
  windowEnd: string;
}
