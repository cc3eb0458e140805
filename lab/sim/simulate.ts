/**
 * An offline replay of the server's cache operations: given the requests a run sent (warm-up, then the
 * measured segment, in order, with times), what each strategy's counters should read, plus two ceilings
 * for the measured hit ratio: an offline optimum (Belady MIN, FACTS §12) and an unbounded cache.
 *
 * Exact for a sequential trace: it models server.ts per request (detail, summary, list via the category's
 * generation token, PUT invalidation) over quick-lru 7.3.0's two generations and Redis' `SET PX` expiry. Concurrency
 * (single-flight coalescing, overlapping requests) is not modelled, nor wall-clock gaps between a request's
 * steps: every step of a request happens at its `atMs`. Probe requests (server_config.ts PROBE_PREFIX) are kept out
 * of the server's request counters but go through its cache all the same: pass them with `probe: true`, or the
 * model drifts from the server's caches. Pure and allocation-light, so the runner can check every row
 * (700 000 requests in a few hundred ms). The models are lab/sim/cache_models.ts, the ceilings
 * lab/sim/optimum.ts.
 */
import { createModel, type SimSettings, type TierCounts } from "./cache_models.ts";
import { LogicalTraceBuilder, optimalHits, optimalLifetime } from "./optimum.ts";

const MAX_INT4 = 2_147_483_647;

/**
 * One request as the server handled it. `probe`: a request the lab itself sent with the server's probe
 * header (write_mix's stale-read checker): it changes the caches like any other, and counts in the tiers as
 * the strategies count it, but never in reads, DB queries or distinct keys, as the server's /stats.
 */
export type SimRequest = (
  | { op: "detail"; id: number }
  /** GET /products/:id/summary: its own cache entry (`summary:<id>`), deleted by a PUT of the product. */
  | { op: "summary"; id: number }
  | { op: "list"; category: number; page: number; size: number }
  | { op: "write"; id: number }
) & {
  atMs: number;
  probe?: boolean;
  /** The server process that handled it (0..N−1; absent: 0): each has its own L1 or local cache. */
  instance?: number;
};

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
  /**
   * Distinct resources read (an id, a list page): the server's `distinctKeys` for the window, which each
   * instance counts for itself, so summed over instances (a key read on two counts twice).
   */
  distinctKeys: number;
  /** Distinct resources read across all instances (= distinctKeys with one instance). */
  globalDistinctKeys: number;
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

function checkInt(value: number, min: number, max: number, what: string): void {
  if (!(Number.isInteger(value) && value >= min && value <= max)) {
    // The server answers 400 without touching the cache or the database: such a request has no replay.
    throw new RangeError(`Cannot simulate: ${what} must be an integer in ${min}..${max}: received ${value}`);
  }
}

function checkSettings(settings: SimSettings): void {
  if (!["none", "local", "redis", "two_tier", "tracking"].includes(settings.strategy)) {
    throw new RangeError(`Cannot simulate: unknown strategy: received ${settings.strategy}`);
  }
  checkInt(settings.rows, 0, MAX_INT4, "rows");
  if (settings.strategy === "none") return;
  if (!(settings.cacheTtlMs > 0)) {
    throw new RangeError(`Cannot simulate: cacheTtlMs must be > 0: received ${settings.cacheTtlMs}`);
  }
  if (settings.strategy === "redis") return;
  checkInt(settings.l1MaxEntries, 1, MAX_INT4, "l1MaxEntries");
  if ((settings.strategy === "two_tier" || settings.strategy === "tracking") && !(settings.l1TtlMs > 0)) {
    throw new RangeError(`Cannot simulate: l1TtlMs must be > 0: received ${settings.l1TtlMs}`);
  }
}

/** How many instances the requests name (1 + the highest `instance`). */
function instanceCount(requests: SimRequest[][]): number {
  let highest = 0;
  for (const list of requests) {
    for (const request of list) {
      const instance = request.instance ?? 0;
      if (instance !== highest) {
        checkInt(instance, 0, 1_023, "an instance");
        if (instance > highest) highest = instance;
      }
    }
  }
  return highest + 1;
}

