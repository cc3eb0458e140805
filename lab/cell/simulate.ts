/**
 * An offline replay of the server's cache operations: given the requests a run sent (warm-up, then the
 * measured segment, in order, with times), what each strategy's counters should read, plus two ceilings
 * for the measured hit ratio: an offline optimum (Belady MIN, FACTS §12) and an unbounded cache.
 *
 * Exact for a sequential trace: it models server.ts per request (detail, list via the category's generation
 * token, PUT invalidation) over quick-lru 7.3.0's two generations and Redis' `SET PX` expiry. Concurrency
 * (single-flight coalescing, overlapping requests) is not modelled, nor wall-clock gaps between a request's
 * steps: every step of a request happens at its `atMs`. Probe requests (server.ts PROBE_HEADER) are kept out
 * of the server's request counters but go through its cache all the same: pass them with `probe: true`, or the
 * model drifts from the server's caches. Pure and allocation-light, so the runner can check every row
 * (700 000 requests in a few hundred ms).
 */

const MAX_INT4 = 2_147_483_647;
/** Next-use sentinel: no later access this copy can serve. */
const NEVER = 0x7fffffff;
const NOT_RESIDENT = -1;

/**
 * One request as the server handled it. `probe`: a request the lab itself sent with the server's probe
 * header (write_mix's stale-read checker): it changes the caches like any other, and counts in the tiers as
 * the strategies count it, but never in reads, DB queries or distinct keys, as the server's /stats.
 */
export type SimRequest =
  | { op: "detail"; id: number; atMs: number; probe?: boolean }
  | { op: "list"; category: number; page: number; size: number; atMs: number; probe?: boolean }
  | { op: "write"; id: number; atMs: number; probe?: boolean };

/** The file names in strategies/, as server.ts STRATEGY_NAMES. */
export type SimStrategy = "none" | "local" | "redis" | "two_tier";

export interface SimSettings {
  strategy: SimStrategy;
  /** local's quick-lru maxAge; the redis TTL; two_tier's L2 TTL. */
  cacheTtlMs: number;
  /** two_tier's L1 maxAge. */
  l1TtlMs: number;
  /** quick-lru maxSize of local and of two_tier's L1. */
  l1MaxEntries: number;
  /** Ids 1..rows exist; any other id answers 404, is never cached, and a PUT to it invalidates nothing. */
  rows: number;
  /** Category of an existing product: its PUT invalidates that category's list pages. */
  categoryOf: (id: number) => number;
}

export interface TierCounts {
  hits: number;
  misses: number;
}

/** The measured segment only; names as the server's /stats. */
export interface SimResult {
  /** GETs (detail and list): the server's `reads`. */
  reads: number;
  /** Of `reads`, those that needed a DB query: the server's `readDbQueries`. */
  readDbQueries: number;
  /** PUTs, each one DB query: the server's `writes`. */
  writes: number;
  /** readDbQueries + writes: the server's `dbQueries`. */
  dbQueries: number;
  /** Loader calls the strategy counted (`stats().loads`), category generation tokens and probes included. */
  loads: number;
  /** Distinct resources read (an id, a list page): the server's `distinctKeys` for the window. */
  distinctKeys: number;
  /** 1 − readDbQueries / reads; null without reads. */
  hitRatio: number | null;
  tiers: Record<string, TierCounts>;
  /**
   * Request-level hit ratio of the best offline policy for this strategy's capacity and TTLs (see
   * optimalLifetime; for local with a TTL, Belady's rule); null for `none`.
   */
  optimalHitRatio: number | null;
  /** No capacity and no TTL, writes still invalidate: the ceiling of any cache. */
  unboundedHitRatio: number | null;
}

/**
 * quick-lru 7.3.0 (`new QuickLRU({ maxSize, maxAge })`, `get`/`set`/`delete`) with the clock passed in,
 * tracking presence and expiry only. Mirrors `node_modules/quick-lru/index.js` step for step: two maps,
 * `#size` counting inserts into the new one, rotation at `size >= maxSize`, promotion of an old-generation
 * hit through `#set` (which can rotate, and keeps the expiry), lazy expiry at `expiry <= now`.
 */
