/**
 * A server-side latency histogram as one CSV cell, and the mixture of several: what the model needs to
 * predict a p99 from a run's per-outcome timings (docs/advise.md "p99"). The server keeps buckets of ratio
 * 1.02 (server/load_timer.ts); a row keeps them five to one (ratio 1.02⁵ ≈ 1.104), so a percentile read
 * from a cell is within 5% of the server's, in a few hundred bytes.
 */
import { BUCKET_MIN_MS, BUCKET_RATIO } from "../../server/load_timer.ts";

/** Server buckets merged into one row bucket. */
export const MERGE = 5;

/** A distribution as weighted points: each bucket's representative value (ms) and its count. */
export type Points = [ms: number, count: number][];

/** The value a row bucket stands for: the harmonic mean of its bounds. */
export function rowBucketValueMs(index: number): number {
  const low = BUCKET_MIN_MS * BUCKET_RATIO ** (index * MERGE);
  const high = low * BUCKET_RATIO ** MERGE;
  return (2 * low * high) / (low + high);
}

/**
 * The server's non-empty buckets ([index, count], ascending or not) as a cell: "start:c1,c2,…" runs of
 * consecutive row buckets, runs joined by ";" (an empty bucket inside a run is a 0). "" for no requests.
 */
export function encodeHistogram(buckets: [number, number][]): string {
  const merged = new Map<number, number>();
  for (const [index, count] of buckets) {
    if (count <= 0) continue;
    const row = Math.floor(index / MERGE);
    merged.set(row, (merged.get(row) ?? 0) + count);
  }
  const indexes = [...merged.keys()].sort((a, b) => a - b);
  const runs: string[] = [];
  let start = -1;
  let counts: number[] = [];
  const flush = () => {
    if (start >= 0) runs.push(`${start}:${counts.join(",")}`);
  };
  for (const index of indexes) {
    const count = merged.get(index) as number;
    const next = start + counts.length;
    // A gap of up to two buckets is cheaper written as zeros than as a new run.
    if (start >= 0 && index - next <= 2) {
      for (let i = next; i < index; i++) counts.push(0);
      counts.push(count);
    } else {
      flush();
      start = index;
      counts = [count];
    }
  }
  flush();
  return runs.join(";");
}

/** A cell back into points; a malformed cell is an error naming it, never an empty distribution. */
export function decodeHistogram(cell: string): Points {
  const points: Points = [];
  if (cell.trim() === "") return points;
  for (const run of cell.split(";")) {
    const match = /^(\d+):(\d+(?:,\d+)*)$/.exec(run.trim());
    if (!match) throw new Error(`not a histogram cell (start:count,count,…;…): ${cell.slice(0, 80)}`);
    const start = Number(match[1]);
    (match[2] as string).split(",").forEach((raw, i) => {
      const count = Number(raw);
      if (count > 0) points.push([rowBucketValueMs(start + i), count]);
    });
  }
  return points;
}

/** One component of a mixture: a distribution, its share of requests, and a delay added to each of them. */
export interface Component {
  points: Points;
  share: number;
  shiftMs: number;
}

/**
 * The nearest-rank percentiles of a mixture, one sort for all: each component's distribution shifted by its
 * delay, weighted by its share (its own counts normalised, so a component timed from few requests weighs what
 * its share says). Null when no component with a share has points.
 */
export function mixturePercentilesMs(components: Component[], percents: number[]): (number | null)[] {
  const weighted: [number, number][] = [];
  for (const { points, share, shiftMs } of components) {
    if (!(share > 0)) continue;
    const total = points.reduce((sum, [, n]) => sum + n, 0);
    if (total === 0) return percents.map(() => null);
    for (const [ms, n] of points) weighted.push([ms + shiftMs, (share * n) / total]);
  }
  if (weighted.length === 0) return percents.map(() => null);
  weighted.sort((a, b) => a[0] - b[0]);
  const mass = weighted.reduce((sum, [, w]) => sum + w, 0);
  return percents.map((percent) => {
    const rank = (percent / 100) * mass;
    let seen = 0;
    for (const [ms, w] of weighted) {
      seen += w;
      if (seen >= rank - 1e-12) return ms;
    }
    return (weighted[weighted.length - 1] as [number, number])[0];
  });
}

/** The nearest-rank percentile of a mixture (mixturePercentilesMs for one). */
export function mixturePercentileMs(components: Component[], percent: number): number | null {
  return mixturePercentilesMs(components, [percent])[0] ?? null;
}

/** Points each spread over a delay's own weighted points (a wait before the request is served): their sum. */
export function convolve(points: Points, delay: [ms: number, weight: number][]): Points {
  return points.flatMap(([ms, n]) => delay.map(([d, w]) => [ms + d, n * w] as [number, number]));
}

/** The nearest-rank percentile of several cells pooled (a row's outcomes together); null without requests. */
export function pooledPercentileMs(cells: unknown[], percent: number): number | null {
  const components: Component[] = [];
  for (const cell of cells) {
    if (typeof cell !== "string" || cell.trim() === "") continue;
    const points = decodeHistogram(cell);
    const count = points.reduce((sum, [, n]) => sum + n, 0);
    if (count > 0) components.push({ points, share: count, shiftMs: 0 });
  }
  return mixturePercentileMs(components, percent);
}
