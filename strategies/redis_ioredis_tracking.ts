/**
 * redis_ioredis_tracking: the commands tracking.ts sends, on ioredis, in Redis's two-connections mode: the
 * reads go on a connection with `CLIENT TRACKING ON REDIRECT <id>`, and Redis sends each invalidation to a
 * second connection, subscribed (RESP2) to `__redis__:invalidate`.
 *
 * Why two connections, not node-redis's one over RESP3 (redis_node.ts): ioredis writes a command when it is
 * sent, node-redis at the end of the event loop's turn (setImmediate), which under load is much of what a
 * Redis hit waits (docs/strategies.md). ioredis drops RESP3's invalidation pushes, so they come as messages.
 *
 * Safety, as the Redis docs ask of this mode: a reply and its invalidation come on two connections, in no set
 * order; tracking.ts keeps a key in flight from its GET to its reply, and an invalidation heard meanwhile
 * keeps the reply out of L1. Everything local goes (`null`) when either connection closes, a command fails
 * (not Redis's error reply), or the subscriber misses a heartbeat; until the reading connection has tracking
 * on towards the subscriber of now, its GETs and PINGs wait for it (failing past the command timeout, as a
 * command to a Redis that does not answer), so nothing untracked fills L1.
 *
 *   const redis = ioredisTrackingCommands("redis://127.0.0.1:6379");
 *   const cache = createCache({ redis, ttlMs: 60_000, l1MaxSize: 10_000, l1TtlMs: 5_000 });
 *
 * Not on a cluster: each node would need its own pair.
 * Copying this file? Needs ioredis@^6, and tracking.ts with redis.ts and redis_ioredis.ts beside it.
 */
import { Redis } from "ioredis";
import { failFastRedisOptions } from "./redis_ioredis.ts";

const CHANNEL = "__redis__:invalidate";

/**
 * The commands on two connections of their own (both closed by `end()`): made from a URL with
 * failFastRedisOptions, or duplicated from an ioredis `Redis` (its address and options). A connection
 * redirects its tracking to one subscriber only: two caches on one connection would leave the first deaf.
 */
