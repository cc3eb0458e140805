/**
 * redis: cache-aside in Redis, shared by every instance of a service, on any client an adapter wraps.
 *
 * Read path: GET prefix+key → hit. A miss reads the key's generation, runs the loader (one load per key in
 * this process at a time; a failed or absent result is not cached), answers, and fills Redis in the
 * background with a script that SETs `value PX ttlMs` only if the generation is still the one it read.
 * Invalidation: `delete(key)` disowns a load in flight here and, in one script, gives the key a new
 * generation and DELs it, so a load that overlapped a delete on any instance is never stored.
 * Failure behaviour: fail open, nothing is thrown: a Redis error or timeout is a miss answered by the loader
 * (`stats().errors`). `breakerThreshold` (3) failures in a row open a breaker (one per node on a cluster):
 * nothing is sent for `breakerCooldownMs` (1 000), then one probe. A delete Redis did not take stays pending
 * (at most `maxPendingInvalidations`): this instance bypasses Redis for that key until the delete is replayed.
 * Staleness bound: none once delete() has returned. While its delete is pending: none in this instance, at
 * most `ttlMs` on others (and here too for a key dropped past the cap).
 * Early refresh (`earlyRefresh: { beta }`, off when absent): XFetch answers a hit near its expiry at once and
 * reloads it in the background, the sooner the slower its load was.
 *
 *   import { ioredisCommands } from "./redis_ioredis.ts"; // or bunCommands from "./redis_bun.ts"
 *   const cache = createCache({ redis: ioredisCommands("redis://127.0.0.1:6379"), ttlMs: 60_000 });
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits
 *
 * On a Redis Cluster: a value and its generation share a hash slot (`prefix{key}`), so every script touches
 * one slot; use ioredisClusterCommands (redis_ioredis.ts) or nodeClusterCommands (redis_node_cluster.ts), a
 * prefix without braces, and keys that do not start with `}`. Bun's client has no cluster support.
 *
 * Copying this file? Needs an adapter beside it: redis_ioredis.ts, redis_bun.ts or redis_node_cluster.ts; no package of its own.
 * Why it works this way: docs/strategies.md.
 */
import { createHash, randomUUID } from "node:crypto";

/** What the cache sends to Redis; an adapter makes it from a client (redis_ioredis.ts, redis_bun.ts, redis_node_cluster.ts). */
export interface RedisCommands {
  get(key: string): Promise<string | null>;
  eval(lua: string, keys: string[], args: string[]): Promise<unknown>;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  ping(): Promise<string>;
  /** Closes the client if the adapter created it from a URL; an injected one stays open. */
  end(): void;
  /** A cluster adapter's: the node a Redis key's commands go to, so that each node has a breaker of its own. */
  nodeOf?(redisKey: string): string;
}

/** What `onEvent` is told, each named for the counter a lab would add it to. */
export type RedisEvent =
  | "breakerOpens"
  | "breakerCloses"
  | "breakerSkipped"
  | "invalidationsDropped"
  | "loadWaits"
  | "earlyRefreshes"
  | "refreshLoads"
  | "refreshFailures"
  | "staleFillsRefused";

export interface RedisCacheOptions {
  /** The commands, from an adapter: `ioredisCommands(client or URL)` or `bunCommands(client or URL)`. */
  redis: RedisCommands;
  ttlMs: number;
  prefix?: string;
  /** Failed commands (errors or timeouts) in a row that open the breaker; default 3. */
  breakerThreshold?: number;
  /** How long an open breaker sends nothing before it lets one probe through; default 1 000 ms. */
  breakerCooldownMs?: number;
  /** Keys whose delete waits for Redis at most; past it the oldest is dropped. Default 10 000. */
  maxPendingInvalidations?: number;
  /** A load slower than this is returned but not stored (its generation lives this long). Default 10 000. */
  maxLoadMs?: number;
  /** XFetch early refresh; off when absent. `random` must return (0, 1] (default `1 − Math.random()`). */
  earlyRefresh?: { beta: number; random?: () => number };
  /** Told of each event (a miss waiting on a load, the breaker opening…); optional, cheap, never on a hit. */
  onEvent?: (event: RedisEvent) => void;
}

