/**
 * redis: cache-aside in Redis (ioredis), shared by every instance of the service.
 *
 * Read path: GET prefix+key → hit; miss → loader, then `SET key value PX ttlMs` in the background: the value
 * is returned as soon as it is loaded, and the SET's failure is only counted. Concurrent misses for one key
 * in this process share one load (in-flight promise map; failures are not cached). Invalidation:
 * `delete(key)` DELs the key and disowns a load in flight here, so this instance never re-sets a value read
 * before the write. Another instance's load that read the old row before the write can still SET it after
 * the DEL (a stale set); that entry lives until `ttlMs`, the staleness bound across instances.
 * Trade-offs: one network round trip per hit and JSON already serialized by the caller; memory lives in
 * Redis, not in the process.
 * Failure behaviour: fail open, nothing is thrown. Every Redis error (down, timeout, refused) is a miss
 * answered by the loader and counted in `stats().errors`. The fail-fast client settings below bound a command
 * by `commandTimeout` (an injected client needs one too) instead of ioredis' default queueing (10–73 s
 * stalls). A circuit breaker (bentocache's L2 breaker) saves even that: after `breakerThreshold` (default 3)
 * consecutive failed commands it opens for `breakerCooldownMs` (default 1 000), sending nothing to Redis:
 * reads go to the loader, fills are skipped (counted in `breakerSkipped`; openings in `breakerOpens`). Then
 * one command is let through as a probe: success closes the breaker, failure opens it for another cool-down.
 * A hung Redis thus costs each request in flight at most one command timeout until the breaker opens, then
 * nothing but one probe per cool-down.
 * Invalidations are not lost: a key whose DEL fails or is skipped joins a pending set (at most
 * `maxPendingInvalidations`, default 10 000). Until its DEL lands, this instance reads that key from the
 * loader, never from Redis, and does not fill it. The pending DELs are retried every cool-down and by the
 * next call, ahead of its own command (when the breaker is half-open they are the probe), so a key written
 * during an outage is not served stale after it. Staleness bound: none in this instance; other instances
 * read the old value until the DEL lands, and never past `ttlMs` after the write (its SET came before).
 * Past the cap the oldest pending key is dropped (counted in `invalidationsDropped`), and this instance may
 * read its old value too, for the same `ttlMs` at most. close() forgets what is still pending.
 * Early refresh (`earlyRefresh`, off when absent): XFetch (Vattani, Chierichetti, Lowenstein, VLDB 2015).
 * Each stored value carries `deltaMs` (how long its load took) and its expiry; a hit refreshes early when
 * `now − deltaMs · β · ln(random()) ≥ expiry`, random() in (0, 1], i.e. with probability
 * exp(−(expiry − now) / (β · deltaMs)) per hit: slow loads and hot keys refresh sooner. β = 1 is the paper's
 * choice; larger refreshes earlier. The hit is answered with the value it read at once and one background
 * reload starts (single-flighted with any load of that key here; a delete during it disowns it like any
 * load); it SETs the new value with a fresh `ttlMs` like any fill (breaker and pending rules included), so
 * other instances read the new expiry and do not refresh it again. A failed reload is counted
 * (`refreshFailures`) and the old value stays until its expiry, as does an absent result. Cost: one extra
 * load per refresh (hot keys are reloaded a little before every expiry, more loads than the misses they
 * save; instances that decide in the same instant each load once, as they would at a miss), and each such
 * load is another chance for the cross-instance stale set above (same bound). Expiry is wall-clock
 * (`Date.now()`), so instances need roughly synchronized clocks. Loads faster than a millisecond barely
 * refresh early: they cost little anyway.
 * Serialization: values are strings the caller serializes, stored as they are. With early refresh on they
 * are stored as `"\u0000xf:<expiryMs>:<deltaMs>:" + value` (still one GET per read, no JSON re-escaping of
 * the value); every instance reads both forms, so early refresh can be switched per instance. A value that
 * itself starts with that NUL-led marker would be misread: don't store one.
 *
 * Copying this file? Needs ioredis@^6.
 *
 *   const cache = createCache({ redis: "redis://127.0.0.1:6379", ttlMs: 60_000, earlyRefresh: { beta: 1 } });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits
 */
import { Redis, type RedisOptions } from "ioredis";

export interface RedisCacheOptions {
  /** A client to use (left open by close()), or a URL to create one with the fail-fast settings. */
  redis: Redis | string;
  ttlMs: number;
  prefix?: string;
  /** Consecutive failed commands (errors or timeouts) that open the breaker; default 3. */
  breakerThreshold?: number;
  /** How long an open breaker sends nothing before it lets one probe through; default 1 000 ms. */
  breakerCooldownMs?: number;
  /** Keys whose DEL waits for Redis at most; past it the oldest is dropped (bound: `ttlMs`). Default 10 000. */
  maxPendingInvalidations?: number;
  /** XFetch early refresh; off when absent. `random` must return (0, 1] (default `1 − Math.random()`). */
  earlyRefresh?: { beta: number; random?: () => number };
}

/** The breaker's defaults (the lab records them in each row's redis_client). */
export const breakerDefaults = { threshold: 3, cooldownMs: 1_000 };

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

/** Starts a value stored with its XFetch fields; values never start with NUL. */
const ENVELOPE = "\u0000xf:";

function encode(value: string, deltaMs: number, expiryMs: number): string {
  return `${ENVELOPE}${expiryMs}:${Math.round(deltaMs * 1_000) / 1_000}:${value}`;
}

