import { describe, expect, test } from "bun:test";
import QuickLRU from "quick-lru";
import { seededRandom } from "../plan/targets.ts";
import { optimalHitsWeighted } from "../sim/optimum.ts";
import { createPolicy, POLICY_NAMES } from "../sim/policies/policies.ts";
import { readSizes, readsTrace } from "./mrc.ts";
import {
  type ReplayedSegment,
  replayedCapacities,
  replayedCurves,
  replayedPositions,
  subTrace,
} from "./replayed_curves.ts";
import { type CompactTrace, compactTrace, type TraceOp, type TraceRequest } from "./trace.ts";

/** A random trace over `keys` keys, skewed (u² draws), 8% writes and 4% deletes, sizes on most requests. */
function randomTrace(seed: number, requests: number, keys: number): CompactTrace {
  const random = seededRandom(seed);
  const list: TraceRequest[] = [];
  for (let i = 0; i < requests; i++) {
    const u = random();
    const draw = random();
    const op: TraceOp = draw < 0.04 ? "delete" : draw < 0.12 ? "write" : "read";
    const sizeBytes = random() < 0.1 ? null : 1 + Math.floor(random() * 4_000);
    list.push({ key: `k${Math.floor(u * u * keys)}`, op, sizeBytes, tsMs: null });
  }
  return compactTrace(list);
}

/** A cell that sent `warm` of a `warmList` warm-up list and `measured` of the list after it. */
function segment(warmList: number, warm: number, measured: number): ReplayedSegment {
  return {
    warmList,
    warmSent: warm === 0 && warmList === 0 ? null : { kind: "prefix", count: warm },
    measuredFrom: warmList,
    measuredList: measured + 20,
    measuredSent: { kind: "prefix", count: measured },
    seed: 1,
  };
}

/** A textbook cache replayed over the sent stream, hits counted from request `from` on: [hits, hit bytes]. */
function measuredOnly(
  sent: CompactTrace,
  from: number,
  cache: { get(key: number): boolean; set(key: number): void; delete(key: number): void },
): [number, number] {
  const bytes = readSizes(sent);
  let hits = 0;
  let hitBytes = 0;
  for (let i = 0; i < sent.keyIndex.length; i++) {
    const key = sent.keyIndex[i] as number;
    if (sent.op[i] !== 0) cache.delete(key);
    else if (cache.get(key)) {
      if (i >= from) {
        hits++;
        hitBytes += Math.max(0, bytes?.[i] ?? 0);
      }
    } else cache.set(key);
  }
  return [hits, hitBytes];
}

function textbookLru(capacity: number) {
  const recent = new Map<number, true>();
  return {
    get(key: number) {
      if (!recent.has(key)) return false;
      recent.delete(key);
      recent.set(key, true);
      return true;
    },
    set(key: number) {
      recent.set(key, true);
      if (recent.size > capacity) recent.delete(recent.keys().next().value as number);
    },
    delete(key: number) {
      recent.delete(key);
    },
  };
}

function quickLru(maxSize: number) {
  const cache = new QuickLRU<number, true>({ maxSize });
  return {
    get: (key: number) => cache.get(key) === true,
    set: (key: number) => void cache.set(key, true),
    delete: (key: number) => void cache.delete(key),
  };
}

