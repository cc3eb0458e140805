/**
 * A cell's reset: the seed reloaded when the experiment writes, and the lab's Redis keys deleted.
 */
import type { Redis } from "ioredis";
import type postgres from "postgres";
import { ensureSeeded, type SeedPlan } from "../../seed/seed.ts";
import { deleteKeys } from "../../server/delete_keys.ts";

/** Prefix of every Redis key the lab's servers write (and the reset deletes). */
export const REDIS_PREFIX = "cachelab:lab:";

/**
 * A cell's reset: the seed reloaded when asked (experiments that write change rows, so each cell starts from
 * the seed), then the lab's Redis keys deleted.
 */
export async function resetCell(options: {
  sql: postgres.Sql;
  redis: Redis;
  seed: SeedPlan;
  reseed: boolean;
}): Promise<void> {
  if (options.reseed) await ensureSeeded(options.sql, options.seed);
  await flushLabKeys(options.redis);
}

/** Deletes the lab's Redis keys (SCAN + UNLINK; never KEYS or FLUSHALL), as the server's reset does its own. */
export function flushLabKeys(redis: Redis): Promise<number> {
  return deleteKeys((command, args) => redis.call(command, ...args), `${REDIS_PREFIX}*`);
}
