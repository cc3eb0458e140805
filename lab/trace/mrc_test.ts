import { describe, expect, test } from "bun:test";
import QuickLRU from "quick-lru";
import { seededRandom } from "../plan/targets.ts";
import { QuickLruModel } from "../sim/cache_models.ts";
import { createPolicy, POLICY_NAMES } from "../sim/policies/policies.ts";
import { lruHits } from "./lru_curve.ts";
import {
  type CurveCapacity,
  MRC_METHODS,
  missRatioCurves,
  parseCapacities,
  quickLruHits,
  readSizes,
} from "./mrc.ts";
import { type CompactTrace, compactTrace, type TraceOp, type TraceRequest } from "./trace.ts";

/** A random trace over `keys` keys, skewed (u² draws), with writes and deletes at the given shares. */
function randomTrace(
  seed: number,
  options: { requests: number; keys: number; writes: number; deletes: number },
) {
  const random = seededRandom(seed);
  const requests: TraceRequest[] = [];
  for (let i = 0; i < options.requests; i++) {
    const u = random();
    const key = `k${Math.floor(u * u * options.keys)}`;
    const draw = random();
    const op: TraceOp =
      draw < options.deletes ? "delete" : draw < options.deletes + options.writes ? "write" : "read";
    // Some reads carry no size, so the byte count must fall back on the key's earlier one.
    const sizeBytes = random() < 0.1 ? null : 1 + Math.floor(random() * 5_000);
    requests.push({ key, op, sizeBytes, tsMs: null });
  }
  return compactTrace(requests);
}

const TRACES = [1, 2, 3, 4].flatMap((seed) => [
  {
    name: `seed ${seed}, reads only`,
    trace: randomTrace(seed, { requests: 3_000, keys: 300, writes: 0, deletes: 0 }),
  },
  {
    name: `seed ${seed}, 10% writes, 5% deletes`,
    trace: randomTrace(seed, { requests: 3_000, keys: 300, writes: 0.1, deletes: 0.05 }),
  },
]);

function entries(...counts: number[]): CurveCapacity[] {
  return counts.map((count) => ({ label: String(count), entries: count }));
}

/** The cache every curve replays, step by step: [hits, hit bytes] of `policy` at `capacity`. */
function replay(
  trace: CompactTrace,
  cache: { get(key: number): boolean; insert(key: number): void; delete(key: number): void },
): [number, number] {
  const bytes = readSizes(trace);
  let hits = 0;
  let hitBytes = 0;
  for (let i = 0; i < trace.keyIndex.length; i++) {
    const key = trace.keyIndex[i] as number;
    if (trace.op[i] !== 0) cache.delete(key);
    else if (cache.get(key)) {
      hits++;
      hitBytes += Math.max(0, bytes?.[i] ?? 0);
    } else cache.insert(key);
  }
  return [hits, hitBytes];
}

/** A textbook LRU: a Map in recency order. */
function naiveLru(capacity: number) {
  const map = new Map<number, true>();
  return {
    get(key: number) {
      if (!map.delete(key)) return false;
      map.set(key, true);
      return true;
    },
    insert(key: number) {
      map.set(key, true);
      if (map.size > capacity) map.delete(map.keys().next().value as number);
    },
    delete: (key: number) => map.delete(key),
  };
}

/** Demand MIN by brute force: on a full miss, evict the resident key read farthest ahead (∞ past an invalidation). */
function naiveBelady(trace: CompactTrace, capacity: number): [number, number] {
  const n = trace.keyIndex.length;
  let i = 0;
  // Per request, the next request of its key (n: none); a key's next read is ∞ if that request is no read.
  const nextOf = new Int32Array(n);
  const seen = new Map<number, number>();
  for (let j = n - 1; j >= 0; j--) {
    const key = trace.keyIndex[j] as number;
    nextOf[j] = seen.get(key) ?? n;
    seen.set(key, j);
  }
  const lastAt = new Map<number, number>();
  const nextRead = (key: number) => {
    const next = nextOf[lastAt.get(key) as number] as number;
    return next < n && trace.op[next] === 0 ? next : Number.POSITIVE_INFINITY;
  };
  const resident = new Set<number>();
  const cache = {
    get: (key: number) => resident.has(key),
    insert(key: number) {
      if (resident.size >= capacity) {
        let victim = -1;
        let farthest = -1;
        for (const other of resident) {
          const next = nextRead(other);
          if (next > farthest) [victim, farthest] = [other, next];
        }
        resident.delete(victim);
      }
      resident.add(key);
    },
    delete: (key: number) => resident.delete(key),
  };
  const bytes = readSizes(trace);
  let hits = 0;
  let hitBytes = 0;
  for (; i < n; i++) {
    const key = trace.keyIndex[i] as number;
    lastAt.set(key, i);
    if (trace.op[i] !== 0) cache.delete(key);
    else if (cache.get(key)) {
      hits++;
      hitBytes += Math.max(0, bytes?.[i] ?? 0);
    } else cache.insert(key);
  }
  return [hits, hitBytes];
}

