// Order statistics for bench figures (median, percentiles) and the rounding every report uses.
// Never averages latencies: a mean hides the tail the targets are about.

/** The value at percentile `p` (0-100) of `values`, nearest rank; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Rounded to `digits` decimals, for figures a person reads (JSON keeps them short too). */
export function rounded(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
