/**
 * How long the server's database loads take, per route kind: a log-bucketed histogram (bucket i holds
 * [1 µs·γ^i, 1 µs·γ^(i+1)), γ = 1.02, so a percentile read as the bucket's harmonic midpoint is within
 * (γ − 1)/(γ + 1) < 1% of the true value) in fixed memory (~900 counters a kind). /stats carries the
 * non-empty buckets, so the lab takes deltas between two snapshots and merges instances exactly.
 */

export const LOAD_KINDS = ["detail", "summary", "list"] as const;
export type LoadKind = (typeof LOAD_KINDS)[number];

export const BUCKET_RATIO = 1.02;
export const BUCKET_MIN_MS = 0.001;
/** Buckets up to 60 s; a slower load lands in the last, whose midpoint is then a floor. */
const BUCKETS = Math.ceil(Math.log(60_000 / BUCKET_MIN_MS) / Math.log(BUCKET_RATIO)) + 1;
const LOG_RATIO = Math.log(BUCKET_RATIO);

/** One kind's loads as /stats reports them; `buckets` are [index, count] pairs of the non-empty buckets. */
export interface LoadTimes {
  count: number;
  sumMs: number;
  meanMs: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  buckets: [number, number][];
}

export function bucketOf(ms: number): number {
  if (!(ms > BUCKET_MIN_MS)) return 0;
  return Math.min(BUCKETS - 1, Math.floor(Math.log(ms / BUCKET_MIN_MS) / LOG_RATIO));
}

/** The value a bucket stands for: the harmonic mean of its bounds, the point of least relative error. */
export function bucketValueMs(index: number): number {
  const low = BUCKET_MIN_MS * BUCKET_RATIO ** index;
  const high = low * BUCKET_RATIO;
  return (2 * low * high) / (low + high);
}

/** The nearest-rank percentile of bucketed loads, or null without any. */
export function percentileMs(buckets: [number, number][], percent: number): number | null {
  const count = buckets.reduce((sum, [, n]) => sum + n, 0);
  if (count === 0) return null;
  const rank = Math.max(1, Math.ceil((percent / 100) * count));
  let seen = 0;
  for (const [index, n] of [...buckets].sort((a, b) => a[0] - b[0])) {
    seen += n;
    if (seen >= rank) return bucketValueMs(index);
  }
  return null;
}

/** A LoadTimes from its count, sum and buckets, with its mean and percentiles (rounded to 0.1 µs). */
export function loadTimesOf(count: number, sumMs: number, buckets: [number, number][]): LoadTimes {
  const round = (ms: number | null) => (ms === null ? null : Math.round(ms * 10_000) / 10_000);
  return {
    count,
    sumMs,
    meanMs: count > 0 ? round(sumMs / count) : null,
    p50Ms: round(percentileMs(buckets, 50)),
    p99Ms: round(percentileMs(buckets, 99)),
    buckets,
  };
}

/** One kind's histogram; `record` is a few arithmetic operations on the hot path of a miss. */
export class LoadHistogram {
  #counts = new Uint32Array(BUCKETS);
  #count = 0;
  #sumMs = 0;

  record(ms: number): void {
    const index = bucketOf(ms);
    this.#counts[index] = (this.#counts[index] ?? 0) + 1;
    this.#count++;
    this.#sumMs += ms;
  }

  snapshot(): LoadTimes {
    const buckets: [number, number][] = [];
    this.#counts.forEach((n, index) => {
      if (n > 0) buckets.push([index, n]);
    });
    return loadTimesOf(this.#count, this.#sumMs, buckets);
  }
}

/** A timer per load kind; `time` wraps a load's query and records it once it succeeds. */
export function createLoadTimer(onLoad?: (kind: LoadKind, ms: number) => void) {
  let histograms = newHistograms();
  function newHistograms(): Record<LoadKind, LoadHistogram> {
    return { detail: new LoadHistogram(), summary: new LoadHistogram(), list: new LoadHistogram() };
  }
  return {
    /** Times `query` from now until it resolves (a failed query is no load time). */
    time<T>(kind: LoadKind, query: Promise<T>): Promise<T> {
      const startedMs = performance.now();
      return query.then((result) => {
        const ms = performance.now() - startedMs;
        histograms[kind].record(ms);
        onLoad?.(kind, ms);
        return result;
      });
    },
    snapshot(): Record<LoadKind, LoadTimes> {
      return {
        detail: histograms.detail.snapshot(),
        summary: histograms.summary.snapshot(),
        list: histograms.list.snapshot(),
      };
    },
    reset(): void {
      histograms = newHistograms();
    },
  };
}

/**
 * The loads (or any timings kept the same way, by kind) between two snapshots of one or more servers (the
 * kinds merged, instances summed), or null when
 * any snapshot lacks them (an older server) or a count went down (a reset between them).
 */
export function loadTimesBetween<K extends string = LoadKind>(
  before: (Partial<Record<K, LoadTimes>> | undefined)[],
  after: (Partial<Record<K, LoadTimes>> | undefined)[],
  kinds: readonly K[] = LOAD_KINDS as unknown as readonly K[],
): LoadTimes | null {
  const merged = new Map<number, number>();
  let count = 0;
  let sumMs = 0;
  for (let i = 0; i < after.length; i++) {
    for (const kind of kinds) {
      const a = before[i]?.[kind];
      const b = after[i]?.[kind];
      if (a === undefined || b === undefined || b.count < a.count) return null;
      count += b.count - a.count;
      sumMs += b.sumMs - a.sumMs;
      for (const [index, n] of b.buckets) merged.set(index, (merged.get(index) ?? 0) + n);
      for (const [index, n] of a.buckets) {
        const left = (merged.get(index) ?? 0) - n;
        if (left < 0) return null;
        merged.set(index, left);
      }
    }
  }
  const buckets = [...merged].filter(([, n]) => n > 0).sort((x, y) => x[0] - y[0]);
  return loadTimesOf(count, sumMs, buckets);
}
