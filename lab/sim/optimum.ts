/**
 * The ceilings of a measured hit ratio: Belady's MIN (demand paging) at a capacity, with TTLs and invalidating
 * writes, over the request-level key sequence the simulator builds (FACTS §12; libCacheSim Belady.c).
 */
import type { SimSettings } from "./cache_models.ts";

/** Next-use sentinel: no later access this copy can serve. */
export const NEVER = 0x7fffffff;
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
 * The next-use positions of the resident copies, as a bitset with a summary word per 32 words, level upon
 * level: set, clear and "the farthest" each touch one word per level (⌈log32 n⌉ of them), in about
 * n/8 bytes. Each live copy's next use is a distinct access index, so the position names its key.
 */
class NextUseSet {
  readonly #levels: Uint32Array[] = [];

  constructor(positions: number) {
    let words = positions;
    do {
      words = Math.ceil(words / 32);
      this.#levels.push(new Uint32Array(words));
    } while (words > 1);
  }

  add(position: number): void {
    const levels = this.#levels;
    let p = position;
    for (let l = 0; l < levels.length; l++) {
      const level = levels[l] as Uint32Array;
      const word = p >>> 5;
      const before = level[word] as number;
      level[word] = before | (1 << (p & 31));
      if (before !== 0) return; // the levels above already say this word holds a bit
      p = word;
    }
  }

  delete(position: number): void {
    const levels = this.#levels;
    let p = position;
    for (let l = 0; l < levels.length; l++) {
      const level = levels[l] as Uint32Array;
      const word = p >>> 5;
      const after = (level[word] as number) & ~(1 << (p & 31));
      level[word] = after;
      if (after !== 0) return;
      p = word;
    }
  }

  /** The highest position held (the set must not be empty). */
  max(): number {
    const levels = this.#levels;
    let p = 0;
    for (let l = levels.length - 1; l >= 0; l--) {
      p = p * 32 + 31 - Math.clz32((levels[l] as Uint32Array)[p] as number);
    }
    return p;
  }
}

/**
 * Measured hits of demand MIN (Belady 1966) over the trace: on a miss the copy must be inserted, and when
 * the cache is full the resident copy whose next use is farthest goes (FACTS §12; a bitset of next uses,
 * O(n log32 n)). Demand, not bypass-OPT (which may decline the insert and hits more, e.g. A B A at
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
  // The access index the resident copy serves next, or NOT_RESIDENT.
  const expected = new Int32Array(trace.keyCount).fill(NOT_RESIDENT);
  const insertedMs = new Float64Array(trace.keyCount);
  const lastInTtlMs = new Float64Array(trace.keyCount);
  // A capacity of at least every key never evicts: no set to keep.
  const farthest = capacity < trace.keyCount ? new NextUseSet(n) : null;
  const timeless = ttlMs === Number.POSITIVE_INFINITY && extendMs === 0;
  // Copies that serve no later access are dropped at once rather than kept until MIN evicts them first:
  // a free slot and such a copy count alike, so the live copies and the hits are MIN's own.
  let resident = 0;
  let hits = 0;
  let weightedHits = 0;
  for (let i = 0; i < n; i++) {
    const key = keys[i] as number;
    if (key < 0) continue;
    const atMs = timesMs[i] as number;
    if (expected[key] === i) {
      farthest?.delete(i);
      resident--;
      if (i >= measuredFrom && counted[i] === 1) {
        hits++;
        const weight = weights === null ? -1 : (weights[i] as number);
        if (weight > 0) weightedHits += weight;
      }
    } else {
      if (farthest && resident >= capacity) {
        const victimAt = farthest.max();
        farthest.delete(victimAt);
        expected[keys[victimAt] as number] = NOT_RESIDENT;
        resident--;
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
    if (next === NEVER) {
      expected[key] = NOT_RESIDENT;
      continue;
    }
    expected[key] = next;
    farthest?.add(next);
    resident++;
  }
  return { hits, weightedHits };
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
 * later reload never covers less. tracking takes the same ceiling (it fills L1 only on an L2 hit: never more).
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
    extendMs: settings.strategy === "two_tier" || settings.strategy === "tracking" ? settings.l1TtlMs : 0,
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