export class QuickLruModel<K> {
  readonly #maxSize: number;
  readonly #maxAgeMs: number;
  #size = 0;
  /** key → expiry in ms (Infinity: none), as quick-lru's `{ value, expiry }` items. */
  #cache = new Map<K, number>();
  #oldCache = new Map<K, number>();

  constructor(options: { maxSize: number; maxAgeMs?: number }) {
    if (!(options.maxSize > 0)) {
      throw new RangeError(`Cannot model quick-lru: maxSize must be > 0: received ${options.maxSize}`);
    }
    if (options.maxAgeMs !== undefined && !(options.maxAgeMs > 0)) {
      throw new RangeError(`Cannot model quick-lru: maxAgeMs must be > 0: received ${options.maxAgeMs}`);
    }
    this.#maxSize = options.maxSize;
    this.#maxAgeMs = options.maxAgeMs ?? Number.POSITIVE_INFINITY;
  }

  /** quick-lru `get` at `nowMs`: whether it returns the value. */
  get(key: K, nowMs: number): boolean {
    const expiry = this.#cache.get(key);
    if (expiry !== undefined) {
      // quick-lru tests `item.expiry ?` on this path, so an expiry of exactly 0 never expires here.
      if (expiry !== 0 && expiry <= nowMs) {
        this.delete(key);
        return false;
      }
      return true;
    }
    const oldExpiry = this.#oldCache.get(key);
    if (oldExpiry === undefined) return false;
    if (oldExpiry <= nowMs) {
      this.delete(key);
      return false;
    }
    this.#oldCache.delete(key);
    this.#insert(key, oldExpiry);
    return true;
  }

  /** quick-lru `set` at `nowMs` with the cache's maxAge. */
  set(key: K, nowMs: number): void {
    const expiry = this.#maxAgeMs === Number.POSITIVE_INFINITY ? this.#maxAgeMs : nowMs + this.#maxAgeMs;
    // In the new generation: overwritten in place, no insert counted. Otherwise inserted, and a copy still in
    // the old generation stays there (shadowed) until it rotates out or is deleted.
    if (this.#cache.has(key)) this.#cache.set(key, expiry);
    else this.#insert(key, expiry);
  }

  /** quick-lru `delete`: both generations; `#size` drops only for a key in the new one. */
  delete(key: K): boolean {
    const deleted = this.#cache.delete(key);
    if (deleted) this.#size--;
    return this.#oldCache.delete(key) || deleted;
  }

  #insert(key: K, expiry: number): void {
    this.#cache.set(key, expiry);
    this.#size++;
    if (this.#size >= this.#maxSize) {
      this.#size = 0;
      this.#oldCache = this.#cache;
      this.#cache = new Map();
    }
  }
}

/** Redis as the strategies use it: `SET key value PX ttlMs`, GET, DEL; no capacity limit. */
class RedisModel<K> {
  readonly #ttlMs: number;
  #expiresAtMs = new Map<K, number>();

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  get(key: K, nowMs: number): boolean {
    const expiresAtMs = this.#expiresAtMs.get(key);
    if (expiresAtMs === undefined) return false;
    // Redis expires a key once now > when (db.c keyIsExpired): still there at exactly the expiry instant.
    if (nowMs > expiresAtMs) {
      this.#expiresAtMs.delete(key);
      return false;
    }
    return true;
  }

  set(key: K, nowMs: number): void {
    this.#expiresAtMs.set(key, nowMs + this.#ttlMs);
  }

  delete(key: K): void {
    this.#expiresAtMs.delete(key);
  }
}

/** A cache key as the model spells it: product id (> 0), −category for its generation token, list page. */
type ModelKey = number | string;

/** One strategy's `getOrLoad` and `delete`, with its tier counters. */
interface CacheModel {
  tiers: Record<string, TierCounts>;
  /** Whether the loader ran; `cacheable` false is a loader answering undefined (never cached). */
  getOrLoad(key: ModelKey, nowMs: number, cacheable: boolean): boolean;
  delete(key: ModelKey): void;
}

