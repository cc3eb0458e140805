import { expect, test } from "bun:test";
import {
  BUCKET_RATIO,
  bucketOf,
  bucketValueMs,
  createLoadTimer,
  LoadHistogram,
  loadTimesBetween,
  percentileMs,
} from "./load_timer.ts";

/** Nearest-rank percentile of the exact values, what the histogram approximates. */
function exactPercentile(values: number[], percent: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((percent / 100) * sorted.length) - 1)] as number;
}

test("LoadHistogram's p50 and p99 are within 1% of the exact nearest-rank values of a known set", () => {
  // Three shapes: evenly spread, a fast mode with a slow tail (a cache-miss mix), and sub-millisecond values.
  const sets = [
    Array.from({ length: 1_000 }, (_, i) => (i + 1) * 0.05),
    [
      ...Array.from({ length: 970 }, (_, i) => 0.3 + (i % 50) * 0.002),
      ...Array.from({ length: 30 }, (_, i) => 20 + i),
    ],
    Array.from({ length: 5_000 }, (_, i) => 0.01 + ((i * 7919) % 5_000) * 0.0001),
  ];
  for (const values of sets) {
    const histogram = new LoadHistogram();
    for (const value of values) histogram.record(value);
    const snapshot = histogram.snapshot();
    expect(snapshot.count).toBe(values.length);
    expect(snapshot.meanMs).toBeCloseTo(values.reduce((a, b) => a + b, 0) / values.length, 3);
    for (const [percent, got] of [
      [50, snapshot.p50Ms],
      [99, snapshot.p99Ms],
    ] as const) {
      const exact = exactPercentile(values, percent);
      expect(Math.abs((got as number) - exact) / exact).toBeLessThan(0.01);
    }
  }
});

test("every bucket's value is within (γ − 1)/(γ + 1) < 1% of anything it holds", () => {
  const bound = (BUCKET_RATIO - 1) / (BUCKET_RATIO + 1);
  for (let ms = 0.0011; ms < 60_000; ms *= 1.0037) {
    const value = bucketValueMs(bucketOf(ms));
    expect(Math.abs(value - ms) / ms).toBeLessThanOrEqual(bound + 1e-12);
  }
  expect(percentileMs([], 50)).toBeNull();
});

test("loadTimesBetween takes the delta of two snapshots, merges kinds and instances, and is null across a reset", async () => {
  const a = createLoadTimer();
  const b = createLoadTimer();
  await a.time("detail", Promise.resolve(1));
  const before = [a.snapshot(), b.snapshot()];
  for (let i = 0; i < 3; i++) await a.time("summary", Bun.sleep(2));
  await b.time("list", Bun.sleep(2));
  await expect(b.time("detail", Promise.reject(new Error("a failed query")))).rejects.toThrow();
  const after = [a.snapshot(), b.snapshot()];
  const delta = loadTimesBetween(before, after);
  // The failed query is no load time; the detail load before the window is not in the delta.
  expect(delta?.count).toBe(4);
  expect(delta?.p50Ms).toBeGreaterThanOrEqual(1.9);
  expect(delta?.meanMs).toBeGreaterThanOrEqual(1.9);
  expect(loadTimesBetween(before, after, ["summary"])?.count).toBe(3);
  expect(loadTimesBetween(before, [a.snapshot(), {}])).toBeNull();
  a.reset();
  expect(loadTimesBetween(before, [a.snapshot(), b.snapshot()])).toBeNull();
});
