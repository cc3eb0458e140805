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

/**
 * A max-heap of the resident keys by next use, in typed arrays, each key at most once (its slot kept in
 * `#slot`): a hit moves its key in place, so the heap never outgrows the capacity and holds no stale pair.
 */
class KeyedMaxHeap {
  #priorities: Int32Array;
  #keys: Int32Array;
  /** Per key, its index in the heap, or −1. */
  #slot: Int32Array;
  #length = 0;

  constructor(capacity: number, keyCount: number) {
    this.#priorities = new Int32Array(capacity);
    this.#keys = new Int32Array(capacity);
    this.#slot = new Int32Array(keyCount).fill(-1);
  }

  /** Puts `key` in at `priority`, or moves it there. */
  set(key: number, priority: number): void {
    const at = this.#slot[key] as number;
    if (at < 0) this.#up(this.#length++, key, priority);
    else if (priority >= (this.#priorities[at] as number)) this.#up(at, key, priority);
    else this.#down(at, key, priority);
  }

  /** Removes and returns the key of the highest priority. */
  pop(): number {
    const top = this.#keys[0] as number;
    this.#slot[top] = -1;
    const length = --this.#length;
    if (length > 0) this.#down(0, this.#keys[length] as number, this.#priorities[length] as number);
    return top;
  }

  #place(i: number, key: number, priority: number): void {
    this.#priorities[i] = priority;
    this.#keys[i] = key;
    this.#slot[key] = i;
  }

  #up(from: number, key: number, priority: number): void {
    let i = from;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.#priorities[parent] as number) >= priority) break;
      this.#place(i, this.#keys[parent] as number, this.#priorities[parent] as number);
      i = parent;
    }
    this.#place(i, key, priority);
  }

  #down(from: number, key: number, priority: number): void {
    const priorities = this.#priorities;
    const length = this.#length;
    let i = from;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= length) break;
      if (child + 1 < length && (priorities[child + 1] as number) > (priorities[child] as number)) child++;
      if ((priorities[child] as number) <= priority) break;
      this.#place(i, this.#keys[child] as number, priorities[child] as number);
      i = child;
    }
    this.#place(i, key, priority);
  }
}

/**
 * Measured hits of demand MIN (Belady 1966) over the trace: on a miss the copy must be inserted, and when
 * the cache is full the resident copy whose next use is farthest goes (FACTS §12; O(n log C), a max-heap
 * of the resident keys). Demand, not bypass-OPT (which may decline the insert and hits more, e.g. A B A at
 * capacity 1): the strategies always insert what they load. A copy whose next use falls after its expiry
 * or after an invalidating write has next use ∞, so it goes first. With a TTL this is Belady's rule, not a
 * proven optimum: evicting a near key can pay, since its reload brings a fresher copy.
 */
export function optimalHits(trace: LogicalTrace, lifetime: Lifetime): number {
  return optimalHitsWeighted(trace, lifetime, null).hits;
}

/** optimalHits, and the Σ `weights[i]` (e.g. value bytes; a negative weight counts nothing) of the hits. */
export function optimalHitsWeighted(
  trace: LogicalTrace,
  lifetime: Lifetime,
  weights: ArrayLike<number> | null,
): { hits: number; weightedHits: number } {
  const { keys, timesMs, nextUse, counted, measuredFrom } = trace;
  const { capacity, ttlMs, ttlInclusive, extendMs } = lifetime;
  const n = keys.length;
  // The access index the resident copy serves next (NEVER: it serves none), or NOT_RESIDENT.
  const expected = new Int32Array(trace.keyCount).fill(NOT_RESIDENT);
  const insertedMs = new Float64Array(trace.keyCount);
  const lastInTtlMs = new Float64Array(trace.keyCount);
  // A capacity of at least every key never evicts: no heap to keep.
  const heap = capacity < trace.keyCount ? new KeyedMaxHeap(capacity, trace.keyCount) : null;
  const timeless = ttlMs === Number.POSITIVE_INFINITY && extendMs === 0;
  let resident = 0;
  let hits = 0;
  let weightedHits = 0;
  for (let i = 0; i < n; i++) {
    const key = keys[i] as number;
    if (key < 0) continue;
    const atMs = timesMs[i] as number;
    const state = expected[key] as number;
    if (state === i) {
      if (i >= measuredFrom && counted[i] === 1) {
        hits++;
        const weight = weights === null ? -1 : (weights[i] as number);
        if (weight > 0) weightedHits += weight;
      }
    } else {
      if (state === NOT_RESIDENT) {
        if (heap && resident >= capacity) {
          expected[heap.pop()] = NOT_RESIDENT;
          resident--;
        }
        resident++;
      }
      insertedMs[key] = atMs;
    }
    let next = nextUse[i] as number;
    // Without a TTL every copy lives to its next use: no clock to read (a trace's curves run this way).
    if (!timeless) {
      const deadlineMs = (insertedMs[key] as number) + ttlMs;
      if (ttlInclusive ? atMs <= deadlineMs : atMs < deadlineMs) lastInTtlMs[key] = atMs;
      if (next !== NEVER) {
        const nextMs = timesMs[next] as number;
        const alive =
          (ttlInclusive ? nextMs <= deadlineMs : nextMs < deadlineMs) ||
          nextMs < (lastInTtlMs[key] as number) + extendMs;
        if (!alive) next = NEVER;
      }
    }
    expected[key] = next;
    heap?.set(key, next);
  }
  return { hits, weightedHits };
}

/** Builds the ceilings' trace from the same requests the model replays. */
export class LogicalTraceBuilder {
  #keys: number[] = [];
  #timesMs: number[] = [];
  #counted: number[] = [];
  #productIds = new Map<number, number>();
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
