/**
 * redis: cache-aside in Redis, shared by every instance of the service, on ioredis or Bun's built-in client.
 *
 * Read path: GET prefix+key → hit; miss → read the key's generation, run the loader, then fill Redis in the
 * background (`SET key value PX ttlMs` if the generation is unchanged): the value is returned as soon as it
 * is loaded, and the fill's failure is only counted. Concurrent misses for one key in this process share one
 * load (in-flight promise map; failures are not cached). Invalidation: `delete(key)` disowns a load in flight
 * here and, in one script, gives the key a new generation and DELs it.
 * The stale fill, closed: instance B misses and loads the old row; A commits, deletes; B's load returns.
 * Without a check B would SET the old row after A's DEL, for a full `ttlMs`. So each key has a generation in
 * Redis (`prefix + "\u0000gen:" + key`, a random token living `maxLoadMs`): a miss reads it before it loads
 * (leaving a new one if there is none), a delete replaces it, and the fill is a script that SETs only if it
 * is still the one read. A load that overlapped a delete anywhere is refused (counted in
 * `staleFillsRefused`), whatever the timing. Why this and not the alternatives: a tombstone left by the
 * delete must outlive the slowest load and also blocks the new row's fills while it lives; a version in the
 * value needs the row's own version, which a loader returning a string does not give; a second DEL after a
 * delay misses any load slower than the delay. The generation refuses exactly the overlapping fills, costs a
 * hit nothing, and its expiry or eviction can only refuse a fill (tokens are never reused), never let an old
 * one in. A load slower than `maxLoadMs` (default 10 000) is returned but not stored, for that reason. Cost:
 * a miss waits one more round trip (the generation read) before it loads; the fill and the delete are one Lua
 * script each instead of SET and DEL; Redis holds a small key per key missed or deleted in the last
 * `maxLoadMs`. The scripts touch a key and its generation together: one Redis, not a cluster.
 * Trade-offs: one network round trip per hit and JSON already serialized by the caller; memory lives in
 * Redis, not in the process.
 * Clients: `redis` takes an ioredis `Redis`, a Bun `RedisClient` (`import { RedisClient } from "bun"`), or a
 * URL, from which `client` ("ioredis", the default, or "bun") creates one with the fail-fast settings below.
 * The cache sends its few commands (GET, EVAL/EVALSHA, PING) through a small interface with one adapter per
 * client, so the breaker, the pending invalidations, the generation checks, early refresh and every counter
 * are the same code on both. Both clients' types here are structural: the file type-checks without either
 * package, and ioredis is loaded (`createRequire`) only when a URL asks for it, so a service on Bun's client
 * installs nothing. A bundler does not follow that require: when bundling, pass a client, not a URL.
 * Failure behaviour: fail open, nothing is thrown. Every Redis error (down, timeout, refused) is a miss
 * answered by the loader and counted in `stats().errors`. The fail-fast client settings below bound a command
 * by `commandTimeout` (an injected ioredis client needs one too) instead of ioredis' default queueing (10–73 s
 * stalls). Bun's client has no command timeout, rejects every command before its first connection when its
 * offline queue is off, stays dead once its reconnect attempts are spent, and never notices a half-open
 * connection (with its defaults a GET waits ~31 s on a dead Redis). So on Bun every command is raced against
 * `commandTimeoutMs` (default 100, ioredis' `commandTimeout`); a command that finds it disconnected calls
 * `connect()` first (one at a time, inside that bound), so the client reconnects on demand, at most once per
 * breaker probe while Redis is down; and once commands have gone unanswered for 5 s the connection is closed
 * (ioredis' `socketTimeout`), to be reopened by the next command. An injected Bun client gets the same, whatever its
 * options; `failFastBunOptions` (no offline queue, no reconnect loop of its own, 1 s to connect) are what a
 * URL creates. A circuit breaker (bentocache's L2 breaker) saves even that: after `breakerThreshold` (default 3)
 * consecutive failed commands it opens for `breakerCooldownMs` (default 1 000), sending nothing to Redis:
 * reads go to the loader, fills are skipped (counted in `breakerSkipped`; openings in `breakerOpens`). Then
 * one command is let through as a probe: success closes the breaker, failure opens it for another cool-down.
 * A hung Redis thus costs each request in flight at most one command timeout until the breaker opens, then
 * nothing but one probe per cool-down.
 * Invalidations are not lost: a key whose DEL fails or is skipped joins a pending set (at most
 * `maxPendingInvalidations`, default 10 000). Until its DEL lands, this instance reads that key from the
 * loader, never from Redis, and does not fill it. The pending DELs are retried every cool-down and by the
 * next call, ahead of its own command (when the breaker is half-open they are the probe), so a key written
 * during an outage is not served stale after it. A replay is the same script: it refuses the fills of loads
 * that began before it. A fill that meets an open breaker is skipped, never sent later.
 * Staleness bound, Redis up: none once delete() has returned, on any instance: the old value is gone and no
 * fill can put it back (a read that began before the delete may still answer it). While the delete is
 * pending: none in this instance; others read the old value until the replay lands, never past `ttlMs` after
 * the write (it was set before). Past the cap the oldest pending key is dropped (counted in
 * `invalidationsDropped`), and this instance may read its old value too, for the same `ttlMs` at most.
 * close() forgets what is still pending.
 * Early refresh (`earlyRefresh`, off when absent): XFetch (Vattani, Chierichetti, Lowenstein, VLDB 2015).
 * Each stored value carries `deltaMs` (how long its load took) and its expiry; a hit refreshes early when
 * `now − deltaMs · β · ln(random()) ≥ expiry`, random() in (0, 1], i.e. with probability exp(−(expiry − now)
 * / (β · deltaMs)) per hit: slow loads and hot keys refresh sooner. β = 1 is the paper's choice; larger
 * refreshes earlier. The hit is answered with the value it read at once and one background reload starts
 * (single-flighted with any load of that key here; a delete during it disowns it like any load); it SETs the
 * new value with a fresh `ttlMs` like any fill (breaker and pending rules included), so other instances read
 * the new expiry and do not refresh it again; it reads the generation before it loads, and its fill is
 * refused like a miss's if a delete came meanwhile. A failed reload is counted (`refreshFailures`) and the
 * old value stays until its expiry, as does an absent result. Cost: one extra load per refresh (hot keys are
 * reloaded a little before every expiry, more loads than the misses they save; instances that decide in the
 * same instant each load once, as they would at a miss). Expiry is wall-clock (`Date.now()`), so instances
 * need roughly synchronized clocks. Loads faster than a millisecond barely refresh early: they cost little
 * anyway.
 * Serialization: values are strings the caller serializes, stored as they are. With early refresh on they
 * are stored as `"\u0000xf:<expiryMs>:<deltaMs>:" + value` (still one GET per read, no JSON re-escaping of
 * the value); every instance reads both forms, so early refresh can be switched per instance. A value that
 * itself starts with that NUL-led marker would be misread: don't store one.
 *
 * Copying this file? Needs ioredis@^6 for the ioredis client (loaded only then); Bun's client needs nothing.
 * Bun's client: Bun ≥ 1.2.9, tested on 1.4.4.
 *
 *   const cache = createCache({ redis: "redis://127.0.0.1:6379", ttlMs: 60_000, earlyRefresh: { beta: 1 } });
 *   // Bun's client: { redis: "redis://127.0.0.1:6379", client: "bun", ... }, or one of yours:
 *   // { redis: new RedisClient(url, failFastBunOptions), ... }
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits
 */