/** The resource a read names, as the server counts distinct keys: an id, or a list page. */
function resourceOf(request: SimRequest): number | string | null {
  if (request.op === "detail") return request.id;
  if (request.op === "summary") return `summary:${request.id}`;
  if (request.op === "list") return `${request.category}:${request.page}:${request.size}`;
  return null;
}

/**
 * `local` over several instances: processes that share nothing, each replayed through its own model, and
 * the counts summed (the ceilings too: each instance's optimum over its own requests).
 */
function simulateEach(
  warmup: SimRequest[],
  measured: SimRequest[],
  settings: SimSettings,
  instances: number,
): SimResult {
  const only = (list: SimRequest[], instance: number) =>
    list
      .filter((request) => (request.instance ?? 0) === instance)
      .map((request) => ({ ...request, instance: 0 }));
  const parts = Array.from({ length: instances }, (_, instance) =>
    simulate(only(warmup, instance), only(measured, instance), settings),
  );
  const total = (pick: (part: SimResult) => number) => parts.reduce((sum, part) => sum + pick(part), 0);
  const reads = total((part) => part.reads);
  const ratio = (pick: (part: SimResult) => number | null) =>
    reads === 0 ? null : total((part) => (pick(part) ?? 0) * part.reads) / reads;
  const readDbQueries = total((part) => part.readDbQueries);
  const tiers: Record<string, TierCounts> = {};
  for (const part of parts) {
    for (const [name, counts] of Object.entries(part.tiers)) {
      const sum = tiers[name] ?? { hits: 0, misses: 0 };
      sum.hits += counts.hits;
      sum.misses += counts.misses;
      tiers[name] = sum;
    }
  }
  const global = new Set<number | string>();
  for (const request of measured) {
    const resource = request.probe === true ? null : resourceOf(request);
    if (resource !== null) global.add(resource);
  }
  return {
    reads,
    readDbQueries,
    writes: total((part) => part.writes),
    dbQueries: total((part) => part.dbQueries),
    loads: total((part) => part.loads),
    distinctKeys: total((part) => part.distinctKeys),
    globalDistinctKeys: global.size,
    hitRatio: reads === 0 ? null : 1 - readDbQueries / reads,
    tiers,
    optimalHitRatio: ratio((part) => part.optimalHitRatio),
    unboundedHitRatio: ratio((part) => part.unboundedHitRatio),
  };
}

/**
 * Replays warm-up then measured requests through the strategy's model; counts the measured ones. Requests
 * naming several instances replay through the strategy's caches over that many processes: local's apart,
 * redis' one shared, two_tier's and tracking's L1 per process over one L2 (cache_models.ts).
 */
