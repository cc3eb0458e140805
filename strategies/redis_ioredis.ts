/**
 * redis_ioredis: the commands redis.ts and two_tier.ts send, on an ioredis client.
 *
 * Give it an ioredis `Redis` (left open by the cache's close(); give it a `commandTimeout`, as
 * failFastRedisOptions does) or a URL, from which it creates one with failFastRedisOptions: every command
 * then fails within `commandTimeout` instead of waiting in ioredis' offline queue (10–73 s when Redis is down).
 *
 *   const cache = createCache({ redis: ioredisCommands("redis://127.0.0.1:6379"), ttlMs: 60_000 });
 *
 * Copying this file? Needs ioredis@^6, and redis.ts beside it.
 */
import { Redis } from "ioredis";

/** ioredis settings for a cache: errors become misses quickly instead of waiting in its offline queue. */
export const failFastRedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  commandTimeout: 100,
  connectTimeout: 1_000,
  socketTimeout: 5_000,
  retryStrategy: (attempt: number) => Math.min(attempt * 100, 1_000),
  lazyConnect: true,
};

/** The commands on `redis`, or on a client of their own made from a URL (closed by `end()`). */
export function ioredisCommands(redis: Redis | string, options: { commandTimeoutMs?: number } = {}) {
  const commandTimeout = options.commandTimeoutMs ?? failFastRedisOptions.commandTimeout;
  const owned = typeof redis === "string";
  const client =
    typeof redis === "string" ? new Redis(redis, { ...failFastRedisOptions, commandTimeout }) : redis;
  if (owned) {
    client.on("error", () => {}); // connection errors surface as rejected commands, counted by the cache
    client.connect().catch(() => {});
  }
  return {
    get: (key: string) => client.get(key),
    eval: (lua: string, keys: string[], args: string[]) => client.eval(lua, keys.length, ...keys, ...args),
    evalsha: (sha: string, keys: string[], args: string[]) =>
      client.evalsha(sha, keys.length, ...keys, ...args),
    ping: () => client.ping(),
    publish: (channel: string, message: string) => client.publish(channel, message),
    /** two_tier's subscriber: a duplicate that queues its SUBSCRIBE until connected and never stops reconnecting. */
    subscribe(channel: string, on: { message(text: string): void; subscribed(): void; failed(): void }) {
      const subscriber = client.duplicate({
        lazyConnect: false,
        enableOfflineQueue: true,
        maxRetriesPerRequest: null,
        autoResubscribe: false, // subscribed again below, on every "ready", to tell two_tier when
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
