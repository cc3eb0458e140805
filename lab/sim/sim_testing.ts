/** What the simulator tests share: request traces like the lab's, a server-like driver, settings. */
import { setSystemTime } from "bun:test";
import { randomUUID } from "node:crypto";
import type { CacheStrategy } from "../../strategies/_strategy.ts";
import { seededRandom } from "../plan/targets.ts";
import type { SimSettings, SimStrategy } from "./cache_models.ts";
import type { SimRequest } from "./simulate.ts";

/** A fixed wall-clock origin for setSystemTime, far from 0 so no expiry is ever exactly 0. */
export const EPOCH_MS = Date.UTC(2030, 0, 1);

// ---------------------------------------------------------------------------------------------------------
// simulate() against the real strategies

export function categoryOf(id: number): number {
  return 1 + (id % 5);
}

export interface RequestTraceOptions {
  seed: number;
  count: number;
  /** Detail ids are drawn from 1..keyspace; ids above `rows` are absent. */
  keyspace: number;
  startMs: number;
  maxStepMs: number;
}

/** A mix like cache_toggle and write_mix: skewed details and summaries, some list pages, a few writes. */
export function requestTrace(options: RequestTraceOptions): SimRequest[] {
  const random = seededRandom(options.seed);
  const requests: SimRequest[] = [];
  let atMs = options.startMs;
  for (let i = 0; i < options.count; i++) {
    atMs += Math.floor(random() * (options.maxStepMs + 1));
    const id = 1 + Math.floor(random() ** 2 * options.keyspace);
    const pick = random();
    if (pick < 0.6) requests.push({ op: "detail", id, atMs });
    else if (pick < 0.75) requests.push({ op: "summary", id, atMs });
    else if (pick < 0.93) {
      const category = 1 + Math.floor(random() * 6); // category 6 has no products: an empty page, still cached
      const page = Math.floor(random() * 3);
      requests.push({ op: "list", category, page, size: page === 2 ? 10 : 20, atMs });
    } else requests.push({ op: "write", id, atMs });
  }
  return requests;
}

/**
 * Sends requests through a strategy exactly as server.ts does, one at a time, with the clock at atMs; each
 * to the instance it names (`caches[request.instance ?? 0]`). After a write, `settle` waits until the
 * other instances have heard of it (two_tier's bus), as the simulation assumes; after every request,
 * `afterEach` (tracking's pushes).
 */
async function drive(
  caches: CacheStrategy[],
  requests: SimRequest[],
  rows: number,
  db: { queries: number },
  settle: (writer: number) => () => Promise<void>,
  afterEach: () => Promise<unknown>,
): Promise<void> {
  for (const request of requests) {
    const cache = caches[request.instance ?? 0];
    if (cache === undefined) throw new RangeError(`No cache for instance ${request.instance}`);
    setSystemTime(new Date(EPOCH_MS + request.atMs));
    if (request.op === "detail") {
      const { id } = request;
      await cache.getOrLoad(`product:${id}`, async () => {
        db.queries++;
        return id <= rows ? `{"id":${id}}` : undefined;
      });
    } else if (request.op === "summary") {
      const { id } = request;
      await cache.getOrLoad(`summary:${id}`, async () => {
        db.queries++;
        return id <= rows ? `{"id":${id},"reviewCount":0}` : undefined;
      });
    } else if (request.op === "list") {
      const { category, page, size } = request;
      const generation = await cache.getOrLoad(`catgen:${category}`, async () => randomUUID());
      await cache.getOrLoad(`list:${category}:${generation}:${page}:${size}`, async () => {
        db.queries++;
        return `{"category":${category},"page":${page},"size":${size},"items":[]}`;
      });
    } else {
      db.queries++;
      if (request.id <= rows) {
        const heard = settle(request.instance ?? 0);
        await Promise.all([
          cache.delete(`product:${request.id}`),
          cache.delete(`summary:${request.id}`),
          cache.delete(`catgen:${categoryOf(request.id)}`),
        ]);
        await heard();
      }
    }
    await afterEach();
  }
}

/** The strategy's measured counters: what simulate() must reproduce. */
export async function measuredCounters(
  cache: CacheStrategy | CacheStrategy[],
  warmup: SimRequest[],
  measured: SimRequest[],
  rows: number,
  options: { pushes?: boolean } = {},
) {
  const caches = Array.isArray(cache) ? cache : [cache];
  // tracking: every instance PINGs after each request. Redis sent every push due by then (a fill's to its
  // own writer, a delete's to each reader) before that PING's reply on the same connection: each is handled,
  // as the simulation takes them, at once. A delete pushes only to the instances that read the key.
  const afterEach = options.pushes
    ? () => Promise.all(caches.map((c) => c.healthy()))
    : () => Promise.resolve();
  const received = () => caches.map((c) => c.stats().invalidationsReceived);
  // Each write deletes three keys (the product, its summary, its category's token): every other instance
  // hears of all three.
  const settle = (writer: number) => {
    const target = received().map((count, i) => (i === writer ? count : count + 3));
    return () => heardAll(target);
  };
  const heardAll = async (target: number[]) => {
    if (options.pushes || caches.length === 1 || caches[0]?.stats().tiers.l1 === undefined) return;
    const deadline = performance.now() + 5_000;
    while (received().some((count, i) => count < (target[i] as number))) {
      if (performance.now() > deadline) throw new Error("An invalidation never reached another instance");
      await Bun.sleep(1);
    }
  };
  const db = { queries: 0 };
  await drive(caches, warmup, rows, db, settle, afterEach);
  const sumStats = () => {
    const tiers: Record<string, { hits: number; misses: number }> = {};
    let loads = 0;
    let errors = 0;
    for (const c of caches) {
      const stats = c.stats();
      loads += stats.loads;
      errors += stats.errors;
      for (const [name, counts] of Object.entries(stats.tiers)) {
        const sum = tiers[name] ?? { hits: 0, misses: 0 };
        tiers[name] = { hits: sum.hits + counts.hits, misses: sum.misses + counts.misses };
      }
    }
    return { tiers, loads, errors };
  };
  const before = sumStats();
  const queriesBefore = db.queries;
  await drive(caches, measured, rows, db, settle, afterEach);
  const after = sumStats();
  const tiers: Record<string, { hits: number; misses: number }> = {};
  for (const [name, counts] of Object.entries(after.tiers)) {
    const start = before.tiers[name] ?? { hits: 0, misses: 0 };
    tiers[name] = { hits: counts.hits - start.hits, misses: counts.misses - start.misses };
  }
  return {
    tiers,
    loads: after.loads - before.loads,
    dbQueries: db.queries - queriesBefore,
    errors: after.errors,
  };
}

export function settingsFor(strategy: SimStrategy, overrides: Partial<SimSettings> = {}): SimSettings {
  return {
    strategy,
    cacheTtlMs: 60_000,
    l1TtlMs: 60_000,
    l1MaxEntries: 16,
    rows: 150,
    categoryOf,
    ...overrides,
  };
}

/** The requests dealt round-robin over `instances`, as the lab's stream positions are. */
export function dealt(requests: SimRequest[], instances: number, offset = 0): SimRequest[] {
  return requests.map((request, i) => ({ ...request, instance: (offset + i) % instances }));
}

export function details(ids: number[], timesMs?: number[]): SimRequest[] {
  return ids.map((id, i) => ({ op: "detail", id, atMs: timesMs?.[i] ?? i }));
}