/** Loads the value for a key; `undefined` means absent, which is never cached. */
export type Loader = () => Promise<string | undefined>;

/** A value, how long its load took and when it expires (epoch ms): what XFetch decides on. */
export type Entry = { value: string; deltaMs: number; expiryMs: number };

/** The breaker's defaults (the lab records them in each row's redis_client). */
export const breakerDefaults = { threshold: 3, cooldownMs: 1_000 };

/** XFetch's decision: whether a hit at `nowMs` refreshes an entry expiring at `expiryMs` early. */
export function xfetchDue(nowMs: number, expiryMs: number, deltaMs: number, beta: number, random: number) {
  const r = Math.min(1, Math.max(random, Number.MIN_VALUE)); // ln(0) = −∞: 0 counts as the smallest draw
  return nowMs - deltaMs * beta * Math.log(r) >= expiryMs;
}

/** Starts a value stored with its XFetch fields (early refresh on); a value never starts with NUL. */
const ENVELOPE = "\u0000xf:";

/** A stored value and its XFetch fields; one stored plain is never refreshed early. */
function decode(stored: string): Entry {
  const first = stored.startsWith(ENVELOPE) ? stored.indexOf(":", ENVELOPE.length) : -1;
  const second = first === -1 ? -1 : stored.indexOf(":", first + 1);
  if (second === -1) return { value: stored, deltaMs: 0, expiryMs: Number.POSITIVE_INFINITY };
  const expiryMs = Number(stored.slice(ENVELOPE.length, first));
  return { value: stored.slice(second + 1), deltaMs: Number(stored.slice(first + 1, second)), expiryMs };
}

/**
 * A key's value lives at `prefix{key}`, its generation at `prefix{key}:gen`: the braces are a Redis Cluster
 * hash tag, so both hash by `key` alone, share a slot, and every script below touches one slot.
 */
const tagged = (prefix: string, key: string) => `${prefix}{${key}}`;
const GENERATION = ":gen";

/**
 * The cache key a Redis key holds a value of (`prefix{key}` → `key`); null for a generation or another's key:
 * for whatever hears of Redis keys by name (Redis's client-tracking pushes, keyspace notifications).
 */
export function cacheKeyOf(prefix: string, redisKey: string): string | null {
  return redisKey.startsWith(`${prefix}{`) && redisKey.endsWith("}")
    ? redisKey.slice(prefix.length + 1, -1)
    : null;
}

/** A Lua script and its SHA1, by which Redis runs it once it holds it. */
function script(lua: string) {
  return { lua, sha: createHash("sha1").update(lua).digest("hex") };
}

/** A miss's read of the key's generation before it loads: the token there, or a new one it leaves. */
const READ_GENERATION = script(`local gen = redis.call("GET", KEYS[1])
if gen then return gen end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
return ARGV[1]`);

/** The fill: SET the loaded value only if the generation is still the one read before the load. */
const FILL = script(`if redis.call("GET", KEYS[2]) ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
return 1`);

/** The delete: a new generation for the key, then the DEL of its value. */
const INVALIDATE = script(`redis.call("SET", KEYS[2], ARGV[1], "PX", ARGV[2])
redis.call("DEL", KEYS[1])
return 1`);

/**
 * Runs scripts whole (EVAL) until Redis has answered one, then by SHA (EVALSHA), whole again after a NOSCRIPT
 * (a restart). Sent in the caller's tick, so a command sent after it runs after it.
 */
