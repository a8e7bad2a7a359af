/**
 * Orders two strings by their UTF-16 code units, the way Go's `<` on strings
 * orders ASCII and `Array.prototype.sort` does without a comparator.
 *
 * Used where the controller sorts names, keys and timestamps instead of
 * `String.prototype.localeCompare`: an order that a decision or a written
 * object depends on must not change with the process's locale or ICU's data,
 * and localeCompare builds an ICU collator (a few MB of the executable's
 * collation tables touched, and far more CPU per comparison).
 */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
