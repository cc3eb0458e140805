/**
 * two_tier: an in-process LRU (L1, quick-lru) in front of Redis (L2, ioredis), kept coherent across
 * instances by Redis pub/sub invalidation messages.
 *
 * Read path: L1 hit → value. L1 miss → one flight per key in this process: L2 GET; an L2 hit backfills L1;
 * an L2 miss runs the loader, fills L1 (`l1TtlMs`) and SETs L2 (`PX ttlMs`) in the background: the value is
 * returned as soon as it is loaded, and the SET's failure is only counted. Invalidation: `delete(key)` drops
 * L1 and disowns a flight in progress here, DELs L2, then PUBLISHes the key on `channel`; every other
 * instance drops it from its L1 when the message arrives (about a millisecond on one host).
 * Trade-offs: L1 hits cost no network; L1 holds between `l1MaxSize` and 2 × `l1MaxSize` entries (quick-lru
 * generations). Pub/sub is at-most-once: a message lost while a subscriber reconnects would leave that
 * instance's L1 stale, so L1 is flushed whenever the subscription is (re-)established; a message lost
 * otherwise leaves it stale for at most `l1TtlMs`.
 * Failure behaviour: fail open, nothing is thrown. An L2 error is an L2 miss, the loader answers, the error
 * is counted in `stats().errors`; L1 keeps serving. The fail-fast client settings below bound a command by
 * `commandTimeout` (an injected client needs one too). A circuit breaker (bentocache's L2 breaker) saves even
 * that: after `breakerThreshold` (default 3) consecutive failed commands it opens for `breakerCooldownMs`
 * (default 1 000), sending nothing to Redis: L1 misses go to the loader, L2 fills are skipped (counted in
 * `breakerSkipped`; openings in `breakerOpens`). Then one command is let through as a probe: success closes
 * the breaker, failure opens it for another cool-down. A hung Redis thus costs each request in flight at
 * most one command timeout until the breaker opens, then nothing but one probe per cool-down.
 * Invalidations are not lost: a key whose DEL or PUBLISH fails or is skipped joins a pending set (at most
 * `maxPendingInvalidations`, default 10 000). Until it is replayed, this instance never reads that key from
 * L2 nor fills it there. The replay (DEL, then PUBLISH, per 1 000 keys) is retried every cool-down and by
 * the next call, ahead of its own command (when the breaker is half-open it is the probe), so a key written
 * during an outage is not served stale from L2 after it. Both are idempotent: a key whose DEL landed but
 * whose PUBLISH failed is simply replayed whole.
 * Staleness bound. This instance: none (its L1 entry is dropped at delete(), L2 is bypassed while pending).
 * Other instances, Redis up: until the message arrives. While this instance cannot reach Redis: they may
 * read the old value from L2 and keep it in L1 until the replay lands (republished on recovery), and never
 * past `ttlMs` + `l1TtlMs` after the write (the old L2 entry was set before it, an L1 copy outlives it by
 * at most `l1TtlMs`); if Redis itself was down, their subscribers reconnect and flush L1 anyway. Past the
 * cap the oldest pending key is dropped (counted in `invalidationsDropped`) and is never replayed: that
 * `ttlMs` + `l1TtlMs` bound is then the only one, in this instance too. close() forgets what is pending.
 * Early refresh (`earlyRefresh`, off when absent): XFetch (Vattani, Chierichetti, Lowenstein, VLDB 2015)
 * against the database load, i.e. the L2 expiry. Each entry carries `deltaMs` (how long its load took) and
 * its L2 expiry, in L2 and in L1 (an L2 hit backfills L1 with the stored ones, so every instance decides
 * on the same expiry). A hit, in L1 or in L2, refreshes early when `now − deltaMs · β · ln(random()) ≥
 * expiry`, random() in (0, 1], i.e. with probability exp(−(expiry − now) / (β · deltaMs)) per hit: slow
 * loads and hot keys refresh sooner. β = 1 is the paper's choice; larger refreshes earlier. The hit is
 * answered with the value it found at once and one background refresh starts (single-flighted with any
 * flight of that key here; a delete or an invalidation message during it disowns it like any flight): it
 * GETs L2 first and takes what another instance refreshed there already (a later expiry; no load), else
 * it loads, fills L1 and SETs L2 with fresh TTLs like any fill (breaker and pending rules included). A
 * failed load is counted (`refreshFailures`) and the old value stays until it expires, as does an absent
 * result. An L1 entry that outlives its L2 expiry (`l1TtlMs` longer than what was left) is refreshed by its
 * next hit. An L1 expiry is not refreshed early: the miss waits on one L2 GET, not on the database. Cost:
 * one extra load per refresh (hot keys are reloaded a little before every expiry, more loads than the
 * misses they save; instances that decide in the same instant each load once, as they would at a miss).
 * Expiry is wall-clock (`Date.now()`), so instances need roughly synchronized clocks. Loads faster than a
 * millisecond barely refresh early: they cost little anyway.
 * Serialization: values are strings the caller serializes; L1 stores them by reference, L2 as they are.
 * With early refresh on, L2 stores `"\u0000xf:<expiryMs>:<deltaMs>:" + value` (still one GET per read, no
 * JSON re-escaping of the value); every instance reads both forms, so early refresh can be switched per
 * instance. A value that itself starts with that NUL-led marker would be misread: don't store one.
 *
 * Copying this file? Needs ioredis@^6 and quick-lru@^7.
 *
 *   const cache = createCache({ redis: "redis://127.0.0.1:6379", ttlMs: 60_000, l1MaxSize: 10_000, l1TtlMs: 5_000 });
 *   // or, refreshing hot keys before they expire: { ..., earlyRefresh: { beta: 1 } }
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits: every instance drops it
 */
