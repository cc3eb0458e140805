/**
 * The ceilings of a measured hit ratio: Belady's MIN (demand paging) at a capacity, with TTLs and invalidating
 * writes, over the request-level key sequence the simulator builds (FACTS §12; libCacheSim Belady.c).
 */
import type { SimSettings } from "./cache_models.ts";

/** Next-use sentinel: no later access this copy can serve. */
const NEVER = 0x7fffffff;
const NOT_RESIDENT = -1;

/**
 * The request-level key sequence the ceilings run over: one entry per GET, a resource as a dense id
 * (−1: an absent product, never cached), and for each access the next access its copy can serve, with
 * writes already applied (an access after an invalidating write cannot be served by an older copy).
 */
export interface LogicalTrace {
  keys: Int32Array;
  timesMs: Float64Array;
  nextUse: Int32Array;
  /** 1 for an access that counts (0: a probe, which may fill or be served but is no read). */
  counted: Uint8Array;
  keyCount: number;
  measuredFrom: number;
}

/** How long a copy can serve, and how many copies fit. */
export interface Lifetime {
  capacity: number;
  /** A copy inserted at s serves t while t < s + ttlMs (quick-lru), or t ≤ s + ttlMs when `ttlInclusive` (Redis). */
  ttlMs: number;
  ttlInclusive: boolean;
  /** Beyond that, it still serves t < a + extendMs, a being its last access within the TTL (two_tier's L1). */
  extendMs: number;
}

/** A max-heap of (priority, key) pairs in typed arrays; stale pairs are skipped by the caller (lazy deletion). */
class PairMaxHeap {
  #priorities: Int32Array;
  #keys: Int32Array;
  #length = 0;
  /** The priority of the pair the last `pop` removed. */
  lastPriority = 0;

  constructor(capacity: number) {
    this.#priorities = new Int32Array(capacity);
    this.#keys = new Int32Array(capacity);
  }

  push(priority: number, key: number): void {
    const priorities = this.#priorities;
    const keys = this.#keys;
    let i = this.#length++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const parentPriority = priorities[parent] as number;
      if (parentPriority >= priority) break;
      priorities[i] = parentPriority;
      keys[i] = keys[parent] as number;
      i = parent;
    }
    priorities[i] = priority;
    keys[i] = key;
  }

  /** Removes the top pair; returns its key and leaves its priority in `lastPriority`. */
  pop(): number {
    const priorities = this.#priorities;
    const keys = this.#keys;
    const topKey = keys[0] as number;
    this.lastPriority = priorities[0] as number;
    const length = --this.#length;
    const priority = priorities[length] as number;
    const key = keys[length] as number;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= length) break;
      if (child + 1 < length && (priorities[child + 1] as number) > (priorities[child] as number)) child++;
      if ((priorities[child] as number) <= priority) break;
      priorities[i] = priorities[child] as number;
      keys[i] = keys[child] as number;
      i = child;
    }
    priorities[i] = priority;
    keys[i] = key;
    return topKey;
  }
}

/**
 * Measured hits of demand MIN (Belady 1966) over the trace: on a miss the copy must be inserted, and when
 * the cache is full the resident copy whose next use is farthest goes (FACTS §12; O(n log n), a max-heap
 * with lazy deletion). Demand, not bypass-OPT (which may decline the insert and hits more, e.g. A B A at
 * capacity 1): the strategies always insert what they load. A copy whose next use falls after its expiry
 * or after an invalidating write has next use ∞, so it goes first. With a TTL this is Belady's rule, not a
 * proven optimum: evicting a near key can pay, since its reload brings a fresher copy.
 */