function noneModel(): CacheModel {
  return {
    tiers: {},
    getOrLoad: () => true,
    delete: () => {},
  };
}

/** The store one tier keeps: presence and expiry only. */
interface TierStore {
  get(key: ModelKey, nowMs: number): boolean;
  set(key: ModelKey, nowMs: number): void;
  delete(key: ModelKey): unknown;
}

/** One tier in front of the loader, as local.ts and redis.ts: a hit, or a miss that loads and fills it. */
function singleTierModel(name: string, store: TierStore): CacheModel {
  const counts = { hits: 0, misses: 0 };
  return {
    tiers: { [name]: counts },
    getOrLoad(key, nowMs, cacheable) {
      if (store.get(key, nowMs)) {
        counts.hits++;
        return false;
      }
      counts.misses++;
      if (cacheable) store.set(key, nowMs);
      return true;
    },
    delete: (key) => store.delete(key),
  };
}

function twoTierModel(settings: SimSettings): CacheModel {
  const l1 = new QuickLruModel<ModelKey>({ maxSize: settings.l1MaxEntries, maxAgeMs: settings.l1TtlMs });
  const l2 = new RedisModel<ModelKey>(settings.cacheTtlMs);
  const l1Counts = { hits: 0, misses: 0 };
  const l2Counts = { hits: 0, misses: 0 };
  return {
    tiers: { l1: l1Counts, l2: l2Counts },
    getOrLoad(key, nowMs, cacheable) {
      if (l1.get(key, nowMs)) {
        l1Counts.hits++;
        return false;
      }
      l1Counts.misses++;
      if (l2.get(key, nowMs)) {
        l2Counts.hits++;
        l1.set(key, nowMs); // the backfill starts a fresh L1 maxAge, whatever L2 has left
        return false;
      }
      l2Counts.misses++;
      if (cacheable) {
        l2.set(key, nowMs);
        l1.set(key, nowMs);
      }
      return true;
    },
    delete(key) {
      l1.delete(key);
      l2.delete(key);
    },
  };
}

function createModel(settings: SimSettings): CacheModel {
  switch (settings.strategy) {
    case "none":
      return noneModel();
    case "local":
      return singleTierModel(
        "local",
        new QuickLruModel<ModelKey>({ maxSize: settings.l1MaxEntries, maxAgeMs: settings.cacheTtlMs }),
      );
    case "redis":
      return singleTierModel("redis", new RedisModel<ModelKey>(settings.cacheTtlMs));
    case "two_tier":
      return twoTierModel(settings);
  }
}

/**
 * The request-level key sequence the ceilings run over: one entry per GET, a resource as a dense id
 * (−1: an absent product, never cached), and for each access the next access its copy can serve, with
 * writes already applied (an access after an invalidating write cannot be served by an older copy).
 */
interface LogicalTrace {
  keys: Int32Array;
  timesMs: Float64Array;
  nextUse: Int32Array;
  /** 1 for an access that counts (0: a probe, which may fill or be served but is no read). */
  counted: Uint8Array;
  keyCount: number;
  measuredFrom: number;
}

