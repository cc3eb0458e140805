/**
 * The statistics a cache operator reads off a trace (the Twitter cache-trace `stat/` table, libCacheSim's
 * traceAnalyzer), over a CompactTrace in typed arrays: O(n log n), no object per request. A value the trace
 * cannot give (no sizes, no timestamps, too few repeated keys for a fit) is null, never 0. Definitions:
 * FACTS §13, docs/trace_statistics.md.
 */
import { RecencyMarks } from "./fenwick.ts";
import type { CompactTrace } from "./trace.ts";

const READ = 0;
const WRITE = 1;
const DELETE = 2;

export const ZIPF_FIT = "least squares of ln(frequency) on ln(rank), ranks with frequency ≥ 2";
export const ONE_HIT_WONDER_WINDOW = "whole trace";
export const PERCENTILE_METHOD = "nearest rank";

export interface TraceStats {
  requests: number;
  distinctKeys: number;
  readShare: number;
  writeShare: number;
  deleteShare: number;
  /** Keys requested exactly once (any operation) ÷ distinct keys, over `oneHitWonderWindow`. */
  oneHitWonderRatio: number;
  oneHitWonderWindow: typeof ONE_HIT_WONDER_WINDOW;
  /** Distinct keys ÷ requests: the miss ratio of an infinite cache. */
  compulsoryMissRatio: number;
  /** Σ each key's first known size ÷ Σ the sizes of the sized requests; null without sizes. */
  compulsoryByteMissRatio: number | null;
  /** Requests ÷ distinct keys. */
  meanObjectFrequency: number;
  /** −slope of the fit; null with fewer than 2 ranks of frequency ≥ 2. */
  zipfAlpha: number | null;
  zipfFit: typeof ZIPF_FIT;
  /** Ranks the fit ran over (those with frequency ≥ 2). */
  zipfFitRanks: number;
  workingSetKeys: number;
  /** Σ each distinct key's last known size; null without sizes. */
  workingSetBytes: number | null;
  /** Requests carrying a value size (deletes excluded): the sample of the percentiles. */
  sizedRequests: number;
  valueSizeP50Bytes: number | null;
  valueSizeP90Bytes: number | null;
  valueSizeP99Bytes: number | null;
  valueSizeMaxBytes: number | null;
  percentileMethod: typeof PERCENTILE_METHOD;
  /** Median of the distinct keys between consecutive requests of a key (first requests excluded); null if none. */
  reuseDistanceMedian: number | null;
  /** Last minus first timestamp; null without two distinct timestamps. */
  durationS: number | null;
  /** Timed requests ÷ durationS. */
  requestRateRps: number | null;
  /** Requests in each second of trace time, first to last second, empty seconds included. */
  secondRateP50Rps: number | null;
  secondRateP99Rps: number | null;
  secondRatePeakRps: number | null;
}

/** The statistics of `trace` (all of it, every operation). */
export function traceStats(trace: CompactTrace): TraceStats {
  const n = trace.keyIndex.length;
  if (n === 0)
    throw new RangeError(`Cannot compute trace statistics: the trace has no requests: received ${n}`);
  const keyCount = trace.keys.length;
  const { keyIndex, op } = trace;
  const opCounts = [0, 0, 0];
  const frequency = new Int32Array(keyCount);
  for (let i = 0; i < n; i++) {
    const o = op[i] as number;
    const key = keyIndex[i] as number;
    opCounts[o] = (opCounts[o] as number) + 1;
    frequency[key] = (frequency[key] as number) + 1;
  }
  let onceKeys = 0;
  for (let k = 0; k < keyCount; k++) if (frequency[k] === 1) onceKeys++;
  const sizes = sizeStats(trace);
  const times = timeStats(trace.tsMs);
  const zipf = zipfAlpha(frequency);
  return {
    requests: n,
    distinctKeys: keyCount,
    readShare: (opCounts[READ] as number) / n,
    writeShare: (opCounts[WRITE] as number) / n,
    deleteShare: (opCounts[DELETE] as number) / n,
    oneHitWonderRatio: onceKeys / keyCount,
    oneHitWonderWindow: ONE_HIT_WONDER_WINDOW,
    compulsoryMissRatio: keyCount / n,
    compulsoryByteMissRatio: sizes.compulsoryByteMissRatio,
    meanObjectFrequency: n / keyCount,
    zipfAlpha: zipf.alpha,
    zipfFit: ZIPF_FIT,
    zipfFitRanks: zipf.ranks,
    workingSetKeys: keyCount,
    workingSetBytes: sizes.workingSetBytes,
    sizedRequests: sizes.sizedRequests,
    valueSizeP50Bytes: sizes.p50,
    valueSizeP90Bytes: sizes.p90,
    valueSizeP99Bytes: sizes.p99,
    valueSizeMaxBytes: sizes.max,
    percentileMethod: PERCENTILE_METHOD,
    reuseDistanceMedian: reuseDistanceMedian(keyIndex, keyCount),
    ...times,
  };
}

function ratio(numerator: number, denominator: number): number | null {
  return denominator > 0 ? numerator / denominator : null;
}

/** The nearest-rank p-quantile of ascending `sorted` (length ≥ 1). */
function nearestRank(sorted: ArrayLike<number>, p: number): number {
  const rank = Math.max(1, Math.ceil(p * sorted.length));
  return sorted[rank - 1] as number;
}