describe("the replayed segment's curves", () => {
  const cases = [1, 2, 3].map((seed) => ({ seed, trace: randomTrace(seed, 4_000, 400) }));

  test("positions: the warm-up's sent prefix, then the measured run's from where its list starts", () => {
    const { positions, warmup } = replayedPositions(segment(10, 8, 5));
    expect(warmup).toBe(8);
    expect([...positions]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14]);
  });

  for (const { seed, trace } of cases) {
    test(`seed ${seed}: LRU and local by subtraction, and the policies, equal a measured-only replay of the sent stream`, () => {
      const seg = segment(1_200, 1_150, 2_000);
      const { positions, warmup } = replayedPositions(seg);
      const sent = subTrace(trace, positions);
      const curves = replayedCurves(trace, seg, 37);
      const reads = [...sent.op].filter((op, i) => op === 0 && i >= warmup).length;
      expect(curves.reads).toBe(reads);
      expect(curves.warmupRequests).toBe(1_150);
      expect([curves.fromPosition, curves.toPosition]).toEqual([1_200, 3_200]);
      const bytes = readSizes(sent) as Int32Array;
      let readBytes = 0;
      for (let i = warmup; i < sent.op.length; i++)
        if (sent.op[i] === 0) readBytes += Math.max(0, bytes[i] as number);
      for (const [s, point] of curves.curves.lru.entries()) {
        const [hits, hitBytes] = measuredOnly(sent, warmup, textbookLru(point.entries));
        expect(point.hits).toBe(hits);
        expect(point.hitRatio).toBeCloseTo(hits / reads, 12);
        expect(point.byteHitRatio as number).toBeCloseTo(hitBytes / readBytes, 12);
        const local = curves.curves.local[s];
        const [localHits, localBytes] = measuredOnly(sent, warmup, quickLru(point.entries));
        expect(local?.hits).toBe(localHits);
        expect(local?.byteHitRatio as number).toBeCloseTo(localBytes / readBytes, 12);
        for (const policy of POLICY_NAMES) {
          const model = createPolicy(policy, { capacity: point.entries, keyCount: trace.keys.length });
          const [policyHits, policyBytes] = measuredOnly(sent, warmup, model);
          expect([policy, curves.curves[policy][s]?.hits]).toEqual([policy, policyHits]);
          expect(curves.curves[policy][s]?.byteHitRatio as number).toBeCloseTo(policyBytes / readBytes, 12);
        }
      }
      // The configured capacity is among them, marked; the 100% one is the sent stream's working set.
      expect(curves.curves.lru.filter((point) => point.configured).map((point) => point.entries)).toEqual([
        37,
      ]);
      expect(curves.curves.lru.at(-1)?.entries).toBe(curves.workingSetKeys);
    });

    test(`seed ${seed}: MIN counted from the first measured read equals weights 0 on the warm-up, 1 after`, () => {
      const seg = segment(900, 880, 1_500);
      const { positions, warmup } = replayedPositions(seg);
      const sent = subTrace(trace, positions);
      const allReads = [...sent.op].filter((op) => op === 0).length;
      const warmReads = [...sent.op].slice(0, warmup).filter((op) => op === 0).length;
      const { logical } = readsTrace(sent, allReads, readSizes(sent));
      const weights = Float64Array.from({ length: allReads }, (_, r) => (r < warmReads ? 0 : 1));
      const curves = replayedCurves(trace, seg, null);
      for (const point of curves.curves.belady) {
        const lifetime = {
          capacity: point.entries,
          ttlMs: Number.POSITIVE_INFINITY,
          ttlInclusive: false,
          extendMs: 0,
        };
        expect(point.hits).toBe(optimalHitsWeighted(logical, lifetime, weights).weightedHits);
      }
      // Curves of LRU and MIN never fall as capacity grows.
      for (const method of ["lru", "belady"] as const) {
        const ratios = curves.curves[method].map((point) => point.hitRatio);
        expect(ratios).toEqual([...ratios].sort((a, b) => a - b));
      }
    });
  }

  test("capacities: the default sizes of the working set, the configured one marked or added", () => {
    expect(replayedCapacities(1_000, 42).map((c) => [c.label, c.entries, c.configured])).toEqual([
      ["0.1%", 1, false],
      ["1%", 10, false],
      ["42", 42, true],
      ["5%", 50, false],
      ["10%", 100, false],
      ["25%", 250, false],
      ["50%", 500, false],
      ["100%", 1_000, false],
    ]);
    const marked = replayedCapacities(1_000, 50).filter((c) => c.entries === 50);
    expect(marked).toEqual([{ label: "5%", entries: 50, configured: true }]);
  });

  test("a segment past the trace's end, or a measured run without a read, is refused", () => {
    const trace = randomTrace(9, 100, 20);
    expect(() => replayedCurves(trace, segment(50, 50, 60), null)).toThrow(
      "position 100 is past its 100 requests",
    );
    const writes = compactTrace([
      { key: "a", op: "read", sizeBytes: null, tsMs: null },
      { key: "a", op: "write", sizeBytes: null, tsMs: null },
    ]);
    expect(() => replayedCurves(writes, segment(1, 1, 1), null)).toThrow("its measured run sent no read");
  });
});