import { randomUUID } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";
import QuickLRU from "quick-lru";

export interface TwoTierCacheOptions {
  /** A client to use (left open by close()), or a URL to create one with the fail-fast settings. */
  redis: Redis | string;
  /** L2 (Redis) time to live. */
  ttlMs: number;
  l1MaxSize: number;
  /** L1 time to live: also the staleness bound when an invalidation message is lost. */
  l1TtlMs: number;
  prefix?: string;
  /** Pub/sub channel for invalidations (pub/sub ignores DB numbers: keep it prefixed). */
  channel?: string;
  /** Consecutive failed commands (errors or timeouts) that open the breaker; default 3. */
  breakerThreshold?: number;
  /** How long an open breaker sends nothing before it lets one probe through; default 1 000 ms. */
  breakerCooldownMs?: number;
  /** Keys whose invalidation waits for Redis at most; past it the oldest is dropped. Default 10 000. */
  maxPendingInvalidations?: number;
  /** XFetch early refresh; off when absent. `random` must return (0, 1] (default `1 − Math.random()`). */
  earlyRefresh?: { beta: number; random?: () => number };
}

/** Cache settings: errors become misses quickly instead of waiting in ioredis' offline queue. */
export const failFastRedisOptions: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: 100,
  connectTimeout: 1_000,
  socketTimeout: 5_000,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  lazyConnect: true,
};

/** XFetch's decision: whether a hit at `nowMs` refreshes an entry expiring at `expiryMs` early. */
export function xfetchDue(nowMs: number, expiryMs: number, deltaMs: number, beta: number, random: number) {
  const r = Math.min(1, Math.max(random, Number.MIN_VALUE)); // ln(0) = −∞: 0 counts as the smallest draw
  return nowMs - deltaMs * beta * Math.log(r) >= expiryMs;
}

/** A value with its XFetch fields: its load's duration and its L2 expiry (epoch ms). */
interface Entry {
  value: string;
  deltaMs: number;
  expiryMs: number;
}

/** Starts an L2 value stored with its XFetch fields; values never start with NUL. */
const ENVELOPE = "\u0000xf:";