/** A stored value and its XFetch fields; one stored plain (early refresh off) is never refreshed early. */
function decode(stored: string): { value: string; deltaMs: number; expiryMs: number } {
  const first = stored.startsWith(ENVELOPE) ? stored.indexOf(":", ENVELOPE.length) : -1;
  const second = first === -1 ? -1 : stored.indexOf(":", first + 1);
  if (second === -1) return { value: stored, deltaMs: 0, expiryMs: Number.POSITIVE_INFINITY };
  const expiryMs = Number(stored.slice(ENVELOPE.length, first));
  return { value: stored.slice(second + 1), deltaMs: Number(stored.slice(first + 1, second)), expiryMs };
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

export function createCache(options: RedisCacheOptions) {
  const early = options.earlyRefresh;
  if (early && !(Number.isFinite(early.beta) && early.beta > 0)) {
    throw new RangeError(`Cannot create cache: earlyRefresh.beta must be > 0: received ${early.beta}`);
  }
  const random = early?.random ?? (() => 1 - Math.random());
  const owned = typeof options.redis === "string";
  const redis =
    typeof options.redis === "string" ? new Redis(options.redis, failFastRedisOptions) : options.redis;
  if (owned) {
    redis.on("error", () => {}); // connection errors surface as rejected commands, counted below
    redis.connect().catch(() => {});
  }
  const prefix = options.prefix ?? "cache:";
  const cooldownMs = options.breakerCooldownMs ?? breakerDefaults.cooldownMs;
  const maxPending = options.maxPendingInvalidations ?? 10_000;
  const breaker = new CircuitBreaker(options.breakerThreshold ?? breakerDefaults.threshold, cooldownMs);
  const inflight = new Map<string, Promise<string | undefined>>();
  // Keys whose DEL has not landed → the stamp of their last delete(); insertion order is oldest first.
  const pending = new Map<string, number>();
  let stamp = 0;
  let flushing = false;
  let closed = false;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  const counts = { hits: 0, misses: 0, loads: 0, errors: 0, skipped: 0, dropped: 0 };
  const waits = { loadWaits: 0, refreshes: 0, refreshLoads: 0, failures: 0 };

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

  /** Sends the pending DELs, oldest first, 1 000 keys per command, while the breaker lets them through. */
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
        // A key deleted again while its DEL was on the wire stays pending for the next round.
        for (const [key, at] of batch) if (pending.get(key) === at) pending.delete(key);
      }
    } finally {
      flushing = false;
    }
    if (pending.size > 0) retryLater();
  }

  function loadOnce(key: string, load: () => Promise<string | undefined>, refresh = false) {
    const shared = inflight.get(key);
    if (shared) return shared;
    async function fill(): Promise<string | undefined> {
      counts.loads++;
      if (refresh) waits.refreshLoads++;
      const startedMs = performance.now();
      const value = await load();
      // A delete() during the load disowns this flight: its value may predate the write. The check and the
      // SET's send happen in one tick, so a later DEL is queued behind the SET on the same connection.
      if (value !== undefined && inflight.get(key) === flight && !pending.has(key)) {
        const stored = early
          ? encode(value, performance.now() - startedMs, Date.now() + options.ttlMs)
          : value;
        void send(() => redis.set(prefix + key, stored, "PX", options.ttlMs));
      }
      return value;
    }
    // `flight` is read inside fill() only after its first await, when it is assigned.
    const flight = fill().finally(() => {
      if (inflight.get(key) === flight) inflight.delete(key);
    });
    inflight.set(key, flight);
    return flight;
  }

  return {
    async getOrLoad(key: string, load: () => Promise<string | undefined>): Promise<string | undefined> {
      if (pending.size > 0) void flushPending(); // its DELs go out before this GET
      const cached = pending.has(key) ? NO_REPLY : await send(() => redis.get(prefix + key));
      if (typeof cached === "string") {
        counts.hits++;
        const entry = decode(cached);
        const due = early && xfetchDue(Date.now(), entry.expiryMs, entry.deltaMs, early.beta, random());
        // A load already in flight here will SET the key again: deciders share it.
        if (due && !inflight.has(key)) {
          waits.refreshes++;
          loadOnce(key, load, true).catch(() => {
            waits.failures++;
          });
        }
        return entry.value;
      }
      counts.misses++;
      waits.loadWaits++; // every miss starts or joins a load
      return loadOnce(key, load);
    },
    async delete(key: string): Promise<void> {
      inflight.delete(key);
      if (pending.size > 0) void flushPending();
      if ((await send(() => redis.del(prefix + key))) === NO_REPLY) markPending(key);
    },
    stats() {
      return {
        tiers: { redis: { hits: counts.hits, misses: counts.misses } },
        loads: counts.loads,
        errors: counts.errors,
        invalidationsPublished: 0,
        invalidationsReceived: 0,
        breakerOpens: breaker.opens,
        breakerSkipped: counts.skipped,
        invalidationsPending: pending.size,
        invalidationsDropped: counts.dropped,
        loadWaits: waits.loadWaits,
        earlyRefreshes: waits.refreshes,
        refreshLoads: waits.refreshLoads,
        refreshFailures: waits.failures,
      };
    },
    async healthy(): Promise<boolean> {
      return redis.ping().then(
        (reply) => reply === "PONG",
        () => false,
      );
    },
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retryTimer);
      pending.clear();
      inflight.clear();
      if (owned) redis.disconnect();
    },
  };
}
