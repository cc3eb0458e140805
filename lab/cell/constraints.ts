/**
 * Constraints on the lab's Redis for an experiment about small instances: a `maxmemory` with an eviction
 * policy, put back as it was afterwards, and the evictions Redis counted. CONFIG SET outlives this process,
 * so the caller restores in a `finally`: a killed run leaves the limit in place until the next restore.
 */
import type { Redis } from "ioredis";

export const EVICTION_POLICIES = [
  "noeviction",
  "allkeys-lru",
  "allkeys-lfu",
  "allkeys-random",
  "volatile-lru",
  "volatile-lfu",
  "volatile-random",
  "volatile-ttl",
] as const;
export type EvictionPolicy = (typeof EVICTION_POLICIES)[number];

export interface RedisMemoryLimit {
  maxmemoryBytes: number;
  policy: EvictionPolicy;
  /** What was set before (`maxmemory` in bytes, 0 = unlimited, and the policy), as `restore()` puts back. */
  previous: { maxmemoryBytes: number; policy: string };
  /** `maxmemory 2.0 MiB (2097152 bytes), allkeys-lru`. */
  describe(): string;
  /** Puts the previous maxmemory and policy back. Idempotent. */
  restore(): Promise<void>;
}

/** Sets `maxmemory` and `maxmemory-policy` on `redis`, after reading what they were. */
export async function limitRedisMemory(
  redis: Redis,
  maxmemoryBytes: number,
  options: { policy?: EvictionPolicy } = {},
): Promise<RedisMemoryLimit> {
  const policy = options.policy ?? "allkeys-lru";
  if (!Number.isSafeInteger(maxmemoryBytes) || maxmemoryBytes <= 0) {
    // 0 means unlimited to Redis: a limit of 0 would silently be none.
    throw new RangeError(
      `Cannot limit Redis memory: maxmemoryBytes must be a positive integer: received ${maxmemoryBytes}`,
    );
  }
  if (!EVICTION_POLICIES.includes(policy)) {
    throw new TypeError(
      `Cannot limit Redis memory: policy must be one of ${EVICTION_POLICIES.join(", ")}: received ${policy}`,
    );
  }
  const previous = {
    maxmemoryBytes: Number(await configGet(redis, "maxmemory")),
    policy: await configGet(redis, "maxmemory-policy"),
  };
  if (!Number.isSafeInteger(previous.maxmemoryBytes)) {
    throw new Error(`Cannot read Redis maxmemory: received ${previous.maxmemoryBytes}`);
  }
  // The policy first: once the limit applies, Redis evicts (or refuses writes) by whatever policy is set.
  await redis.config("SET", "maxmemory-policy", policy);
  await redis.config("SET", "maxmemory", String(maxmemoryBytes));
  const set = Number(await configGet(redis, "maxmemory"));
  if (set !== maxmemoryBytes) {
    throw new Error(`Cannot limit Redis memory: set maxmemory ${maxmemoryBytes}, Redis reads ${set}`);
  }
  const describe = `maxmemory ${(maxmemoryBytes / 1_048_576).toFixed(1)} MiB (${maxmemoryBytes} bytes), ${policy}`;
  let restoring: Promise<void> | undefined;
  return {
    maxmemoryBytes,
    policy,
    previous,
    describe: () => describe,
    restore() {
      restoring ??= (async () => {
        // The limit first, so the old policy never applies under the small limit.
        await redis.config("SET", "maxmemory", String(previous.maxmemoryBytes));
        await redis.config("SET", "maxmemory-policy", previous.policy);
      })();
      return restoring;
    },
  };
}

/**
 * The `maxmemory` already in force on `redis` when the lab did not set one, described for the row, or null
 * when it is unlimited (0). A killed run can leave its cell's limit behind; every later row must say so.
 */
export async function foundRedisMemoryLimit(redis: Redis): Promise<string | null> {
  const bytes = Number(await configGet(redis, "maxmemory"));
  if (bytes === 0) return null;
  const policy = await configGet(redis, "maxmemory-policy");
  return `maxmemory ${(bytes / 1_048_576).toFixed(1)} MiB (${bytes} bytes), ${policy} (found, not set by this run)`;
}

/** Keys Redis has evicted since it started (`INFO stats` evicted_keys); take a delta around a run. */
export async function redisEvictions(redis: Redis): Promise<number> {
  const info = await redis.info("stats");
  const value = /^evicted_keys:(\d+)\r?$/m.exec(info)?.[1];
  if (value === undefined) throw new Error("Cannot read Redis evictions: no evicted_keys in INFO stats");
  return Number(value);
}

async function configGet(redis: Redis, parameter: string): Promise<string> {
  const reply = (await redis.config("GET", parameter)) as unknown;
  const value = Array.isArray(reply) ? reply[1] : undefined;
  if (typeof value !== "string") {
    throw new Error(`Cannot read Redis config ${parameter}: received ${JSON.stringify(reply)}`);
  }
  return value;
}