/** How long a copy can serve, and how many copies fit. */
interface Lifetime {
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
function optimalHits(trace: LogicalTrace, lifetime: Lifetime): number {
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
class LogicalTraceBuilder {
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

function checkInt(value: number, min: number, max: number, what: string): void {
  if (!(Number.isInteger(value) && value >= min && value <= max)) {
    // The server answers 400 without touching the cache or the database: such a request has no replay.
    throw new RangeError(`Cannot simulate: ${what} must be an integer in ${min}..${max}: received ${value}`);
  }
}

function checkSettings(settings: SimSettings): void {
  if (!["none", "local", "redis", "two_tier"].includes(settings.strategy)) {
    throw new RangeError(`Cannot simulate: unknown strategy: received ${settings.strategy}`);
  }
  checkInt(settings.rows, 0, MAX_INT4, "rows");
  if (settings.strategy === "none") return;
  if (!(settings.cacheTtlMs > 0)) {
    throw new RangeError(`Cannot simulate: cacheTtlMs must be > 0: received ${settings.cacheTtlMs}`);
  }
  if (settings.strategy === "redis") return;
  checkInt(settings.l1MaxEntries, 1, MAX_INT4, "l1MaxEntries");
  if (settings.strategy === "two_tier" && !(settings.l1TtlMs > 0)) {
    throw new RangeError(`Cannot simulate: l1TtlMs must be > 0: received ${settings.l1TtlMs}`);
  }
}

/** Replays warm-up then measured requests through the strategy's model; counts the measured ones. */
export function simulate(warmup: SimRequest[], measured: SimRequest[], settings: SimSettings): SimResult {
  checkSettings(settings);
  const model = createModel(settings);
  const trace = new LogicalTraceBuilder();
  // Any cached generation token of a category is the last one generated for it: a load writes the new token
  // to every tier it returns through, and L1 only ever copies L2. So the model keeps tokens here, by category.
  const generations = new Map<number, number>();
  let lastGeneration = 0;
  let reads = 0;
  let readDbQueries = 0;
  let writes = 0;
  let loads = 0;
  let distinct = new Set<number | string>();
  let lastMs = Number.NEGATIVE_INFINITY;

  function replay(request: SimRequest): void {
    const atMs = request.atMs;
    if (!(atMs >= lastMs) || !Number.isFinite(atMs)) {
      throw new RangeError(`Cannot simulate: atMs must be finite and non-decreasing: received ${atMs}`);
    }
    lastMs = atMs;
    const counted = request.probe !== true;
    if (request.op === "detail") {
      checkInt(request.id, 1, MAX_INT4, "a detail id");
      const exists = request.id <= settings.rows;
      trace.detail(request.id, exists, atMs, counted);
      if (counted) {
        reads++;
        distinct.add(request.id);
      }
      if (model.getOrLoad(request.id, atMs, exists)) {
        loads++;
        if (counted) readDbQueries++;
      }
    } else if (request.op === "list") {
      const { category, page, size } = request;
      checkInt(category, 1, MAX_INT4, "a list category");
      checkInt(page, 0, 1_000_000, "a list page");
      checkInt(size, 1, 100, "a list size");
      trace.list(category, page, size, atMs, counted);
      if (counted) {
        reads++;
        distinct.add(`${category}:${page}:${size}`);
      }
      let generation = generations.get(category);
      if (model.getOrLoad(-category, atMs, true)) {
        loads++;
        generation = ++lastGeneration;
        generations.set(category, generation);
      } else if (generation === undefined) {
        throw new Error(`Cannot simulate: a cached generation token never loaded: received ${category}`);
      }
      if (model.getOrLoad(`${category}:${generation}:${page}:${size}`, atMs, true)) {
        loads++;
        if (counted) readDbQueries++;
      }
    } else if (request.op === "write") {
      checkInt(request.id, 1, MAX_INT4, "a write id");
      if (counted) writes++;
      if (request.id <= settings.rows) {
        const category = settings.categoryOf(request.id);
        checkInt(category, 1, MAX_INT4, "categoryOf(id)");
        model.delete(request.id);
        model.delete(-category);
        trace.write(request.id, category);
      }
    } else {
      throw new RangeError(`Cannot simulate: unknown op: received ${(request as { op: unknown }).op}`);
    }
  }

  for (const request of warmup) replay(request);
  reads = 0;
  readDbQueries = 0;
  writes = 0;
  loads = 0;
  distinct = new Set();
  for (const tier of Object.values(model.tiers)) {
    tier.hits = 0;
    tier.misses = 0;
  }
  trace.measuredFrom = trace.length;
  for (const request of measured) replay(request);

  const logical = trace.build();
  const ratio = (hits: number) => (reads === 0 ? null : hits / reads);
  return {
    reads,
    readDbQueries,
    writes,
    dbQueries: readDbQueries + writes,
    loads,
    distinctKeys: distinct.size,
    hitRatio: ratio(reads - readDbQueries),
    tiers: model.tiers,
    optimalHitRatio:
      settings.strategy === "none" ? null : ratio(optimalHits(logical, optimalLifetime(settings))),
    unboundedHitRatio: ratio(
      optimalHits(logical, {
        capacity: Number.POSITIVE_INFINITY,
        ttlMs: Number.POSITIVE_INFINITY,
        ttlInclusive: false,
        extendMs: 0,
      }),
    ),
  };
}

/**
 * What bounds each strategy's request-level hits. local: quick-lru holds at most 2·maxSize − 1 live entries
 * (its generations), each for maxAge. redis: unbounded, so its copies live exactly the TTL and there is no
 * choice left to optimize. two_tier: L2 is unbounded too, but L1 can keep serving a copy after L2 dropped it:
 * up to l1TtlMs past its last L1 fill, and a fill can happen at any access while L2 still holds the copy. With
 * an L1 of unlimited size that is the best two_tier can do, and the greedy replay is optimal for it because a
 * later reload never covers less.
 */
function optimalLifetime(settings: SimSettings): Lifetime {
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

const CANONICAL_INT = /^(0|[1-9]\d{0,9})$/;
const PRODUCTS_URL = /^https?:\/\/[^/?#]+\/products(?:\/([^/?#]*))?(?:\?([^#]*))?$/;

/** A path or query integer as the server's parseId accepts it (a canonical decimal in min..max). */
function parseParam(raw: string, min: number, max: number, what: string, url: string): number {
  const value = CANONICAL_INT.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max)) {
    throw new RangeError(`Cannot simulate: ${what} must be an integer in ${min}..${max}: received ${url}`);
  }
  return value;
}

/** The lab's targets (detail and list GETs, PUT by id) as SimRequests at the given send times. */
export function fromTargets(
  targets: readonly { method: string; url: string }[],
  timesMs: ArrayLike<number>,
): SimRequest[] {
  if (timesMs.length !== targets.length) {
    throw new RangeError(
      `Cannot simulate: one time per target (${targets.length}) expected: received ${timesMs.length}`,
    );
  }
  const requests: SimRequest[] = new Array(targets.length);
  for (let i = 0; i < targets.length; i++) {
    const { method, url } = targets[i] as { method: string; url: string };
    const atMs = timesMs[i] as number;
    const match = PRODUCTS_URL.exec(url);
    if (match === null) {
      throw new RangeError(`Cannot simulate: not a /products URL: received ${url}`);
    }
    const [, idText, query] = match;
    if (idText !== undefined) {
      if (query !== undefined)
        throw new RangeError(`Cannot simulate: a query on a product URL: received ${url}`);
      const id = parseParam(idText, 1, MAX_INT4, "the product id", url);
      if (method === "GET") requests[i] = { op: "detail", id, atMs };
      else if (method === "PUT") requests[i] = { op: "write", id, atMs };
      else throw new RangeError(`Cannot simulate: ${method} of a product: received ${url}`);
      continue;
    }
    if (method !== "GET")
      throw new RangeError(`Cannot simulate: ${method} of a product list: received ${url}`);
    const params = new Map<string, string>();
    for (const pair of query ? query.split("&") : []) {
      const equals = pair.indexOf("=");
      const name = equals < 0 ? pair : pair.slice(0, equals);
      if (name !== "category" && name !== "page" && name !== "size") {
        throw new RangeError(`Cannot simulate: unknown list parameter ${name}: received ${url}`);
      }
      if (params.has(name)) throw new RangeError(`Cannot simulate: ${name} given twice: received ${url}`);
      params.set(name, equals < 0 ? "" : pair.slice(equals + 1));
    }
    const category = params.get("category");
    if (category === undefined)
      throw new RangeError(`Cannot simulate: a list without a category: received ${url}`);
    const page = params.get("page");
    const size = params.get("size");
    requests[i] = {
      op: "list",
      category: parseParam(category, 1, MAX_INT4, "category", url),
      page: page === undefined ? 0 : parseParam(page, 0, 1_000_000, "page", url),
      size: size === undefined ? 20 : parseParam(size, 1, 100, "size", url),
      atMs,
    };
  }
  return requests;
}