import { createHash, randomUUID } from "node:crypto";
import { createRequire } from "node:module";

/** What this file calls on an ioredis `Redis` (structural: ioredis is needed only to create one). */
interface IoredisClient {
  get(key: string): Promise<string | null>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  ping(): Promise<string>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  connect(): Promise<void>;
  disconnect(): void;
}

/** What this file calls on a Bun `RedisClient` (structural too). */
interface BunRedisClient {
  readonly connected: boolean;
  connect(): Promise<void>;
  close(): void;
  send(command: string, args: string[]): Promise<unknown>;
  get(key: string): Promise<string | null>;
  ping(): Promise<string>;
}

export interface RedisCacheOptions {
  /** An ioredis `Redis` or a Bun `RedisClient` (left open by close()), or a URL to create one from. */
  redis: IoredisClient | BunRedisClient | string;
  /** Which client a URL creates, with its fail-fast settings; default "ioredis". */
  client?: "ioredis" | "bun";
  /** Each command's bound on a Bun client (raced) and on an ioredis one made from a URL; default 100. */
  commandTimeoutMs?: number;
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
  /** A load slower than this is returned but not stored (its generation lives this long). Default 10 000. */
  maxLoadMs?: number;
}

/** The breaker's defaults (the lab records them in each row's redis_client). */
export const breakerDefaults = { threshold: 3, cooldownMs: 1_000 };

