/** Small numeric helpers for the benchmark: percentiles and rounding. */

export interface Distribution {
  /** Number of samples. */
  count: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/** Nearest-rank percentile of sorted values (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? null;
}

/** p50/p90/p99/max/mean of the values, rounded to `digits` decimals. */
export function distribution(values: readonly number[], digits = 1): Distribution {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const r = (x: number | null): number | null => (x === null ? null : round(x, digits));
  return {
    count: v.length,
    p50: r(percentile(v, 50)),
    p90: r(percentile(v, 90)),
    p99: r(percentile(v, 99)),
    max: r(v.length ? v[v.length - 1]! : null),
    mean: r(v.length ? v.reduce((a, b) => a + b, 0) / v.length : null),
  };
}

export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function mb(bytes: number): number {
  return round(bytes / (1024 * 1024), 1);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