function scriptRunner(redis: RedisCommands) {
  const held = new Set<string>();
  return async (script: { lua: string; sha: string }, keys: string[], args: string[]) => {
    if (!held.has(script.sha)) {
      const reply = await redis.eval(script.lua, keys, args);
      held.add(script.sha);
      return reply;
    }
    return redis.evalsha(script.sha, keys, args).catch((error: unknown) => {
      if (!String(error).includes("NOSCRIPT")) throw error;
      held.delete(script.sha);
      return redis.eval(script.lua, keys, args);
    });
  };
}

/** bentocache's L2 circuit breaker: `threshold` failures in a row open it; after `cooldownMs` one probe decides. */
function createBreaker(threshold: number, cooldownMs: number, on: (event: RedisEvent) => void) {
  let state: "closed" | "open" | "half-open" = "closed";
  let failures = 0;
  let probeAtMs = 0;
  function open(): void {
    state = "open";
    failures = 0;
    probeAtMs = performance.now() + cooldownMs;
    on("breakerOpens");
  }
  return {
    /** Whether a command may go: always while closed, else one probe per cool-down, nothing until it settles. */
    permit(): "closed" | "probe" | null {
      if (state === "closed") return "closed";
      if (state === "half-open" || performance.now() < probeAtMs) return null;
      state = "half-open";
      return "probe";
    },
    settle(permit: "closed" | "probe", ok: boolean): void {
      if (permit === "probe") {
        if (ok) state = "closed";
        else open();
        if (ok) on("breakerCloses");
      } else if (state === "closed") {
        // Replies to commands sent before it opened do not count: only the probe decides.
        failures = ok ? 0 : failures + 1;
        if (failures >= threshold) open();
      }
    },
  };
}

/**
 * The Redis path this file's cache and two_tier.ts share: breaker, generation-checked fills, pending deletes.
 * `publish`, two_tier's, follows every delete that lands; one that fails leaves the key pending too.
 */
