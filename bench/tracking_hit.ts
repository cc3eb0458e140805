/**
 * What a client-side cache hit costs in process, for the two ways tracking could be built on node-redis:
 * tracking.ts's own L1 over node-redis's `invalidate` events (a hit is the string itself) and node-redis's
 * `clientSideCache` (a hit is `client.get()`: a promise, and a `structuredClone` of the value). Beside them in
 * the same run: local.ts's hit (the same quick-lru lookup without Redis), a plain node-redis GET on loopback
 * (what either saves; tracking's Redis path is node-redis's) and an ioredis GET with redis_ioredis.ts's
 * fail-fast settings (the Redis path of redis and two_tier). Each is timed over `--ops` sequential awaited
 * calls of one hot key, the five interleaved `--rounds` times, at each value size; the median round is
 * printed, in ns per call.
 *
 *   bun run bench:tracking-hit [--ops 20000] [--rounds 7] [--sizes 200,2000,20000]
 */
import { Redis } from "ioredis";
import { createClient } from "redis";
import { servicesUp } from "../lab/services/lifecycle.ts";
import { createCache as createLocal } from "../strategies/local.ts";
import { failFastRedisOptions } from "../strategies/redis_ioredis.ts";
import { nodeRedisCommands, trackingClient } from "../strategies/redis_node.ts";
import { createCache as createTracking } from "../strategies/tracking.ts";
import { benchArgs } from "./_args.ts";

const values = benchArgs("bun run bench:tracking-hit [--ops 20000] [--rounds 7] [--sizes 200,2000,20000]", {
  ops: { type: "string", default: "20000" },
  rounds: { type: "string", default: "7" },
  sizes: { type: "string", default: "200,2000,20000" },
});
const ops = Number(values.ops);
const rounds = Number(values.rounds);
const sizes = values.sizes.split(",").map(Number);
if (!(Number.isInteger(ops) && ops >= 100) || !(Number.isInteger(rounds) && rounds >= 1)) {
  console.error(`--ops must be an integer ≥ 100 and --rounds ≥ 1: received ${values.ops}, ${values.rounds}`);
  process.exit(2);
}
if (!sizes.every((size) => Number.isInteger(size) && size > 0)) {
  console.error(`--sizes must be positive integers: received ${values.sizes}`);
  process.exit(2);
}

const { redisUrl } = await servicesUp({ log: () => {} });
const prefix = `cachelab:bench:tracking:${crypto.randomUUID().slice(0, 8)}:`;
const own = trackingClient(redisUrl);
const csc = createClient({ url: redisUrl, RESP: 3, clientSideCache: { ttl: 0, maxEntries: 10_000 } });
const plain = createClient({ url: redisUrl, RESP: 3 });
csc.on("error", () => {});
plain.on("error", () => {});
const io = new Redis(redisUrl, failFastRedisOptions);
await Promise.all([csc.connect(), plain.connect(), io.connect()]);
while (!own.isReady) await Bun.sleep(5);
const tracking = createTracking({
  redis: nodeRedisCommands(own),
  prefix,
  ttlMs: 60_000,
  l1MaxSize: 10_000,
  l1TtlMs: 60_000,
});
const local = createLocal({ maxSize: 10_000, ttlMs: 60_000 });

/** ns per call of `call`, `ops` times in a row, each awaited. */
async function time(call: () => unknown): Promise<number> {
  const startedNs = Bun.nanoseconds();
  for (let i = 0; i < ops; i++) await call();
  return (Bun.nanoseconds() - startedNs) / ops;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const fail = () => {
  throw new Error("Cannot bench a hit: the value was not cached");
};

console.log(`# in-process hit cost, ns per call (median of ${rounds} rounds of ${ops})`);
console.log(
  "size_bytes\ttracking_l1\tclientSideCache\tlocal\tnode_redis_get\tioredis_get\tcsc÷tracking\tget÷tracking\tnode÷ioredis",
);
for (const size of sizes) {
  const key = `hot:${size}`;
  const stored = `${prefix}{${key}}`; // redis.ts's value key (a Redis Cluster hash tag around the cache key)
  const value = "x".repeat(size);
  const l2HitsBefore = tracking.stats().tiers.l2.hits;
  await plain.set(stored, value, { PX: 60_000 });
  // Warm each: tracking's L1 takes the value from its second read (its first reads Redis), the CSC's first GET.
  while (typeof tracking.getOrLoad(key, fail) !== "string") await tracking.getOrLoad(key, fail);
  await local.getOrLoad(key, async () => value);
  await csc.get(stored);
  const cscHitsBefore = csc.clientSideCache?.stats().hitCount ?? 0;
  const results: Record<string, number[]> = { tracking: [], csc: [], local: [], get: [], io: [] };
  for (let round = 0; round < rounds; round++) {
    results.tracking?.push(await time(() => tracking.getOrLoad(key, fail)));
    results.csc?.push(await time(() => csc.get(stored)));
    results.local?.push(await time(() => local.getOrLoad(key, fail)));
    results.get?.push(await time(() => plain.get(stored)));
    results.io?.push(await time(() => io.get(stored)));
  }
  const [t, c, l, g, i] = ["tracking", "csc", "local", "get", "io"].map((name) =>
    median(results[name] ?? []),
  );
  const cscHits = (csc.clientSideCache?.stats().hitCount ?? 0) - cscHitsBefore;
  if (tracking.stats().tiers.l2.hits - l2HitsBefore !== 1 || cscHits !== rounds * ops) {
    throw new Error("Cannot trust the bench: a timed call was not a client-side hit");
  }
  const fixed = (ns: number | undefined) => (ns ?? Number.NaN).toFixed(0);
  const ratio = (a?: number, b?: number) => ((a ?? Number.NaN) / (b ?? Number.NaN)).toFixed(1);
  console.log(
    [size, fixed(t), fixed(c), fixed(l), fixed(g), fixed(i), ratio(c, t), ratio(g, t), ratio(g, i)].join(
      "\t",
    ),
  );
  await plain.del(stored);
}
await tracking.close();
own.destroy();
csc.destroy();
plain.destroy();
io.disconnect();
process.exit(0);
