/**
 * two_tier: an in-process LRU (L1, quick-lru) in front of Redis (L2, ioredis or Bun's built-in client), kept
 * coherent across instances by Redis pub/sub invalidation messages.
 *
 * Read path: L1 hit → value. L1 miss → one flight per key in this process: L2 GET; an L2 hit backfills L1;
 * an L2 miss reads the key's generation, runs the loader, fills L1 (`l1TtlMs`) and fills L2 in the
 * background (`SET key value PX ttlMs` if the generation is unchanged): the value is returned as soon as it
 * is loaded, and the fill's failure is only counted. Invalidation: `delete(key)` drops L1 and disowns a
 * flight in progress here, gives the key a new generation and DELs it in L2 (one script), then PUBLISHes
 * the key on `channel`; every other instance drops it from its L1 and disowns its flight for it when the
 * message arrives (about a millisecond on one host).
 * The stale fill, closed: instance B misses and loads the old row; A commits, deletes and publishes; B's load
 * returns before the message reaches B, so B still owns its flight. Without a check B would SET the old row
 * in L2 after A's DEL, and every instance would refill its L1 from it for a full `ttlMs`. So each key has a
 * generation in Redis (`prefix + "\u0000gen:" + key`, a random token living `maxLoadMs`): a miss reads it
 * before it loads (leaving a new one if there is none), a delete replaces it, and the L2 fill is a script
 * that SETs only if it is still the one read. A load that overlapped a delete anywhere is refused (counted in
 * `staleFillsRefused`), whatever the timing, and B drops that value from its own L1 when the refusal comes
 * back. Why this and not the alternatives: a tombstone left by the delete must outlive the slowest load and
 * also blocks the new row's fills while it lives; a version in the value needs the row's own version, which a
 * loader returning a string does not give; a second DEL after the bus delay misses any load slower than the
 * delay. The generation refuses exactly the overlapping fills, costs a hit (L1 or L2) nothing, and its expiry
 * or eviction can only refuse a fill (tokens are never reused), never let an old one in. A load slower than
 * `maxLoadMs` (default 10 000) is returned but not stored in L2, for that reason. Cost: an L2 miss waits one
 * more round trip (the generation read) before it loads; the fill and the delete are one Lua script each
 * instead of SET and DEL; Redis holds a small key per key missed or deleted in the last `maxLoadMs`. The
 * scripts touch a key and its generation together: one Redis, not a cluster.
 * Trade-offs: L1 hits cost no network; L1 holds between `l1MaxSize` and 2 × `l1MaxSize` entries (quick-lru
 * generations). Pub/sub is at-most-once: a message lost while a subscriber reconnects would leave that
 * instance's L1 stale, so L1 is flushed whenever the subscription is (re-)established, and after a gap the
 * flights in progress are disowned too (one may hold a row whose message was lost, with a fill Redis did not
 * check); a message lost otherwise leaves it stale for at most `l1TtlMs`.
 * Clients: `redis` takes an ioredis `Redis`, a Bun `RedisClient` (`import { RedisClient } from "bun"`), or a
 * URL, from which `client` ("ioredis", the default, or "bun") creates one with the fail-fast settings below.
 * The cache sends its few commands (GET, EVAL/EVALSHA, PUBLISH, PING, and SUBSCRIBE on a duplicate of the
 * client: a subscribed connection cannot GET) through a small interface with one adapter per client, so the
 * breaker, the pending invalidations, the generation checks, L1's flushes, early refresh and every counter
 * are the same code on both. Both clients' types here are structural: the file type-checks without either
 * package, and ioredis is loaded (`createRequire`) only when a URL asks for it, so a service on Bun's client
 * installs quick-lru only. A bundler does not follow that require: when bundling, pass a client, not a URL.
 * Failure behaviour: fail open, nothing is thrown. An L2 error is an L2 miss, the loader answers, the error
 * is counted in `stats().errors`; L1 keeps serving. The fail-fast client settings below bound a command by
 * `commandTimeout` (an injected ioredis client needs one too). Bun's client has no command timeout, rejects
 * every command before its first connection when its offline queue is off, stays dead once its reconnect
 * attempts are spent, never notices a half-open connection, and does not restore a subscription after a
 * reconnect (with its defaults a GET waits ~31 s on a dead Redis). So on Bun every command is raced against
 * `commandTimeoutMs` (default 100, ioredis' `commandTimeout`); a command that finds it disconnected calls
 * `connect()` first (one at a time, inside that bound), so the client reconnects on demand, at most once per
 * breaker probe while Redis is down; once commands have gone unanswered for 5 s the connection is closed
 * (ioredis' `socketTimeout`), to be reopened by the next command; and the subscriber reconnects on a timer
 * (100 ms × attempt, at most 1 s, never giving up) and subscribes again on every connect, flushing L1 then
 * as on ioredis. An injected Bun client gets the same, whatever its options; `failFastBunOptions` (no offline
 * queue, no reconnect loop of its own, 1 s to connect) are what a URL creates. A circuit breaker (bentocache's L2 breaker) saves even
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
 * whose PUBLISH failed is simply replayed whole. The replayed DEL is the same script: it refuses the fills
 * of loads that began before it. An L2 fill that meets an open breaker is skipped, never sent later.
 * Staleness bound. This instance: none (its L1 entry is dropped at delete(), L2 is bypassed while pending).
 * Other instances, Redis up: until the message arrives (the bus delay), and no longer: no fill can put the
 * old row back in L2 after the DEL, and a loading instance's L1 copy goes when the message or the refusal
 * arrives, whichever is first. A subscriber that lost its connection: until it is subscribed again, at most
 * `l1TtlMs`. A read that began before the delete may still answer the old row. While this instance cannot
 * reach Redis: they may read the old value from L2 and keep it in L1 until the replay lands (republished on
 * recovery), and never past `ttlMs` + `l1TtlMs` after the write (the old L2 entry was set before it, an L1
 * copy outlives it by at most `l1TtlMs`); if Redis itself was down, their subscribers reconnect and flush L1
 * anyway. Past the cap the oldest pending key is dropped (counted in `invalidationsDropped`) and is never
 * replayed: that `ttlMs` + `l1TtlMs` bound is then the only one, in this instance too. close() forgets what
 * is pending.
 * Early refresh (`earlyRefresh`, off when absent): XFetch (Vattani, Chierichetti, Lowenstein, VLDB 2015)
 * against the database load, i.e. the L2 expiry. Each entry carries `deltaMs` (how long its load took) and
 * its L2 expiry, in L2 and in L1 (an L2 hit backfills L1 with the stored ones, so every instance decides on
 * the same expiry). A hit, in L1 or in L2, refreshes early when `now − deltaMs · β · ln(random()) ≥ expiry`,
 * random() in (0, 1], i.e. with probability exp(−(expiry − now) / (β · deltaMs)) per hit: slow loads and hot
 * keys refresh sooner. β = 1 is the paper's choice; larger refreshes earlier. The hit is answered with the
 * value it found at once and one background refresh starts (single-flighted with any flight of that key here;
 * a delete or an invalidation message during it disowns it like any flight): it GETs L2 first and takes what
 * another instance refreshed there already (a later expiry; no load), else it reads the generation, loads,
 * fills L1 and L2 with fresh TTLs like any fill (breaker, pending and generation rules included: a delete
 * during it refuses its fill). A failed load is counted (`refreshFailures`) and the old value stays until it
 * expires, as does an absent result. An L1 entry that outlives its L2 expiry (`l1TtlMs` longer than what was
 * left) is refreshed by its next hit. An L1 expiry is not refreshed early: the miss waits on one L2 GET, not
 * on the database. Cost: one extra load per refresh (hot keys are reloaded a little before every expiry, more
 * loads than the misses they save; instances that decide in the same instant each load once, as they would at
 * a miss). Expiry is wall-clock (`Date.now()`), so instances need roughly synchronized clocks. Loads faster
 * than a millisecond barely refresh early: they cost little anyway.
 * Serialization: values are strings the caller serializes; L1 stores them by reference, L2 as they are.
 * With early refresh on, L2 stores `"\u0000xf:<expiryMs>:<deltaMs>:" + value` (still one GET per read, no
 * JSON re-escaping of the value); every instance reads both forms, so early refresh can be switched per
 * instance. A value that itself starts with that NUL-led marker would be misread: don't store one.
 *
 * Copying this file? Needs quick-lru@^7, and ioredis@^6 for the ioredis client (loaded only then).
 * Bun's client: Bun ≥ 1.2.23 (pub/sub), tested on 1.4.4.
 *
 *   const cache = createCache({ redis: "redis://127.0.0.1:6379", ttlMs: 60_000, l1MaxSize: 10_000, l1TtlMs: 5_000 });
 *   // or, refreshing hot keys before they expire: { ..., earlyRefresh: { beta: 1 } }
 *   // Bun's client: { redis: "redis://127.0.0.1:6379", client: "bun", ... }, or one of yours:
 *   // { redis: new RedisClient(url, failFastBunOptions), ... }
 *   const body = await cache.getOrLoad("product:7", () => loadProductJson(7));
 *   await cache.delete("product:7"); // after the write commits: every instance drops it
 */