export function redisTier(options: RedisCacheOptions, publish?: (key: string) => Promise<boolean>) {
  const { redis, ttlMs, earlyRefresh: early } = options;
  if (early && !(Number.isFinite(early.beta) && early.beta > 0)) {
    throw new RangeError(`Cannot create cache: earlyRefresh.beta must be > 0: received ${early.beta}`);
  }
  const random = early?.random ?? (() => 1 - Math.random());
  const emit = options.onEvent ?? (() => {});
  const prefix = options.prefix ?? "cache:";
  if (/[{}]/.test(prefix)) {
    throw new RangeError(
      `Cannot create cache: a prefix must not hold a brace (a hash tag's): received ${prefix}`,
    );
  }
  const cooldownMs = options.breakerCooldownMs ?? breakerDefaults.cooldownMs;
  const maxPending = options.maxPendingInvalidations ?? 10_000;
  const maxLoadMs = String(options.maxLoadMs ?? 10_000);
  const threshold = options.breakerThreshold ?? breakerDefaults.threshold;
  type Breaker = ReturnType<typeof createBreaker>;
  const breaker = createBreaker(threshold, cooldownMs, emit);
  // On a cluster one breaker per node: a node down opens its own, and the others' keys keep hitting.
  const breakers = new Map<string, Breaker>([["", breaker]]);
  function breakerOf(key: string): Breaker {
    if (redis.nodeOf === undefined) return breaker;
    const node = redis.nodeOf(tagged(prefix, key));
    let found = breakers.get(node);
    if (found === undefined) {
      found = createBreaker(threshold, cooldownMs, emit);
      breakers.set(node, found);
    }
    return found;
  }
  const run = scriptRunner(redis);
  const instanceId = randomUUID();
  let generations = 0;
  const newGeneration = () => `${instanceId}:${++generations}`;
  const counts = { loads: 0, errors: 0 };
  /** The loads in flight here, by key: a delete (or an invalidation message) disowns one by removing it. */
  const inflight = new Map<string, unknown>();
  // Keys whose delete has not landed → the stamp of their last delete(); insertion order is oldest first.
  const pending = new Map<string, number>();
  let stamp = 0;
  let flushing = false;
  let closed = false;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;

  /** Sends one command unless its breaker is open; `undefined` if it was not sent or failed (counted). */
  function send<T>(
    command: () => Promise<T>,
    on: Breaker = breaker,
    permit = on.permit(),
  ): Promise<T | undefined> {
    if (permit === null) {
      emit("breakerSkipped");
      return Promise.resolve(undefined);
    }
    return command().then(
      (reply) => {
        on.settle(permit, true);
        return reply;
      },
      () => {
        counts.errors++;
        on.settle(permit, false);
        return undefined;
      },
    );
  }

  /**
   * A new generation and the DEL for each of `keys`, a script per key (one slot each), all sent in this tick:
   * a fill that loaded before it is refused.
   */
  function invalidate(keys: string[]): Promise<unknown> {
    const generation = newGeneration();
    const each = (key: string) =>
      run(INVALIDATE, [tagged(prefix, key), tagged(prefix, key) + GENERATION], [generation, maxLoadMs]);
    return Promise.all(keys.map(each));
  }

  function markPending(key: string): void {
    pending.set(key, ++stamp); // a key already pending keeps its place: its old value is the oldest
    if (pending.size > maxPending) {
      pending.delete(pending.keys().next().value as string);
      emit("invalidationsDropped");
    }
    retryLater();
  }

  function retryLater(): void {
    if (retryTimer !== undefined || closed) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void flush();
    }, cooldownMs);
    retryTimer.unref();
  }

  /**
   * Replays the pending deletes, oldest first, 1 000 keys of one breaker a round (then each one's publish),
   * while their breaker lets them; a breaker that refuses or fails is left for the next flush.
   */
  async function flush(): Promise<void> {
    if (flushing) return;
    flushing = true;
    try {
      const stopped = new Set<Breaker>();
      while (pending.size > 0) {
        let on: Breaker | undefined;
        const batch: [string, number][] = [];
        for (const entry of pending) {
          const its = breakerOf(entry[0]);
          if (stopped.has(its) || (on !== undefined && its !== on)) continue;
          on = its;
          if (batch.push(entry) === 1_000) break;
        }
        if (on === undefined) break;
        const permit = on.permit();
        if (
          permit === null ||
          (await send(() => invalidate(batch.map(([key]) => key)), on, permit)) === undefined
        ) {
          stopped.add(on);
          continue;
        }
        const published = publish ? await Promise.all(batch.map(([key]) => publish(key))) : [];
        // A key deleted again while its replay was on the wire stays pending for the next round.
        batch.forEach(([key, at], i) => {
          if (published[i] !== false && pending.get(key) === at) pending.delete(key);
        });
        if (published.includes(false)) stopped.add(on);
      }
    } finally {
      flushing = false;
    }
    if (pending.size > 0) retryLater();
  }

  return {
    instanceId,
    counts,
    inflight,
    pending,
    send,
    decode,
    /** Replays the pending deletes now: sent before whatever the caller sends next. */
    replay(): void {
      if (pending.size > 0) void flush();
    },
    /** The stored value; `null` if Redis has none, `undefined` if it did not answer or the key is pending. */
    get(key: string): Promise<string | null | undefined> {
      return pending.has(key)
        ? Promise.resolve(undefined)
        : send(() => redis.get(tagged(prefix, key)), breakerOf(key));
    },
    /** Whether a hit on `entry` starts an early refresh (XFetch). */
    due(entry: Entry): boolean {
      return (
        early !== undefined && xfetchDue(Date.now(), entry.expiryMs, entry.deltaMs, early.beta, random())
      );
    },
    /**
     * A miss's load: the generation read (if Redis `answered` the GET), the loader, and the fill in the
     * background unless `owned()` turned false meanwhile; `refused` hears of a fill Redis refused.
     */
    async load(
      key: string,
      load: Loader,
      how: { answered: boolean; refresh: boolean; owned: () => boolean; refused?: (entry: Entry) => void },
    ): Promise<Entry | undefined> {
      counts.loads++;
      if (how.refresh) emit("refreshLoads");
      const generationKey = tagged(prefix, key) + GENERATION;
      // Read before the load starts: a delete anywhere after this point changes it, and the fill is refused.
      const generation =
        how.answered && !pending.has(key)
          ? await send(
              () => run(READ_GENERATION, [generationKey], [newGeneration(), maxLoadMs]),
              breakerOf(key),
            )
          : undefined;
      const startedMs = performance.now();
      const value = await load();
      if (value === undefined) return undefined;
      const entry = { value, deltaMs: performance.now() - startedMs, expiryMs: Date.now() + ttlMs };
      // The ownership check and the fill's send happen in one tick: a later DEL from here queues behind it.
      if (typeof generation === "string" && how.owned() && !pending.has(key)) {
        const delta = Math.round(entry.deltaMs * 1_000) / 1_000;
        const stored = early ? `${ENVELOPE}${entry.expiryMs}:${delta}:${value}` : value;
        void send(
          () => run(FILL, [tagged(prefix, key), generationKey], [generation, stored, String(ttlMs)]),
          breakerOf(key),
        ).then((reply) => {
          if (reply !== 0) return;
          emit("staleFillsRefused");
          how.refused?.(entry);
        });
      }
      return entry;
    },
    /** Disowns a load in flight here, then deletes (and publishes), or leaves the key pending. */
    async delete(key: string): Promise<void> {
      inflight.delete(key);
      if (pending.size > 0) void flush();
      // No publish without the DEL: other instances would reload the old value from Redis.
      const deleted = (await send(() => invalidate([key]), breakerOf(key))) !== undefined;
      if (!deleted || (publish && !(await publish(key)))) markPending(key);
    },
    healthy: (): Promise<boolean> =>
      redis
        .ping()
        .then((reply) => reply === "PONG")
        .catch(() => false),
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retryTimer);
      pending.clear();
      inflight.clear();
      redis.end();
    },
  };
}

