/**
 * A cell's reset: the seed reloaded when the experiment writes, and the lab's Redis keys deleted (on a Redis
 * Cluster, on every master).
 */
import { Cluster, type Redis } from "ioredis";
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
  redis: Redis | Cluster;
  seed: SeedPlan;
  reseed: boolean;
}): Promise<void> {
  if (options.reseed) await ensureSeeded(options.sql, options.seed);
  await flushLabKeys(options.redis);
}

/** The Redis servers behind the lab's client: itself, or a cluster's masters (a SCAN or INFO sees one node). */
export function eachRedis(redis: Redis | Cluster): Redis[] {
  return redis instanceof Cluster ? redis.nodes("master") : [redis];
}

/** Deletes the lab's Redis keys (SCAN + UNLINK; never KEYS or FLUSHALL), as the server's reset does its own. */
export async function flushLabKeys(redis: Redis | Cluster): Promise<number> {
  const onCluster = redis instanceof Cluster;
  const removed = await Promise.all(
    eachRedis(redis).map((node) =>
      deleteKeys(async (command, args) => {
        // On a cluster one UNLINK may name keys of one slot only: a key each.
        if (!onCluster || command !== "UNLINK") return node.call(command, ...args);
        const counts = await Promise.all(args.map((key) => node.call("UNLINK", key)));
        return counts.reduce((sum: number, count) => sum + Number(count), 0);
      }, `${REDIS_PREFIX}*`),
    ),
  );
  return removed.reduce((sum, count) => sum + count, 0);
}