function sizeStats(trace: CompactTrace) {
  const none = {
    compulsoryByteMissRatio: null,
    workingSetBytes: null,
    sizedRequests: 0,
    p50: null,
    p90: null,
    p99: null,
    max: null,
  };
  const sizeBytes = trace.sizeBytes;
  if (sizeBytes === null) return none;
  const { keyIndex, op } = trace;
  const n = keyIndex.length;
  const firstSize = new Float64Array(trace.keys.length).fill(-1);
  const lastSize = new Float64Array(trace.keys.length).fill(-1);
  const valueSizes = new Int32Array(n);
  let sized = 0;
  let sizedBytes = 0;
  for (let i = 0; i < n; i++) {
    const size = sizeBytes[i] as number;
    // A delete carries no value: its size (often 0) says nothing of the objects.
    if (size < 0 || op[i] === DELETE) continue;
    const key = keyIndex[i] as number;
    if (firstSize[key] === -1) firstSize[key] = size;
    lastSize[key] = size;
    valueSizes[sized++] = size;
    sizedBytes += size;
  }
  if (sized === 0) return none;
  let compulsoryBytes = 0;
  let workingSetBytes = 0;
  for (let k = 0; k < trace.keys.length; k++) {
    if ((firstSize[k] as number) >= 0) compulsoryBytes += firstSize[k] as number;
    if ((lastSize[k] as number) >= 0) workingSetBytes += lastSize[k] as number;
  }
  const sorted = valueSizes.subarray(0, sized).sort();
  return {
    compulsoryByteMissRatio: ratio(compulsoryBytes, sizedBytes),
    workingSetBytes,
    sizedRequests: sized,
    p50: nearestRank(sorted, 0.5),
    p90: nearestRank(sorted, 0.9),
    p99: nearestRank(sorted, 0.99),
    max: sorted[sized - 1] as number,
  };
}

/** Least squares of ln f on ln r over the ranks with f ≥ 2; alpha is minus the slope. */
function zipfAlpha(frequency: Int32Array): { alpha: number | null; ranks: number } {
  const descending = frequency.slice().sort().reverse();
  let count = 0;
  let sumX = 0;
  let sumY = 0;
  let sumXX = 0;
  let sumXY = 0;
  for (let r = 0; r < descending.length && (descending[r] as number) >= 2; r++) {
    const x = Math.log(r + 1);
    const y = Math.log(descending[r] as number);
    count++;
    sumX += x;
    sumY += y;
    sumXX += x * x;
    sumXY += x * y;
  }
  if (count < 2) return { alpha: null, ranks: count };
  const slope = (count * sumXY - sumX * sumY) / (count * sumXX - sumX * sumX);
  return { alpha: slope === 0 ? 0 : -slope, ranks: count };
}

/** The median reuse distance, from a histogram of the distances (each < distinct keys). */
function reuseDistanceMedian(keyIndex: Int32Array, keyCount: number): number | null {
  const n = keyIndex.length;
  const marks = new RecencyMarks(keyCount);
  const histogram = new Int32Array(Math.max(keyCount, 1));
  let reuses = 0;
  for (let i = 0; i < n; i++) {
    const key = keyIndex[i] as number;
    const distance = marks.distance(key);
    if (distance >= 0) {
      histogram[distance] = (histogram[distance] as number) + 1;
      reuses++;
    }
    marks.touch(key);
  }
  if (reuses === 0) return null;
  const rank = Math.ceil(reuses / 2);
  let seen = 0;
  for (let d = 0; d < histogram.length; d++) {
    seen += histogram[d] as number;
    if (seen >= rank) return d;
  }
  throw new RangeError(`Cannot take the reuse-distance median: histogram short of rank ${rank}`);
}

function timeStats(tsMs: Float64Array | null) {
  const none = {
    durationS: null,
    requestRateRps: null,
    secondRateP50Rps: null,
    secondRateP99Rps: null,
    secondRatePeakRps: null,
  };
  if (tsMs === null) return none;
  let firstMs = Number.POSITIVE_INFINITY;
  let lastMs = Number.NEGATIVE_INFINITY;
  let timed = 0;
  for (let i = 0; i < tsMs.length; i++) {
    const t = tsMs[i] as number;
    if (Number.isNaN(t)) continue;
    timed++;
    if (t < firstMs) firstMs = t;
    if (t > lastMs) lastMs = t;
  }
  if (!(lastMs > firstMs)) return none;
  // Each timed request's second since the first, sorted, then counted run by run: no array per second,
  // so a trace spanning years costs no more than one spanning minutes.
  const seconds = new Float64Array(timed);
  let j = 0;
  let ordered = true;
  for (let i = 0; i < tsMs.length; i++) {
    const t = tsMs[i] as number;
    if (Number.isNaN(t)) continue;
    seconds[j] = Math.floor((t - firstMs) / 1000);
    if (j > 0 && (seconds[j] as number) < (seconds[j - 1] as number)) ordered = false;
    j++;
  }
  // A trace is usually in time order already; only a shuffled one pays for the sort.
  if (!ordered) seconds.sort();
  const busy: number[] = [];
  for (let i = 0; i < timed; ) {
    let end = i + 1;
    while (end < timed && seconds[end] === seconds[i]) end++;
    busy.push(end - i);
    i = end;
  }
  const spanSeconds = (seconds[timed - 1] as number) + 1;
  const idleSeconds = spanSeconds - busy.length;
  const counts = Int32Array.from(busy).sort();
  const quantile = (p: number) => {
    const rank = Math.max(1, Math.ceil(p * spanSeconds));
    return rank <= idleSeconds ? 0 : (counts[rank - idleSeconds - 1] as number);
  };
  const durationS = (lastMs - firstMs) / 1000;
  return {
    durationS,
    requestRateRps: timed / durationS,
    secondRateP50Rps: quantile(0.5),
    secondRateP99Rps: quantile(0.99),
    secondRatePeakRps: counts[counts.length - 1] as number,
  };
}
