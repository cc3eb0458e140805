import { describe, expect, test } from "bun:test";
import { bucketOf, percentileMs } from "../../server/load_timer.ts";
import {
  decodeHistogram,
  encodeHistogram,
  mixturePercentileMs,
  type Points,
  pooledPercentileMs,
} from "./histogram.ts";

/** Server buckets of these values, as load_timer.ts keeps them. */
function serverBuckets(values: number[]): [number, number][] {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(bucketOf(v), (counts.get(bucketOf(v)) ?? 0) + 1);
  return [...counts];
}

describe("histogram cells", () => {
  test("a cell's percentiles are the server's within 5%, in a few hundred bytes", () => {
    // 10 000 latencies from 0.02 ms to 80 ms, log-spread, deterministic.
    const values = Array.from({ length: 10_000 }, (_, i) => 0.02 * 4000 ** (((i * 7919) % 10_000) / 10_000));
    const buckets = serverBuckets(values);
    const cell = encodeHistogram(buckets);
    expect(cell.length).toBeLessThan(1_200);
    const points = decodeHistogram(cell);
    expect(points.reduce((n, [, c]) => n + c, 0)).toBe(10_000);
    for (const p of [50, 90, 99, 99.9]) {
      const server = percentileMs(buckets, p) as number;
      const row = mixturePercentileMs([{ points, share: 1, shiftMs: 0 }], p) as number;
      expect(Math.abs(row / server - 1)).toBeLessThan(0.05);
    }
  });

  test("runs, gaps and the empty cell", () => {
    expect(encodeHistogram([])).toBe("");
    expect(decodeHistogram("")).toEqual([]);
    // Row buckets 10 and 12 (a gap of one, written as 0) and 40 (a run of its own).
    expect(
      encodeHistogram([
        [50, 2],
        [62, 1],
        [200, 3],
        [201, 1],
      ]),
    ).toBe("10:2,0,1;40:4");
    expect(decodeHistogram("10:2,0,1;40:4").map(([, n]) => n)).toEqual([2, 1, 4]);
  });

  test("a malformed cell is an error naming it, never an empty distribution", () => {
    expect(() => decodeHistogram("10:2,x")).toThrow("not a histogram cell");
    expect(() => decodeHistogram("ten")).toThrow("not a histogram cell");
  });
});

describe("mixtures", () => {
  const at = (ms: number, n = 100): Points => [[ms, n]];

  test("the p99 of a mixture is read from the mixture, not a sum or average of p99s", () => {
    // 90% answered at 1 ms, 10% at 10 ms: the p99 is 10, the p50 is 1.
    const components = [
      { points: at(1), share: 0.9, shiftMs: 0 },
      { points: at(10), share: 0.1, shiftMs: 0 },
    ];
    expect(mixturePercentileMs(components, 99)).toBe(10);
    expect(mixturePercentileMs(components, 50)).toBe(1);
    // At a 0.5% share the slow part is under the p99: the p99 is the fast one's.
    expect(
      mixturePercentileMs([components[0] as never, { points: at(10), share: 0.005, shiftMs: 0 }], 99),
    ).toBe(1);
  });

  test("shares weigh components whatever their own counts, and shifts move them", () => {
    const components = [
      { points: at(1, 1_000_000), share: 0.5, shiftMs: 0 },
      { points: at(2, 1), share: 0.5, shiftMs: 5 },
    ];
    expect(mixturePercentileMs(components, 75)).toBe(7);
    expect(mixturePercentileMs(components, 25)).toBe(1);
  });

  test("no points under a share is no figure", () => {
    expect(mixturePercentileMs([{ points: [], share: 1, shiftMs: 0 }], 99)).toBeNull();
    expect(pooledPercentileMs(["", null, undefined], 99)).toBeNull();
    expect(pooledPercentileMs([encodeHistogram([[300, 99]]), encodeHistogram([[900, 1]])], 99)).toBeLessThan(
      pooledPercentileMs([encodeHistogram([[300, 98]]), encodeHistogram([[900, 2]])], 99) as number,
    );
  });
});