export function simulate(warmup: SimRequest[], measured: SimRequest[], settings: SimSettings): SimResult {
  checkSettings(settings);
  const instances = instanceCount([warmup, measured]);
  if (instances > 1 && settings.strategy === "local") {
    return simulateEach(warmup, measured, settings, instances);
  }
  const model = createModel(settings, instances);
  // two_tier or tracking over several processes: each L1 keeps the token it last saw, which may predate L2's.
  const l1Generations =
    instances > 1 && (settings.strategy === "two_tier" || settings.strategy === "tracking")
      ? Array.from({ length: instances }, () => new Map<number, number>())
      : null;
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
  let global = new Set<number | string>();
  let lastMs = Number.NEGATIVE_INFINITY;

  function replay(request: SimRequest): void {
    const atMs = request.atMs;
    if (!(atMs >= lastMs) || !Number.isFinite(atMs)) {
      throw new RangeError(`Cannot simulate: atMs must be finite and non-decreasing: received ${atMs}`);
    }
    lastMs = atMs;
    const counted = request.probe !== true;
    const instance = request.instance ?? 0;
    const countRead = (resource: number | string) => {
      reads++;
      distinct.add(instances > 1 ? `${instance}|${resource}` : resource);
      global.add(resource);
    };
    if (request.op === "detail") {
      checkInt(request.id, 1, MAX_INT4, "a detail id");
      const exists = request.id <= settings.rows;
      trace.detail(request.id, exists, atMs, counted);
      if (counted) countRead(request.id);
      if (model.getOrLoad(request.id, atMs, exists, instance)) {
        loads++;
        if (counted) readDbQueries++;
      }
    } else if (request.op === "summary") {
      checkInt(request.id, 1, MAX_INT4, "a summary id");
      const exists = request.id <= settings.rows;
      trace.summary(request.id, exists, atMs, counted);
      if (counted) countRead(`summary:${request.id}`);
      if (model.getOrLoad(`s:${request.id}`, atMs, exists, instance)) {
        loads++;
        if (counted) readDbQueries++;
      }
    } else if (request.op === "list") {
      const { category, page, size } = request;
      checkInt(category, 1, MAX_INT4, "a list category");
      checkInt(page, 0, 1_000_000, "a list page");
      checkInt(size, 1, 100, "a list size");
      trace.list(category, page, size, atMs, counted);
      if (counted) countRead(`${category}:${page}:${size}`);
      const own = l1Generations?.[instance];
      const l1HitsBefore = model.tiers.l1?.hits ?? 0;
      let generation: number | undefined;
      if (model.getOrLoad(-category, atMs, true, instance)) {
        loads++;
        generation = ++lastGeneration;
        generations.set(category, generation);
        own?.set(category, generation);
      } else if (own && (model.tiers.l1?.hits ?? 0) > l1HitsBefore) {
        generation = own.get(category); // this instance's L1 copy
      } else {
        generation = generations.get(category); // the shared tier's (L2's) token
        if (generation !== undefined) own?.set(category, generation);
      }
      if (generation === undefined) {
        throw new Error(`Cannot simulate: a cached generation token never loaded: received ${category}`);
      }
      if (model.getOrLoad(`${category}:${generation}:${page}:${size}`, atMs, true, instance)) {
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
        model.delete(`s:${request.id}`);
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
  global = new Set();
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
    globalDistinctKeys: global.size,
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

const CANONICAL_INT = /^(0|[1-9]\d{0,9})$/;
const PRODUCTS_URL = /^https?:\/\/[^/?#]+\/products(?:\/([^/?#]*)(\/summary)?)?(?:\?([^#]*))?$/;

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
  targets: readonly { method: string; url: string; instance?: number }[],
  timesMs: ArrayLike<number>,
): SimRequest[] {
  if (timesMs.length !== targets.length) {
    throw new RangeError(
      `Cannot simulate: one time per target (${targets.length}) expected: received ${timesMs.length}`,
    );
  }
  const requests: SimRequest[] = new Array(targets.length);
  for (let i = 0; i < targets.length; i++) {
    const { method, url, instance = 0 } = targets[i] as { method: string; url: string; instance?: number };
    const atMs = timesMs[i] as number;
    requests[i] = parseTarget(method, url, atMs);
    if (instance !== 0) (requests[i] as SimRequest).instance = instance;
  }
  return requests;
}

/** One lab target as the request the server handles. */
function parseTarget(method: string, url: string, atMs: number): SimRequest {
  const match = PRODUCTS_URL.exec(url);
  if (match === null) {
    throw new RangeError(`Cannot simulate: not a /products URL: received ${url}`);
  }
  const [, idText, summary, query] = match;
  if (idText !== undefined) {
    if (query !== undefined)
      throw new RangeError(`Cannot simulate: a query on a product URL: received ${url}`);
    const id = parseParam(idText, 1, MAX_INT4, "the product id", url);
    if (summary !== undefined) {
      if (method === "GET") return { op: "summary", id, atMs };
      throw new RangeError(`Cannot simulate: ${method} of a product summary: received ${url}`);
    }
    if (method === "GET") return { op: "detail", id, atMs };
    if (method === "PUT") return { op: "write", id, atMs };
    throw new RangeError(`Cannot simulate: ${method} of a product: received ${url}`);
  }
  if (method !== "GET") throw new RangeError(`Cannot simulate: ${method} of a product list: received ${url}`);
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
  return {
    op: "list",
    category: parseParam(category, 1, MAX_INT4, "category", url),
    page: page === undefined ? 0 : parseParam(page, 0, 1_000_000, "page", url),
    size: size === undefined ? 20 : parseParam(size, 1, 100, "size", url),
    atMs,
  };
}