function encode(entry: Entry): string {
  return `${ENVELOPE}${entry.expiryMs}:${Math.round(entry.deltaMs * 1_000) / 1_000}:${entry.value}`;
}

/** An L2 value and its XFetch fields; one stored plain (early refresh off) is never refreshed early. */
function decode(stored: string): Entry {
  const first = stored.startsWith(ENVELOPE) ? stored.indexOf(":", ENVELOPE.length) : -1;
  const second = first === -1 ? -1 : stored.indexOf(":", first + 1);
  if (second === -1) return { value: stored, deltaMs: 0, expiryMs: Number.POSITIVE_INFINITY };
  const expiryMs = Number(stored.slice(ENVELOPE.length, first));
  return { value: stored.slice(second + 1), deltaMs: Number(stored.slice(first + 1, second)), expiryMs };
}

/** One flight per key: whether it called the loader, and the L2 entry it backfilled L1 with, if any. */
interface Flight {
  promise: Promise<string | undefined>;
  loaded: boolean;
  l2Hit?: Entry;
}

/** What a command resolves to when it failed or was not sent. */
const NO_REPLY = Symbol("no reply");
type Permit = "closed" | "probe" | null;

/** Consecutive failures open it for a cool-down; then one probe decides (bentocache's L2 circuit breaker). */
class CircuitBreaker {
  opens = 0;
  #state: "closed" | "open" | "half-open" = "closed";
  #failures = 0;
  #probeAtMs = 0;
  readonly #threshold: number;
  readonly #cooldownMs: number;

  constructor(threshold: number, cooldownMs: number) {
    this.#threshold = threshold;
    this.#cooldownMs = cooldownMs;
  }