import { createHash, randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import QuickLRU from "quick-lru";

/** What this file calls on an ioredis `Redis` (structural: ioredis is needed only to create one). */
interface IoredisClient {
  get(key: string): Promise<string | null>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  evalsha(sha: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<number>;
  ping(): Promise<string>;
  subscribe(channel: string): Promise<unknown>;
  duplicate(override: {
    lazyConnect: boolean;
    enableOfflineQueue: boolean;
    maxRetriesPerRequest: null;
    autoResubscribe: boolean;
  }): IoredisClient;
  on(event: string, listener: (...args: never[]) => void): unknown;
  connect(): Promise<void>;
  disconnect(): void;
}

/** What this file calls on a Bun `RedisClient` (structural too). */
interface BunRedisClient {
  readonly connected: boolean;
  onconnect: (() => void) | null;
  onclose: ((error: Error) => void) | null;
  connect(): Promise<void>;
  close(): void;
  send(command: string, args: string[]): Promise<unknown>;
  get(key: string): Promise<string | null>;
  publish(channel: string, message: string): Promise<number>;
  ping(): Promise<string>;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<number>;
  unsubscribe(channel: string): Promise<void>;
  duplicate(): Promise<BunRedisClient>;
}

export interface TwoTierCacheOptions {
  /** An ioredis `Redis` or a Bun `RedisClient` (left open by close()), or a URL to create one from. */
  redis: IoredisClient | BunRedisClient | string;
  /** Which client a URL creates, with its fail-fast settings; default "ioredis". */
  client?: "ioredis" | "bun";
  /** Each command's bound on a Bun client (raced) and on an ioredis one made from a URL; default 100. */
  commandTimeoutMs?: number;
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
  /** A load slower than this is returned but not stored (its generation lives this long). Default 10 000. */
  maxLoadMs?: number;
}

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

/** What the subscription reports: each message, each (re-)subscription, and a SUBSCRIBE that failed. */
interface SubscriptionEvents {
  message(text: string): void;
  subscribed(): void;
  failed(): void;
}

/** The commands the cache sends, whichever client carries them; `end` closes an owned client only. */
interface Commands {
  get(key: string): Promise<string | null>;
  eval(lua: string, keys: string[], args: string[]): Promise<unknown>;
  evalsha(sha: string, keys: string[], args: string[]): Promise<unknown>;
  publish(channel: string, message: string): Promise<number>;
  ping(): Promise<string>;
  /** Subscribes a connection of its own to `channel`, again after every reconnect, until `end()`. */
  subscribe(channel: string, on: SubscriptionEvents): { active(): boolean; end(): void };
  end(): void;
}

function ioredisCommands(client: IoredisClient, owned: boolean): Commands {
  if (owned) {
    client.on("error", () => {});
    client.connect().catch(() => {});
  }
  return {
    get: (key) => client.get(key),
    eval: (lua, keys, args) => client.eval(lua, keys.length, ...keys, ...args),
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    publish: (channel, message) => client.publish(channel, message),
    ping: () => client.ping(),
    subscribe: (channel, on) => {
      // The subscriber queues its SUBSCRIBE until connected and never gives up reconnecting.
      const subscriber = client.duplicate({
        lazyConnect: false,
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        autoResubscribe: false,
      });
      let active = false;
      subscriber.on("error", () => {});
      subscriber.on("ready", () => {
        subscriber.subscribe(channel).then(() => {
          on.subscribed();
          active = true;
        }, on.failed);
      });
      subscriber.on("close", () => {
        active = false;
      });
      subscriber.on("message", (_channel: string, message: string) => on.message(message));
      return { active: () => active, end: () => subscriber.disconnect() };
    },
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
    publish: (channel, message) => bounded(() => client.publish(channel, message)),
    ping: () => bounded(() => client.ping()),
    subscribe: (channel, on) => {
      let subscriber: BunRedisClient | undefined;
      let active = false;
      let subscribedOnce = false;
      let ended = false;
      let attempts = 0;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const listener = (message: string) => on.message(message);
      // Bun restores no subscription after a reconnect, yet keeps its listener (a new SUBSCRIBE would call it
      // twice per message): drop it, then subscribe again.
      async function resubscribe(connection: BunRedisClient): Promise<void> {
        try {
          if (subscribedOnce) await connection.unsubscribe(channel).catch(() => {});
          await connection.subscribe(channel, listener);
          subscribedOnce = true;
          attempts = 0;
          on.subscribed();
          active = true;
        } catch {
          on.failed();
        }
      }
      function retryLater(): void {
        active = false;
        if (ended || timer !== undefined) return;
        timer = setTimeout(start, Math.min(++attempts * 100, 1_000));
        timer.unref();
      }
      function start(): void {
        timer = undefined;
        if (ended) return;
        if (subscriber !== undefined) {
          subscriber.connect().catch(retryLater); // its onconnect subscribes
          return;
        }
        client.duplicate().then((connection) => {
          if (ended) return connection.close();
          subscriber = connection;
          connection.onconnect = () => void resubscribe(connection);
          connection.onclose = retryLater;
          if (connection.connected) void resubscribe(connection);
          else connection.connect().catch(retryLater);
        }, retryLater);
      }
      start();
      return {
        active: () => active && subscriber?.connected === true,
        end: () => {
          ended = true;
          clearTimeout(timer);
          subscriber?.close();
        },
      };
    },
    end: () => {
      if (owned) client.close();
    },
  };
}

/** The adapter for `options.redis`: an injected client as it is, or one created from the URL. */
function commandsFor(options: TwoTierCacheOptions): Commands {
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

export function createCache(options: TwoTierCacheOptions) {
  const early = options.earlyRefresh;
  if (early && !(Number.isFinite(early.beta) && early.beta > 0)) {
    throw new RangeError(`Cannot create cache: earlyRefresh.beta must be > 0: received ${early.beta}`);
  }
  const random = early?.random ?? (() => 1 - Math.random());
  const redis = commandsFor(options);
  const prefix = options.prefix ?? "cache:";
  const channel = options.channel ?? `${prefix}invalidate`;
  const cooldownMs = options.breakerCooldownMs ?? 1_000;
  const maxPending = options.maxPendingInvalidations ?? 10_000;
  const maxLoadMs = options.maxLoadMs ?? 10_000;
  let generations = 0;
  const run = scriptRunner(redis);
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
    refused: 0,
  };

  let subscriptions = 0;
  const subscription = redis.subscribe(channel, {
    subscribed: () => {
      // Messages sent while we were not subscribed are lost: start from an empty L1. After a gap, also
      // disown the loads in flight: one may hold a row whose invalidation was lost, and its fill may not
      // have been checked (Redis unreachable), so it would refill L1 with it. The first subscription keeps
      // them: they began on a fresh instance, their fills are checked like any, and dropping them would
      // make its first loads cache nothing.
      l1.clear();
      if (++subscriptions > 1) inflight.clear();
    },
    failed: () => {
      counts.errors++;
    },
    message: (message) => {
      const space = message.indexOf(" ");
      if (message.slice(0, space) === instanceId) return;
      const key = message.slice(space + 1);
      counts.received++;
      inflight.delete(key);
      l1.delete(key);
    },
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
        const keys = batch.map(([key]) => key);
        if ((await send(() => invalidate(keys), permit)) === NO_REPLY) break;
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
        const generationKey = prefix + GENERATION + key;
        // Read before the load starts (only if L2 answered: a failing Redis is spared a second wait): a
        // delete anywhere after this point changes it, and the fill is refused.
        const generation =
          cached === NO_REPLY
            ? NO_REPLY
            : await send(() =>
                run(READ_GENERATION, [generationKey], [`${instanceId}:${++generations}`, String(maxLoadMs)]),
              );
        const startedMs = performance.now();
        const value = await load();
        if (value === undefined) return undefined;
        const loaded = {
          value,
          deltaMs: performance.now() - startedMs,
          expiryMs: Date.now() + options.ttlMs,
        };
        // The ownership check and the fill's send happen in one tick: a later DEL from here queues behind it.
        if (typeof generation === "string" && inflight.get(key) === flight && !pending.has(key)) {
          const args = [generation, early ? encode(loaded) : value, String(options.ttlMs)];
          void send(() => run(FILL, [prefix + key, generationKey], args)).then((stored) => {
            if (stored !== 0) return;
            counts.refused++;
            // The row was read before a delete somewhere: L1 drops it too (if it still holds this copy).
            if (l1.peek(key) === loaded) l1.delete(key);
          });
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
      const deleted = await send(() => invalidate([key]));
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
        staleFillsRefused: counts.refused,
      };
    },
    async healthy(): Promise<boolean> {
      const pong = await redis.ping().then(
        (reply) => reply === "PONG",
        () => false,
      );
      return pong && subscription.active();
    },
    async close(): Promise<void> {
      closed = true;
      clearTimeout(retryTimer);
      pending.clear();
      subscription.end();
      l1.clear();
      inflight.clear();
      redis.end();
    },
  };
}
