/**
 * Small-sample statistics over per-repeat values (one value per repeat is one sample; requests inside a run
 * are not independent): the median and its distribution-free order-statistic confidence interval.
 */

/** The median of finite values; null when there are none. */
export function median(values: number[]): number | null {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** P(X ≤ k) for X ~ Binomial(n, 1/2), exact. */
function binomialHalfCdf(k: number, n: number): number {
  let term = 0.5 ** n; // C(n, 0) / 2^n
  let sum = 0;
  for (let i = 0; i <= k; i++) {
    sum += term;
    term = (term * (n - i)) / (i + 1);
  }
  return sum;
}

export interface MedianInterval {
  median: number;
  low: number;
  high: number;
  n: number;
  /** The interval's actual coverage of the true median, e.g. 0.75 for [min, max] of 3 repeats. */
  confidence: number;
}

/**
 * The order-statistic interval of the median: [x(k), x(n+1−k)] covers the true median with probability
 * 1 − 2·P(Bin(n, ½) ≤ k − 1), whatever the distribution. The narrowest k reaching `target` is taken; with
 * too few samples for `target` (n < 6 for 95%) it is [min, max] at its own, lower, confidence. Null with
 * fewer than `minN` samples (default 3): two repeats' [min, max] covers the median only half the time.
 */
export function medianInterval(
  values: number[],
  options: { target?: number; minN?: number } = {},
): MedianInterval | null {
  const target = options.target ?? 0.95;
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  const n = sorted.length;
  if (n < (options.minN ?? 3)) return null;
  let k = 1;
  while (k + 1 <= n + 1 - (k + 1) && 1 - 2 * binomialHalfCdf(k, n) >= target) k++;
  return {
    median: median(sorted) as number,
    low: sorted[k - 1] as number,
    high: sorted[n - k] as number,
    n,
    confidence: 1 - 2 * binomialHalfCdf(k - 1, n),
  };
}

/** Whether two intervals share any point: their difference is within the noise of the repeats. */
export function intervalsOverlap(
  a: { low: number; high: number },
  b: { low: number; high: number },
): boolean {
  return a.low <= b.high && b.low <= a.high;
}