  /** Whether a command may be sent: "probe" once per cool-down while open, then nothing until it settles. */
  permit(): Permit {
    if (this.#state === "closed") return "closed";
    if (this.#state === "half-open" || performance.now() < this.#probeAtMs) return null;
    this.#state = "half-open";
    return "probe";
  }

  settle(permit: "closed" | "probe", ok: boolean): void {
    if (permit === "probe") {
      if (ok) this.#state = "closed";
      else this.#open();
    } else if (this.#state === "closed") {
      // Replies to commands sent before it opened do not count: only the probe decides.
      this.#failures = ok ? 0 : this.#failures + 1;
      if (this.#failures >= this.#threshold) this.#open();
    }
  }

  #open(): void {
    this.#state = "open";
    this.#failures = 0;
    this.#probeAtMs = performance.now() + this.#cooldownMs;
    this.opens++;
  }
}

export function createCache(options: TwoTierCacheOptions) {
  const early = options.earlyRefresh;
  if (early && !(Number.isFinite(early.beta) && early.beta > 0)) {
    throw new RangeError(`Cannot create cache: earlyRefresh.beta must be > 0: received ${early.beta}`);
  }
  const random = early?.random ?? (() => 1 - Math.random());
  const owned = typeof options.redis === "string";
  const redis =
    typeof options.redis === "string" ? new Redis(options.redis, failFastRedisOptions) : options.redis;
  if (owned) {
    redis.on("error", () => {});
    redis.connect().catch(() => {});
  }
  const prefix = options.prefix ?? "cache:";
  const channel = options.channel ?? `${prefix}invalidate`;
  const cooldownMs = options.breakerCooldownMs ?? 1_000;
  const maxPending = options.maxPendingInvalidations ?? 10_000;
  const breaker = new CircuitBreaker(options.breakerThreshold ?? 3, cooldownMs);
  const instanceId = randomUUID();
  const l1 = new QuickLRU<string, Entry>({ maxSize: options.l1MaxSize, maxAge: options.l1TtlMs });
  const inflight = new Map<string, Flight>();
  // Keys whose DEL + PUBLISH has not gone out → the stamp of their last delete(); oldest first.
  const pending = new Map<string, number>();
  let stamp = 0;
  let flushing = false;
  let closed = false;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  const counts = {
    l1Hits: 0,
    l1Misses: 0,
    l2Hits: 0,
    l2Misses: 0,
    loads: 0,
    errors: 0,
    skipped: 0,
    dropped: 0,
    published: 0,
    received: 0,
    loadWaits: 0,
    refreshes: 0,
    refreshLoads: 0,
    refreshFailures: 0,
  };

  // The subscriber queues its SUBSCRIBE until connected and never gives up reconnecting.
  const subscriber = redis.duplicate({
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    autoResubscribe: false,
  });
  let subscribed = false;
  subscriber.on("error", () => {});
  subscriber.on("ready", () => {
    subscriber.subscribe(channel).then(
      () => {
        l1.clear(); // messages sent while we were not subscribed are lost: start from an empty L1
        subscribed = true;
      },
      () => {
        counts.errors++;
      },
    );
  });
  subscriber.on("close", () => {
    subscribed = false;
  });
  subscriber.on("message", (_channel: string, message: string) => {
    const space = message.indexOf(" ");
    if (message.slice(0, space) === instanceId) return;
    const key = message.slice(space + 1);
    counts.received++;
    inflight.delete(key);
    l1.delete(key);
  });

  /** Sends one command unless the breaker is open; a failure is counted, never thrown. */
  function send<T>(command: () => Promise<T>, permit = breaker.permit()): Promise<T | typeof NO_REPLY> {
    if (permit === null) {
      counts.skipped++;
      return Promise.resolve(NO_REPLY);
    }
    return command().then(
      (reply) => {
        breaker.settle(permit, true);
        return reply;
      },
      () => {
        counts.errors++;
        breaker.settle(permit, false);
        return NO_REPLY;
      },
    );
  }

  function publish(key: string): Promise<number | typeof NO_REPLY> {
    return send(() => redis.publish(channel, `${instanceId} ${key}`));
  }

  function markPending(key: string): void {
    pending.set(key, ++stamp); // a key already pending keeps its place: its old value is the oldest
    if (pending.size > maxPending) {
      pending.delete(pending.keys().next().value as string);
      counts.dropped++;
    }
    retryLater();
  }

  function retryLater(): void {
    if (retryTimer !== undefined || closed) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void flushPending();
    }, cooldownMs);
    retryTimer.unref();
  }

  /** Replays the pending invalidations, oldest first: one DEL per 1 000 keys, then a PUBLISH per key. */
  async function flushPending(): Promise<void> {
    if (flushing) return;
    flushing = true;
    try {
      while (pending.size > 0) {
        const permit = breaker.permit();
        if (permit === null) break;
        const batch: [string, number][] = [];
        for (const entry of pending) if (batch.push(entry) === 1_000) break;
        const keys = batch.map(([key]) => prefix + key);
        if ((await send(() => redis.del(keys), permit)) === NO_REPLY) break;
        const replies = await Promise.all(batch.map(([key]) => publish(key)));
        // A key deleted again while its replay was on the wire stays pending for the next round.
        batch.forEach(([key, at], i) => {
          if (replies[i] === NO_REPLY) return;
          counts.published++;
          if (pending.get(key) === at) pending.delete(key);
        });
        if (replies.includes(NO_REPLY)) break;
      }
    } finally {
      flushing = false;
    }
    if (pending.size > 0) retryLater();
  }