export function optimalHits(trace: LogicalTrace, lifetime: Lifetime): number {
  const { keys, timesMs, nextUse, counted, measuredFrom } = trace;
  const { capacity, ttlMs, ttlInclusive, extendMs } = lifetime;
  const n = keys.length;
  // The access index the resident copy serves next (NEVER: it serves none), or NOT_RESIDENT.
  const expected = new Int32Array(trace.keyCount).fill(NOT_RESIDENT);
  const insertedMs = new Float64Array(trace.keyCount);
  const lastInTtlMs = new Float64Array(trace.keyCount);
  const heap = Number.isFinite(capacity) ? new PairMaxHeap(n) : null;
  let resident = 0;
  let hits = 0;
  for (let i = 0; i < n; i++) {
    const key = keys[i] as number;
    if (key < 0) continue;
    const atMs = timesMs[i] as number;
    const state = expected[key] as number;
    if (state === i) {
      if (i >= measuredFrom && counted[i] === 1) hits++;
    } else {
      if (state === NOT_RESIDENT) {
        if (heap && resident >= capacity) {
          for (;;) {
            const victim = heap.pop();
            if (expected[victim] === heap.lastPriority) {
              expected[victim] = NOT_RESIDENT;
              resident--;
              break;
            }
          }
        }
        resident++;
      }
      insertedMs[key] = atMs;
    }
    const deadlineMs = (insertedMs[key] as number) + ttlMs;
    if (ttlInclusive ? atMs <= deadlineMs : atMs < deadlineMs) lastInTtlMs[key] = atMs;
    let next = nextUse[i] as number;
    if (next !== NEVER) {
      const nextMs = timesMs[next] as number;
      const alive =
        (ttlInclusive ? nextMs <= deadlineMs : nextMs < deadlineMs) ||
        nextMs < (lastInTtlMs[key] as number) + extendMs;
      if (!alive) next = NEVER;
    }
    expected[key] = next;
    heap?.push(next, key);
  }
  return hits;
}

/** Builds the ceilings' trace from the same requests the model replays. */
export class LogicalTraceBuilder {
  #keys: number[] = [];
  #timesMs: number[] = [];
  #counted: number[] = [];
  #productIds = new Map<number, number>();
  #summaryIds = new Map<number, number>();
  #listIds = new Map<string, number>();
  /** Per dense key: the product id, or the list page's category. */
  #group: number[] = [];
  #isList: number[] = [];
  /** Invalidating writes: accesses before each, and its product id and category. */
  #writeAt: number[] = [];
  #writeId: number[] = [];
  #writeCategory: number[] = [];
  measuredFrom = 0;

  /** Accesses so far. */
  get length(): number {
    return this.#keys.length;
  }

  detail(id: number, exists: boolean, atMs: number, counted: boolean): void {
    let key = exists ? this.#productIds.get(id) : -1;
    if (key === undefined) {
      key = this.#newKey(id, 0);
      this.#productIds.set(id, key);
    }
    this.#keys.push(key);
    this.#timesMs.push(atMs);
    this.#counted.push(counted ? 1 : 0);
  }

  /** A summary: a key of its own, invalidated by a write of its product like the detail. */
  summary(id: number, exists: boolean, atMs: number, counted: boolean): void {
    let key = exists ? this.#summaryIds.get(id) : -1;
    if (key === undefined) {
      key = this.#newKey(id, 0);
      this.#summaryIds.set(id, key);
    }
    this.#keys.push(key);
    this.#timesMs.push(atMs);
    this.#counted.push(counted ? 1 : 0);
  }

  list(category: number, page: number, size: number, atMs: number, counted: boolean): void {
    const name = `${category}:${page}:${size}`;
    let key = this.#listIds.get(name);
    if (key === undefined) {
      key = this.#newKey(category, 1);
      this.#listIds.set(name, key);
    }
    this.#keys.push(key);
    this.#timesMs.push(atMs);
    this.#counted.push(counted ? 1 : 0);
  }

  write(id: number, category: number): void {
    this.#writeAt.push(this.#keys.length);
    this.#writeId.push(id);
    this.#writeCategory.push(category);
  }