export function ioredisTrackingCommands(
  redis: Redis | string,
  options: { commandTimeoutMs?: number; heartbeatMs?: number } = {},
) {
  if (typeof redis !== "string" && "slots" in redis) {
    throw new TypeError(
      "Cannot track: a Cluster's nodes would each need a pair of connections: received a Cluster",
    );
  }
  const timeout = options.commandTimeoutMs === undefined ? {} : { commandTimeout: options.commandTimeoutMs };
  const data =
    typeof redis === "string"
      ? new Redis(redis, { ...failFastRedisOptions, ...timeout })
      : redis.duplicate({ lazyConnect: true, ...timeout });
  const commandTimeout = data.options.commandTimeout ?? failFastRedisOptions.commandTimeout;
  // The subscriber waits for Redis as long as it takes: it is told of nothing it could miss while down.
  const subscriber = data.duplicate({
    protocol: 2, // RESP3 would bring the invalidations as pushes, which ioredis drops
    lazyConnect: true,
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    autoResubscribe: false, // subscribed again on every "ready", below, after asking its new id
  });
  let tracking = false; // `data` has tracking on towards the subscriber's current id
  let waiting: ((on: boolean) => void)[] = []; // reads held until it has (true), or the connection went (false)
  const release = (on: boolean) => {
    for (const waiter of waiting.splice(0)) waiter(on);
  };
  let subscriberId: number | null = null;
  let invalidate: (key: string | null) => void = () => {};
  const dropAll = () => invalidate(null);
  /** A connection closed: the reading one comes back without tracking, or the one it redirected to is gone. */
  const untracked = () => {
    tracking = false;
    dropAll();
  };
  /**
   * Sends a read once tracking is on: while the connections are being made, within the command timeout (as a
   * command waits for Redis); at once when the reading one is down (as ioredis fails it without its queue).
   */
  function whenTracking<T>(command: string, send: () => Promise<T>): Promise<T> {
    if (!["wait", "connecting", "connect", "ready"].includes(data.status)) return checked(send());
    return new Promise<void>((resolve, reject) => {
      const waiter = (on: boolean) => {
        clearTimeout(timer);
        if (on) resolve();
        else reject(new Error(`Cannot run ${command}: the connection closed before tracking was on`));
      };
      const timer = setTimeout(() => {
        waiting = waiting.filter((other) => other !== waiter);
        reject(
          new Error(`Cannot run ${command}: tracking is not on within ${commandTimeout} ms: received none`),
        );
      }, commandTimeout);
      waiting.push(waiter);
    }).then(() => checked(send()));
  }

  /** Tracking on `data` towards the subscriber, once both are ready (again after either reconnects). */
  async function redirect(): Promise<void> {
    const id = subscriberId;
    if (id === null || data.status !== "ready") return;
    try {
      await data.call("CLIENT", "TRACKING", "ON", "REDIRECT", String(id));
      tracking = subscriberId === id && data.status === "ready";
      if (tracking) release(true);
    } catch {
      untracked(); // tried again on the next "ready" of either
    }
  }
  subscriber.on("ready", async () => {
    try {
      const id = Number(await subscriber.call("CLIENT", "ID")); // before SUBSCRIBE: RESP2 allows no CLIENT after
      await subscriber.subscribe(CHANNEL);
      subscriberId = id;
      await redirect();
    } catch {
      subscriber.disconnect(true); // again, on a new connection
    }
  });
  // A null message is Redis's "everything" (a flush); otherwise the keys that changed.
  subscriber.on("messageBuffer", (_channel: Buffer, message: Buffer[] | Buffer | null) => {
    if (message === null) dropAll();
    else if (Array.isArray(message)) for (const key of message) invalidate(key.toString());
    else invalidate(message.toString());
  });
  subscriber.on("close", () => {
    subscriberId = null;
    untracked();
  });
  subscriber.on("error", () => {});
  data.on("ready", redirect);
  data.on("close", () => {
    untracked();
    release(false);
  });
  data.on("error", () => {}); // connection errors surface as rejected commands, counted by the cache

  /**
   * A failed command (not Redis's error reply) may have met a dead or hung connection. Watched beside the
   * caller, not in front: the caller gets the command's own promise, one microtask sooner.
   */
  const checked = <T>(sent: Promise<T>): Promise<T> => {
    sent.catch((error: unknown) => {
      // By name: a client from another copy of ioredis throws its own class.
      if ((error as Error | undefined)?.name !== "ReplyError") dropAll();
    });
    return sent;
  };

  return {
    get: (key: string) => (tracking ? checked(data.get(key)) : whenTracking("GET", () => data.get(key))),
    eval: (lua: string, keys: string[], args: string[]) =>
      checked(data.eval(lua, keys.length, ...keys, ...args)),
    evalsha: (sha: string, keys: string[], args: string[]) =>
      checked(data.evalsha(sha, keys.length, ...keys, ...args)),
    ping: () => (tracking ? checked(data.ping()) : whenTracking("PING", () => data.ping())),
    /** Calls `invalidate` with each key Redis sends, and with null when everything local must go. */
    track(onInvalidate: (key: string | null) => void): { end(): void } {
      invalidate = onInvalidate;
      data.connect().catch(() => {});
      subscriber.connect().catch(() => {});
      // A hung subscriber is silent: a PING (allowed while subscribed) not answered within the command
      // timeout drops everything and reconnects it.
      const heartbeat = setInterval(() => {
        if (tracking) checked(data.ping()).catch(() => {});
        if (subscriber.status !== "ready") return;
        const timer = setTimeout(() => {
          dropAll();
          subscriber.disconnect(true);
        }, commandTimeout);
        subscriber.ping().then(
          () => clearTimeout(timer),
          () => {},
        );
      }, options.heartbeatMs ?? 1_000);
      heartbeat.unref();
      return {
        end: () => {
          clearInterval(heartbeat);
          invalidate = () => {};
          subscriber.disconnect();
        },
      };
    },
    end: () => {
      subscriber.disconnect();
      data.disconnect();
    },
  };
}