/** ioredis settings for a cache: errors become misses quickly instead of waiting in its offline queue. */
export const failFastRedisOptions: {
  enableOfflineQueue: boolean;
  maxRetriesPerRequest: number;
  commandTimeout: number;
  connectTimeout: number;
  socketTimeout: number;
  retryStrategy: (attempt: number) => number;
  lazyConnect: boolean;
  protocol?: 2 | 3;
  enableAutoPipelining?: boolean;
} = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: 100,
  connectTimeout: 1_000,
  socketTimeout: 5_000,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
  lazyConnect: true,
};

/** Bun's client settings: no offline queue, no reconnect loop (this file reconnects on demand), 1 s to connect. */
export const failFastBunOptions = {
  enableOfflineQueue: false,
  autoReconnect: false,
  connectionTimeout: 1_000,
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

/** Where a key's generation lives: under a name no value key has (keys never start with NUL). */
const GENERATION = "\u0000gen:";

/** A Lua script and its SHA1, by which Redis runs it once it holds it. */
interface Script {
  lua: string;
  sha: string;
}

function script(lua: string): Script {
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

/** The delete: per key (KEYS in value, generation pairs), a new generation, then the DEL. */
const INVALIDATE = script(`for i = 1, #KEYS, 2 do
  redis.call("SET", KEYS[i + 1], ARGV[1], "PX", ARGV[2])
  redis.call("DEL", KEYS[i])
end
return 1`);

/** The commands the cache sends, whichever client carries them; `end` closes an owned client only. */
interface Commands {
  get(key: string): Promise<string | null>;
  eval(lua: string, keys: string[], args: string[]): Promise<unknown>;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  ping(): Promise<string>;
  end(): void;
}

function ioredisCommands(client: IoredisClient, owned: boolean): Commands {
  if (owned) {
    client.on("error", () => {}); // connection errors surface as rejected commands, counted below
    client.connect().catch(() => {});
  }
  return {
    get: (key) => client.get(key),
    eval: (lua, keys, args) => client.eval(lua, keys.length, ...keys, ...args),
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    ping: () => client.ping(),
    end: () => {
      if (owned) client.disconnect();
    },
  };
}

/** Bun's client, fail-fast by hand: each command raced against `timeoutMs`, connected on demand (header). */
function bunCommands(client: BunRedisClient, timeoutMs: number, owned: boolean): Commands {
  let connecting: Promise<void> | undefined;
  // Since when commands have gone unanswered (none timed out since the last reply: undefined).
  let stalledSinceMs: number | undefined;
  function connect(): Promise<void> {
    connecting ??= client
      .connect()
      .then(() => {
        stalledSinceMs = undefined;
      })
      .finally(() => {
        connecting = undefined;
      });
    return connecting;
  }
  function bounded<T>(command: () => Promise<T>): Promise<T> {
    // Connected: sent in this tick. Otherwise sent once connected, in call order, or rejected with the connect.
    const sent = connecting !== undefined || !client.connected ? connect().then(command) : command();
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        const nowMs = performance.now();
        stalledSinceMs ??= nowMs - timeoutMs;
        // Nothing answered for socketTimeout while commands wait: a half-open connection, reopened on demand.
        if (nowMs - stalledSinceMs >= failFastRedisOptions.socketTimeout && client.connected) client.close();
        reject(new Error(`Redis command timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      sent.then(
        (reply) => {
          clearTimeout(timer);
          stalledSinceMs = undefined;
          resolve(reply);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
  if (owned) connect().catch(() => {});
  return {
    get: (key) => bounded(() => client.get(key)),
    eval: (lua, keys, args) =>
      bounded(() => client.send("EVAL", [lua, String(keys.length), ...keys, ...args])),
    evalsha: (sha, keys, args) =>
      bounded(() => client.send("EVALSHA", [sha, String(keys.length), ...keys, ...args])),
    ping: () => bounded(() => client.ping()),
    end: () => {
      if (owned) client.close();
    },
  };
}

/** The adapter for `options.redis`: an injected client as it is, or one created from the URL. */
function commandsFor(options: RedisCacheOptions): Commands {
  const timeoutMs = options.commandTimeoutMs ?? failFastRedisOptions.commandTimeout;
  const { redis } = options;
  if (typeof redis !== "string") {
    return "send" in redis ? bunCommands(redis, timeoutMs, false) : ioredisCommands(redis, false);
  }
  if (options.client === "bun") {
    const bun = (globalThis as { Bun?: { RedisClient?: new (url: string, o: object) => BunRedisClient } })
      .Bun;
    if (bun?.RedisClient === undefined) {
      throw new TypeError(
        `Cannot create cache: client "bun" needs Bun's RedisClient: received ${typeof bun}`,
      );
    }
    return bunCommands(new bun.RedisClient(redis, failFastBunOptions), timeoutMs, true);
  }
  // Loaded here, not imported: a cache on Bun's client runs without ioredis installed.
  const { Redis } = createRequire(import.meta.url)("ioredis") as {
    Redis: new (url: string, o: typeof failFastRedisOptions) => IoredisClient;
  };
  return ioredisCommands(new Redis(redis, { ...failFastRedisOptions, commandTimeout: timeoutMs }), true);
}

/**
 * Runs scripts on `redis`: whole (EVAL) until it has answered one, then by SHA (EVALSHA), whole again after a
 * NOSCRIPT (a restart). Sent in the caller's tick, so a command sent after it runs after it; an EVALSHA
 * retried after NOSCRIPT loses that order, which costs a miss at most (the fill is still checked).
 */
function scriptRunner(redis: Commands) {
  const held = new Set<string>();
  return async (script: Script, keys: string[], args: string[]): Promise<unknown> => {
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
  const redis = commandsFor(options);
  const prefix = options.prefix ?? "cache:";
  const cooldownMs = options.breakerCooldownMs ?? breakerDefaults.cooldownMs;
  const maxPending = options.maxPendingInvalidations ?? 10_000;
  const maxLoadMs = options.maxLoadMs ?? 10_000;
  const instanceId = randomUUID();
  let generations = 0;
  const run = scriptRunner(redis);
  const breaker = new CircuitBreaker(options.breakerThreshold ?? breakerDefaults.threshold, cooldownMs);
  const inflight = new Map<string, Promise<string | undefined>>();
  // Keys whose DEL has not landed → the stamp of their last delete(); insertion order is oldest first.
  const pending = new Map<string, number>();
  let stamp = 0;
  let flushing = false;
  let closed = false;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  const counts = { hits: 0, misses: 0, loads: 0, errors: 0, skipped: 0, dropped: 0, refused: 0 };
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

  /** A new generation for `keys` and their DEL, in one script: a fill that loaded before it is refused. */
  function invalidate(keys: string[]): Promise<unknown> {
    const pairs = keys.flatMap((key) => [prefix + key, prefix + GENERATION + key]);
    return run(INVALIDATE, pairs, [`${instanceId}:${++generations}`, String(maxLoadMs)]);
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
        const keys = batch.map(([key]) => key);
        if ((await send(() => invalidate(keys), permit)) === NO_REPLY) break;
        // A key deleted again while its DEL was on the wire stays pending for the next round.
        for (const [key, at] of batch) if (pending.get(key) === at) pending.delete(key);
      }
    } finally {
      flushing = false;
    }
    if (pending.size > 0) retryLater();
  }

  /** `answered`: Redis answered the read that missed (a failing Redis is spared a fill and a second wait). */
  function loadOnce(key: string, load: () => Promise<string | undefined>, refresh = false, answered = true) {
    const shared = inflight.get(key);
    if (shared) return shared;
    async function fill(): Promise<string | undefined> {
      counts.loads++;
      if (refresh) waits.refreshLoads++;
      const generationKey = prefix + GENERATION + key;
      // Read before the load starts: a delete anywhere after this point changes it, and the fill is refused.
      const generation =
        answered && !pending.has(key)
          ? await send(() =>
              run(READ_GENERATION, [generationKey], [`${instanceId}:${++generations}`, String(maxLoadMs)]),
            )
          : NO_REPLY;
      const startedMs = performance.now();
      const value = await load();
      // A delete() here during the load disowns this flight (no fill at all). The check and the fill's send
      // happen in one tick, so a later DEL from here is queued behind the fill on the same connection.
      if (
        value !== undefined &&
        typeof generation === "string" &&
        inflight.get(key) === flight &&
        !pending.has(key)
      ) {
        const stored = early
          ? encode(value, performance.now() - startedMs, Date.now() + options.ttlMs)
          : value;
        const args = [generation, stored, String(options.ttlMs)];
        void send(() => run(FILL, [prefix + key, generationKey], args)).then((reply) => {
          if (reply === 0) counts.refused++;
        });
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
      return loadOnce(key, load, false, cached !== NO_REPLY);
    },
    async delete(key: string): Promise<void> {
      inflight.delete(key);
      if (pending.size > 0) void flushPending();
      if ((await send(() => invalidate([key]))) === NO_REPLY) markPending(key);
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
        staleFillsRefused: counts.refused,
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
      redis.end();
    },
  };
}
