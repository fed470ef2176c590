/**
 * The byte budget of a list read in the database (the REST API's answer budget, src/http/answerBudget.ts):
 * a query reads its rows' sizes first and fetches only the rows that fit.
 */

/**
 * How many of a query's rows fit in `budgetBytes`, from the sizes of their text as the database
 * counts it (`octet_length(row::text)`), read before the rows themselves so that rows past the
 * budget are never fetched. Each row's JSON adds its column names: `perRowBytes`.
 * @returns the rows that fit (at least one when there is one), and whether some were left out
 */
export function rowsWithinBudget(
  sizes: number[],
  budgetBytes: number,
  perRowBytes: number,
): { limit: number; truncated: boolean } {
  let used = 2;
  for (let i = 0; i < sizes.length; i++) {
    used += sizes[i]! + perRowBytes;
    if (used > budgetBytes && i > 0) return { limit: i, truncated: true };
  }
  return { limit: sizes.length, truncated: false };
}