describe("LRU by stack distances", () => {
  for (const { name, trace } of TRACES) {
    test(`equals a naive LRU at every capacity, hits and bytes (${name})`, () => {
      const capacities = Array.from({ length: 60 }, (_, c) => c * 5 + 1);
      const got = lruHits(trace.keyIndex, trace.op, {
        keyCount: trace.keys.length,
        capacities,
        readBytes: readSizes(trace),
      });
      capacities.forEach((capacity, s) => {
        expect([got.hits[s], got.hitBytes[s]]).toEqual(replay(trace, naiveLru(capacity)));
      });
    });
  }

  test("a delete ends the key's stack entry and frees its slot: plain Mattson would be wrong here", () => {
    // Capacity 1: a, b, delete b, a. LRU evicted a for b, so a misses; the stack with b removed puts a at
    // distance 0 (a false hit). Capacity 2 frees b's slot and a hits.
    const trace = compactTrace(
      (["a", "b", "b", "a"] as const).map((key, i) => ({
        key,
        op: i === 2 ? "delete" : "read",
        sizeBytes: null,
        tsMs: null,
      })),
    );
    const got = lruHits(trace.keyIndex, trace.op, { keyCount: 2, capacities: [1, 2], readBytes: null });
    expect([...got.hits]).toEqual([0, 1]);
    expect([...got.hits]).toEqual([replay(trace, naiveLru(1))[0], replay(trace, naiveLru(2))[0]]);
  });
});

describe("the local curve (quick-lru)", () => {
  for (const { name, trace } of TRACES) {
    test(`equals quick-lru@7.3.0 and the simulator's QuickLruModel (${name})`, () => {
      for (const maxSize of [1, 2, 3, 7, 20, 64, 150, 299, 300, 400]) {
        const real = new QuickLRU<number, true>({ maxSize });
        const expected = replay(trace, {
          get: (key) => real.get(key) !== undefined,
          insert: (key) => real.set(key, true),
          delete: (key) => real.delete(key),
        });
        const model = new QuickLruModel<number>({ maxSize });
        const modelled = replay(trace, {
          get: (key) => model.get(key, 0),
          insert: (key) => model.set(key, 0),
          delete: (key) => model.delete(key),
        });
        expect(quickLruHits(trace, maxSize, readSizes(trace))).toEqual(expected);
        expect(modelled).toEqual(expected);
      }
    });
  }
});

describe("Belady's MIN", () => {
  for (const { name, trace } of TRACES.slice(0, 4)) {
    test(`equals a brute-force demand MIN, hits and bytes (${name})`, () => {
      const capacities = [1, 2, 5, 17, 60, 150, 300];
      const curves = missRatioCurves(trace, entries(...capacities));
      capacities.forEach((capacity, s) => {
        const point = curves.curves.belady[s];
        const [hits, hitBytes] = naiveBelady(trace, capacity);
        expect(point?.hits).toBe(hits);
        expect(point?.byteHitRatio).toBeCloseTo(hitBytes / (curves.readBytes as number), 12);
      });
    });
  }
});

test("Belady's MIN equals a brute-force one on a trace long enough for four bitset levels", () => {
  // 40 000 requests: positions beyond 32^3, so the next-use set of optimum.ts stacks four levels.
  const trace = randomTrace(9, { requests: 40_000, keys: 60, writes: 0.02, deletes: 0.01 });
  const curves = missRatioCurves(trace, entries(1, 4, 15));
  for (const point of curves.curves.belady) expect(point.hits).toBe(naiveBelady(trace, point.entries)[0]);
});