  #newKey(group: number, isList: number): number {
    this.#group.push(group);
    this.#isList.push(isList);
    return this.#group.length - 1;
  }

  build(): LogicalTrace {
    const n = this.#keys.length;
    const keys = Int32Array.from(this.#keys);
    const keyCount = this.#group.length;
    const nextUse = new Int32Array(n);
    const nextAccess = new Int32Array(keyCount).fill(NEVER);
    // The next invalidating write, as the number of accesses before it: access j comes after it iff j >= w.
    const nextWriteById = new Map<number, number>();
    const nextWriteByCategory = new Map<number, number>();
    let w = this.#writeAt.length - 1;
    for (let i = n - 1; i >= 0; i--) {
      for (; w >= 0 && (this.#writeAt[w] as number) > i; w--) {
        nextWriteById.set(this.#writeId[w] as number, this.#writeAt[w] as number);
        nextWriteByCategory.set(this.#writeCategory[w] as number, this.#writeAt[w] as number);
      }
      const key = keys[i] as number;
      if (key < 0) {
        nextUse[i] = NEVER;
        continue;
      }
      const group = this.#group[key] as number;
      const limit = (this.#isList[key] ? nextWriteByCategory.get(group) : nextWriteById.get(group)) ?? NEVER;
      const next = nextAccess[key] as number;
      nextUse[i] = next < limit ? next : NEVER;
      nextAccess[key] = i;
    }
    return {
      keys,
      timesMs: Float64Array.from(this.#timesMs),
      nextUse,
      counted: Uint8Array.from(this.#counted),
      keyCount,
      measuredFrom: this.measuredFrom,
    };
  }
}

/**
 * What bounds each strategy's request-level hits. local: quick-lru holds at most 2·maxSize − 1 live entries
 * (its generations), each for maxAge. redis: unbounded, so its copies live exactly the TTL and there is no
 * choice left to optimize. two_tier: L2 is unbounded too, but L1 can keep serving a copy after L2 dropped it:
 * up to l1TtlMs past its last L1 fill, and a fill can happen at any access while L2 still holds the copy. With
 * an L1 of unlimited size that is the best two_tier can do, and the greedy replay is optimal for it because a
 * later reload never covers less.
 */
export function optimalLifetime(settings: SimSettings): Lifetime {
  if (settings.strategy === "local") {
    return {
      capacity: 2 * settings.l1MaxEntries - 1,
      ttlMs: settings.cacheTtlMs,
      ttlInclusive: false,
      extendMs: 0,
    };
  }
  return {
    capacity: Number.POSITIVE_INFINITY,
    ttlMs: settings.cacheTtlMs,
    ttlInclusive: true,
    extendMs: settings.strategy === "two_tier" ? settings.l1TtlMs : 0,
  };
}

/**
 * Demand MIN's hits over a plain key sequence (no writes); `null` is a key that is never cached. With
 * `timesMs` and `ttlMs`, a copy inserted at s serves t < s + ttlMs (quick-lru's rule).
 */
export function beladyHits(
  keys: ArrayLike<string | number | null>,
  options: { capacity: number; timesMs?: ArrayLike<number>; ttlMs?: number },
): number {
  if (!(options.capacity >= 1)) {
    throw new RangeError(`Cannot run MIN: capacity must be >= 1: received ${options.capacity}`);
  }
  const builder = new LogicalTraceBuilder();
  const ids = new Map<string | number, number>();
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    const atMs = options.timesMs?.[i] ?? i;
    if (key === null || key === undefined) {
      builder.detail(0, false, atMs, true);
      continue;
    }
    let id = ids.get(key);
    if (id === undefined) {
      id = ids.size + 1;
      ids.set(key, id);
    }
    builder.detail(id, true, atMs, true);
  }
  return optimalHits(builder.build(), {
    capacity: options.capacity,
    ttlMs: options.ttlMs ?? Number.POSITIVE_INFINITY,
    ttlInclusive: false,
    extendMs: 0,
  });
}