export function createCache(options: RedisCacheOptions) {
  const tier = redisTier(options);
  const emit = options.onEvent ?? (() => {});
  const counts = { hits: 0, misses: 0 };

  /** One load per key at a time here; with `answered` false (Redis failed) it is neither checked nor stored. */
  function loadOnce(key: string, load: Loader, refresh: boolean, answered = true) {
    const shared = tier.inflight.get(key) as Promise<string | undefined> | undefined;
    if (shared) return shared;
    // `flight` is read by owned() only after the load's first await, when it is assigned.
    const owned = () => tier.inflight.get(key) === flight;
    const flight: Promise<string | undefined> = tier
      .load(key, load, { answered, refresh, owned })
      .then((entry) => entry?.value)
      .finally(() => {
        if (owned()) tier.inflight.delete(key);
      });
    tier.inflight.set(key, flight);
    return flight;
  }

  return {
    async getOrLoad(key: string, load: Loader): Promise<string | undefined> {
      tier.replay(); // its DELs go out before this GET
      const stored = await tier.get(key);
      if (typeof stored === "string") {
        counts.hits++;
        const entry = tier.decode(stored);
        // A load already in flight here will SET the key again: deciders share it.
        if (tier.due(entry) && !tier.inflight.has(key)) {
          emit("earlyRefreshes");
          loadOnce(key, load, true).catch(() => emit("refreshFailures"));
        }
        return entry.value;
      }
      counts.misses++;
      emit("loadWaits"); // every miss starts or joins a load
      return loadOnce(key, load, false, stored !== undefined);
    },
    delete: (key: string): Promise<void> => tier.delete(key),
    stats() {
      const { loads, errors } = tier.counts;
      const tiers = { redis: { hits: counts.hits, misses: counts.misses } };
      return { tiers, loads, errors, invalidationsPending: tier.pending.size };
    },
    healthy: (): Promise<boolean> => tier.healthy(),
    close: (): Promise<void> => tier.close(),
  };
}