describe("missRatioCurves", () => {
  for (const { name, trace } of TRACES) {
    test(`Belady is never below LRU, and LRU and Belady never fall as capacity grows (${name})`, () => {
      const curves = missRatioCurves(trace, entries(...Array.from({ length: 40 }, (_, c) => c * 8 + 1)));
      const { lru, belady } = curves.curves;
      lru.forEach((point, s) => {
        expect((belady[s] as typeof point).hits).toBeGreaterThanOrEqual(point.hits);
        if (s > 0) {
          expect(point.hits).toBeGreaterThanOrEqual((lru[s - 1] as typeof point).hits);
          expect((belady[s] as typeof point).hits).toBeGreaterThanOrEqual(
            (belady[s - 1] as typeof point).hits,
          );
        }
      });
    });
  }

  for (const { name, trace } of TRACES.slice(0, 4)) {
    test(`each policy curve is its model replayed request by request, hits and bytes (${name})`, () => {
      const capacities = entries(1, 7, 30, 120);
      const curves = missRatioCurves(trace, capacities);
      for (const policy of POLICY_NAMES) {
        curves.curves[policy].forEach((point, s) => {
          const model = createPolicy(policy, { capacity: point.entries, keyCount: trace.keys.length });
          const [hits, hitBytes] = replay(trace, {
            get: (k) => model.get(k),
            insert: (k) => model.set(k),
            delete: (k) => model.delete(k),
          });
          expect([point.entries, point.hits]).toEqual([capacities[s]?.entries as number, hits]);
          expect(point.byteHitRatio as number).toBeCloseTo(hitBytes / (curves.readBytes as number), 12);
        });
      }
    });
  }

  test("with room for every key no policy evicts: each equals LRU, invalidations included", () => {
    const trace = randomTrace(5, { requests: 3_000, keys: 300, writes: 0.1, deletes: 0.05 });
    const curves = missRatioCurves(trace, entries(trace.keys.length));
    for (const policy of POLICY_NAMES)
      expect(curves.curves[policy][0]?.hits).toBe(curves.curves.lru[0]?.hits);
  });

  test("the local curve can fall as capacity grows: quick-lru's generations are no stack algorithm", () => {
    const random = seededRandom(1);
    const requests = Array.from({ length: 3_000 }, (): TraceRequest => {
      const u = random();
      return { key: `k${Math.floor(u * u * 300)}`, op: "read", sizeBytes: null, tsMs: null };
    });
    const trace = compactTrace(requests);
    expect(quickLruHits(trace, 51, null)[0]).toBeGreaterThan(quickLruHits(trace, 52, null)[0]);
  });

  test("counts reads only, and gives byte hit ratios from the reads' sizes (null without sizes)", () => {
    const requests: TraceRequest[] = [
      { key: "a", op: "read", sizeBytes: 100, tsMs: null },
      { key: "a", op: "read", sizeBytes: null, tsMs: null }, // a's size is still 100
      { key: "b", op: "write", sizeBytes: 300, tsMs: null },
      { key: "b", op: "read", sizeBytes: null, tsMs: null }, // 300, from the write; a miss after it
      { key: "b", op: "read", sizeBytes: 300, tsMs: null },
    ];
    const curves = missRatioCurves(compactTrace(requests), entries(10));
    expect(curves.reads).toBe(4);
    expect(curves.sizedReads).toBe(4);
    expect(curves.readBytes).toBe(800);
    for (const method of MRC_METHODS) {
      expect(curves.curves[method][0]).toMatchObject({ hits: 2, hitRatio: 0.5, byteHitRatio: 400 / 800 });
    }
    const unsized = missRatioCurves(
      compactTrace(requests.map((r) => ({ ...r, sizeBytes: null }))),
      entries(10),
    );
    expect(unsized.readBytes).toBeNull();
    expect(unsized.curves.lru[0]?.byteHitRatio).toBeNull();
  });

  test("refuses a trace without reads and a capacity below one entry", () => {
    const writes = compactTrace([{ key: "a", op: "write", sizeBytes: null, tsMs: null }]);
    expect(() => missRatioCurves(writes, entries(1))).toThrow("the trace has no reads: received 1 requests");
    const reads = compactTrace([{ key: "a", op: "read", sizeBytes: null, tsMs: null }]);
    expect(() => missRatioCurves(reads, entries(0))).toThrow("a capacity must be ≥ 1 entry: received 0");
  });
});

describe("parseCapacities", () => {
  test("reads percentages of the working set and entry counts, sorted, at least one entry", () => {
    expect(parseCapacities("10%,0.1%,100%,5,.5%", 1_000)).toEqual([
      { label: "0.1%", entries: 1 },
      { label: "5", entries: 5 },
      { label: ".5%", entries: 5 },
      { label: "10%", entries: 100 },
      { label: "100%", entries: 1_000 },
    ]);
    expect(parseCapacities("0.1%", 10)).toEqual([{ label: "0.1%", entries: 1 }]);
  });

  test("refuses anything else, naming both forms", () => {
    for (const raw of ["", "10,,20", "0", "-5", "1.5", "0%", "150%", "ten", "5%x"]) {
      expect(() => parseCapacities(raw, 1_000)).toThrow(
        "expected percentages of the working set (0.1%,1%,…) or entry counts (100,1000,…)",
      );
    }
  });
});
