/**
 * Two-sample tests on per-repeat values (one figure per repeat, never per request: FACTS §14), small and
 * exact: Mann-Whitney U by counting its permutation distribution, Welch's t with the t distribution's CDF
 * from the regularized incomplete beta function. `testSamples` picks between them by repeat count.
 */

/** Which test gave a p-value: "U" (exact Mann-Whitney), "welch", or none ("n<2: no test"). */
export type TestMethod = "U" | "welch" | "n<2: no test";

export interface TestResult {
  method: TestMethod;
  /** Two-sided p-value; null when the test cannot be computed (then `reason` says why). */
  p: number | null;
  reason: string | null;
  nA: number;
  nB: number;
}

/** Below this many repeats on either side the exact U test cannot reach p < 0.05 (3 vs 3: p ≥ 0.10). */
export const MIN_REPEATS_FOR_U = 4;

function midRanks(values: number[]): number[] {
  const order = values.map((value, index) => ({ value, index })).sort((a, b) => a.value - b.value);
  const ranks = new Array<number>(values.length).fill(0);
  for (let start = 0; start < order.length; ) {
    let end = start;
    while (end + 1 < order.length && order[end + 1]?.value === order[start]?.value) end++;
    const rank = (start + end) / 2 + 1;
    for (let i = start; i <= end; i++) ranks[(order[i] as { index: number }).index] = rank;
    start = end + 1;
  }
  return ranks;
}

/**
 * Exact two-sided Mann-Whitney U: the rank sum of `a` against every way of choosing |a| of the pooled
 * values (mid-ranks for ties, so the distribution is the exact one conditional on the ties), counted by
 * dynamic programming over doubled ranks. p = 2 · min(P(W ≤ w), P(W ≥ w)), capped at 1 (scipy's "exact").
 */
export function mannWhitneyU(a: number[], b: number[]): { u: number; p: number } {
  if (a.length === 0 || b.length === 0)
    throw new RangeError(`Cannot test: both samples need values: received ${a.length} and ${b.length}`);
  const pooled = [...a, ...b];
  const doubled = midRanks(pooled).map((rank) => Math.round(rank * 2));
  const n = a.length;
  const observed = doubled.slice(0, n).reduce((sum, rank) => sum + rank, 0);
  const maxSum = doubled.reduce((sum, rank) => sum + rank, 0);
  // ways[k][s]: subsets of k pooled values whose doubled ranks sum to s (counts as floats: C(40,20) < 2^53).
  const ways = Array.from({ length: n + 1 }, () => new Float64Array(maxSum + 1));
  (ways[0] as Float64Array)[0] = 1;
  for (const rank of doubled) {
    for (let k = n; k >= 1; k--) {
      const from = ways[k - 1] as Float64Array;
      const to = ways[k] as Float64Array;
      for (let s = maxSum; s >= rank; s--) to[s] = (to[s] as number) + (from[s - rank] as number);
    }
  }
  const dist = ways[n] as Float64Array;
  let total = 0;
  let atMost = 0;
  let atLeast = 0;
  dist.forEach((count, s) => {
    total += count;
    if (s <= observed) atMost += count;
    if (s >= observed) atLeast += count;
  });
  const u = observed / 2 - (n * (n + 1)) / 2;
  return { u, p: Math.min(1, (2 * Math.min(atMost, atLeast)) / total) };
}

function lnGamma(x: number): number {
  // Lanczos (g = 7, n = 9), good to ~1e-15 for x > 0.5; reflection below.
  const c = [
    0.9999999999998099, 676.5203681218851, -1259.1392167224028, 771.3234287776531, -176.6150291621406,
    12.507343278686905, -0.13857109526572012, 9.984369578019572e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lnGamma(1 - x);
  const z = x - 1;
  let sum = c[0] as number;
  for (let i = 1; i < 9; i++) sum += (c[i] as number) / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

function betaContinuedFraction(x: number, a: number, b: number): number {
  // Lentz's method for the continued fraction of I_x(a, b) (Numerical Recipes' betacf).
  const tiny = 1e-300;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (a + b + m) * x) / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < 1e-15) break;
  }
  return h;
}

/** The regularized incomplete beta function I_x(a, b). */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  // The fraction converges fast for x < (a + 1) / (a + b + 2); use the symmetry otherwise.
  return x < (a + 1) / (a + b + 2)
    ? (front * betaContinuedFraction(x, a, b)) / a
    : 1 - (front * betaContinuedFraction(1 - x, b, a)) / b;
}

/** Two-sided p of Student's t with `df` degrees of freedom: P(|T| ≥ |t|) = I_{df/(df+t²)}(df/2, 1/2). */
export function tTwoSidedP(t: number, df: number): number {
  return incompleteBeta(df / (df + t * t), df / 2, 0.5);
}

function meanVariance(values: number[]): { mean: number; variance: number } {
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
  const variance = values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (values.length - 1);
  return { mean, variance };
}

/**
 * Welch's t-test (unequal variances, Welch–Satterthwaite degrees of freedom), two-sided. Null p when both
 * samples have no spread: t is then 0/0 or ±∞, a statement about the data, not a test.
 */
export function welchT(a: number[], b: number[]): { t: number; df: number; p: number } | null {
  if (a.length < 2 || b.length < 2)
    throw new RangeError(`Cannot test: Welch needs 2 values a side: received ${a.length} and ${b.length}`);
  const x = meanVariance(a);
  const y = meanVariance(b);
  const seA = x.variance / a.length;
  const seB = y.variance / b.length;
  if (seA + seB === 0) return null;
  const t = (x.mean - y.mean) / Math.sqrt(seA + seB);
  const df = (seA + seB) ** 2 / (seA ** 2 / (a.length - 1) + seB ** 2 / (b.length - 1));
  return { t, df, p: tTwoSidedP(t, df) };
}

/**
 * The test the repeat counts allow: exact U with ≥ 4 a side (3 vs 3 cannot go below p = 0.10), Welch's t
 * with 2–3 (it assumes rough normality of the per-repeat values), none with a single repeat.
 */
export function testSamples(a: number[], b: number[]): TestResult {
  const counts = { nA: a.length, nB: b.length };
  if (a.length < 2 || b.length < 2)
    return {
      method: "n<2: no test",
      p: null,
      reason: "one repeat on a side has no spread to test",
      ...counts,
    };
  if (a.length >= MIN_REPEATS_FOR_U && b.length >= MIN_REPEATS_FOR_U)
    return { method: "U", p: mannWhitneyU(a, b).p, reason: null, ...counts };
  const welch = welchT(a, b);
  if (welch === null)
    return {
      method: "welch",
      p: null,
      reason: "no spread on either side: every repeat gave the same value",
      ...counts,
    };
  return { method: "welch", p: welch.p, reason: null, ...counts };
}