  /** A miss's flight, or (with `stale`, the entry a hit found due) an early refresh's, which counts no tier. */
  function loadOnce(key: string, load: () => Promise<string | undefined>, stale?: Entry): Flight {
    const shared = inflight.get(key);
    if (shared) return shared;
    const flight: Flight = { promise: Promise.resolve(undefined), loaded: false };
    async function fill(): Promise<string | undefined> {
      const cached = pending.has(key) ? NO_REPLY : await send(() => redis.get(prefix + key));
      const found = typeof cached === "string" ? decode(cached) : undefined;
      let entry: Entry | undefined;
      // A refresh takes L2's entry only if another instance refreshed it already (a later expiry).
      if (found && (!stale || found.expiryMs > stale.expiryMs)) {
        if (!stale) counts.l2Hits++;
        entry = found;
      } else {
        if (!stale) counts.l2Misses++;
        counts.loads++;
        if (stale) counts.refreshLoads++;
        flight.loaded = true;
        const startedMs = performance.now();
        const value = await load();
        if (value === undefined) return undefined;
        const loaded = {
          value,
          deltaMs: performance.now() - startedMs,
          expiryMs: Date.now() + options.ttlMs,
        };
        // The ownership check and the SET's send happen in one tick: a later DEL queues behind the SET.
        if (inflight.get(key) === flight && !pending.has(key)) {
          void send(() => redis.set(prefix + key, early ? encode(loaded) : value, "PX", options.ttlMs));
        }
        entry = loaded;
      }
      // An invalidation during the flight disowns it: its value may predate the write.
      if (inflight.get(key) === flight) {
        l1.set(key, entry);
        if (entry === found && !stale) flight.l2Hit = entry;
      }
      return entry.value;
    }
    flight.promise = fill().finally(() => {
      if (inflight.get(key) === flight) inflight.delete(key);
    });
    inflight.set(key, flight);
    return flight;
  }

  /** XFetch on a hit: starts one background refresh unless a flight for the key is on its way already. */
  function refreshIfDue(key: string, entry: Entry, load: () => Promise<string | undefined>): void {
    const due = early && xfetchDue(Date.now(), entry.expiryMs, entry.deltaMs, early.beta, random());
    if (!due || inflight.has(key)) return;
    counts.refreshes++;
    loadOnce(key, load, entry).promise.catch(() => {
      counts.refreshFailures++;
    });
  }

  return {
    async getOrLoad(key: string, load: () => Promise<string | undefined>): Promise<string | undefined> {
      const cached = l1.get(key);
      if (cached !== undefined) {
        counts.l1Hits++;
        refreshIfDue(key, cached, load);
        return cached.value;
      }
      counts.l1Misses++;
      if (pending.size > 0) void flushPending(); // its DELs go out before this flight's GET
      const flight = loadOnce(key, load);
      try {
        return await flight.promise;
      } finally {
        if (flight.loaded) counts.loadWaits++;
        // Decided once the flight has left the map, so that a due refresh is not taken for one on its way.
        else if (flight.l2Hit) refreshIfDue(key, flight.l2Hit, load);
      }
    },
    async delete(key: string): Promise<void> {
      inflight.delete(key);
      l1.delete(key);
      if (pending.size > 0) void flushPending();
      // No PUBLISH without the DEL: other instances would reload the old value from L2.
      const deleted = await send(() => redis.del(prefix + key));
      if (deleted === NO_REPLY || (await publish(key)) === NO_REPLY) markPending(key);
      else counts.published++;
    },
    stats() {
      return {
        tiers: {
          l1: { hits: counts.l1Hits, misses: counts.l1Misses },
          l2: { hits: counts.l2Hits, misses: counts.l2Misses },
        },
        loads: counts.loads,
        errors: counts.errors,
        invalidationsPublished: counts.published,
        invalidationsReceived: counts.received,
        breakerOpens: breaker.opens,
        breakerSkipped: counts.skipped,
        invalidationsPending: pending.size,
        invalidationsDropped: counts.dropped,
        loadWaits: counts.loadWaits,
        earlyRefreshes: counts.refreshes,
        refreshLoads: counts.refreshLoads,
        refreshFailures: counts.refreshFailures,
      };
    },
    async healthy(): Promise<boolean> {
      const pong = await redis.ping().then(
        (reply) => reply === "PONG",
        () => false,
      );
      return pong && subscribed;
    },
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retryTimer);
      pending.clear();
      subscriber.disconnect();
      l1.clear();
      inflight.clear();
      if (owned) redis.disconnect();
    },
  };
}
