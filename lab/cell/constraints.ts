/**
 * Constraints on the lab's Redis for an experiment about small instances: a `maxmemory` with an eviction
 * policy, put back as it was afterwards, and the evictions Redis counted. CONFIG SET outlives this process,
 * so the caller restores in a `finally`, and the old values are recorded in a file first: a killed run's
 * limit is put back by the next run (restoreLeftRedisLimit), on the same Redis process only.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Cluster, Redis } from "ioredis";
import { currentOwner, type OwnerRecord, ownerRunning } from "../shared/owner_record.ts";

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

/** What a limit replaced, written before CONFIG SET so a later run can put it back. */
interface LimitRecord {
  redisRunId: string;
  owner: OwnerRecord;
  previous: { maxmemoryBytes: number; policy: string };
}

/**
 * Sets `maxmemory` and `maxmemory-policy` on `redis`, after reading what they were and, with `recordPath`,
 * writing that down (one limit at a time: a record left by a live run refuses).
 */
export async function limitRedisMemory(
  redis: Redis,
  maxmemoryBytes: number,
  options: { policy?: EvictionPolicy; recordPath?: string } = {},
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
  const recordPath = options.recordPath;
  if (recordPath !== undefined) {
    const left = readRecord(recordPath);
    if (left !== null) {
      throw new Error(
        `Cannot limit Redis memory: ${recordPath} records a limit that was not put back (pid ${left.owner.pid}): received ${JSON.stringify(left.previous)}`,
      );
    }
    writeRecord(recordPath, { redisRunId: await redisRunId(redis), owner: currentOwner(), previous });
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
        if (recordPath !== undefined) rmSync(recordPath, { force: true });
      })();
      return restoring;
    },
  };
}

/**
 * Puts back the maxmemory and policy a killed run recorded at `recordPath`, when that run is gone and the
 * Redis is the same process (a restarted Redis has its own settings again); returns what it did, or null.
 */
export async function restoreLeftRedisLimit(redis: Redis, recordPath: string): Promise<string | null> {
  const left = readRecord(recordPath);
  if (left === null) return null;
  if (left.owner.pid !== process.pid && ownerRunning(left.owner)) {
    throw new Error(
      `Cannot restore Redis maxmemory: the run that set it (pid ${left.owner.pid}) is still running: received ${recordPath}`,
    );
  }
  if (left.redisRunId !== (await redisRunId(redis))) {
    rmSync(recordPath, { force: true });
    return `a limit recorded by pid ${left.owner.pid} was for a Redis since restarted; record removed`;
  }
  await redis.config("SET", "maxmemory", String(left.previous.maxmemoryBytes));
  await redis.config("SET", "maxmemory-policy", left.previous.policy);
  rmSync(recordPath, { force: true });
  return `restored Redis maxmemory ${left.previous.maxmemoryBytes} (${left.previous.policy}) that the run with pid ${left.owner.pid} had changed and not put back`;
}

function readRecord(path: string): LimitRecord | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return null;
  }
  const record = JSON.parse(text) as LimitRecord;
  if (typeof record.redisRunId !== "string" || !Number.isInteger(record.owner?.pid)) {
    throw new Error(`Cannot read the Redis limit record: received ${path}: ${text.slice(0, 200)}`);
  }
  return record;
}

function writeRecord(path: string, record: LimitRecord): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const staging = `${path}.${process.pid}.tmp`;
  writeFileSync(staging, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  renameSync(staging, path);
}

async function redisRunId(redis: Redis): Promise<string> {
  const runId = /^run_id:(\w+)\r?$/m.exec(await redis.info("server"))?.[1];
  if (runId === undefined) throw new Error("Cannot read Redis run_id: no run_id in INFO server");
  return runId;
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
export async function redisEvictions(redis: Redis | Cluster): Promise<number> {
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
