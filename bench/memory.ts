/**
 * What a cached entry costs in memory. In the process: heap bytes per entry of local.ts's L1, against a bare
 * Map of the same keys and values built the same way in the same round (two_tier's and tracking's L1 are the
 * same quick-lru of the same {value, deltaMs, expiryMs} entries). In Redis: MEMORY USAGE of a value key as
 * redis.ts stores it (the card's redis_bytes_per_entry), and what tracking adds: the growth of INFO
 * used_memory while a tracked node-redis connection reads keys whose values are in place (CLIENT TRACKING's
 * key → client-IDs table), for a first reader and for a second one. Values are distinct strings of `--sizes`
 * bytes; JSC counts a string's characters in its heap size as extra memory, so the heap figures include the
 * values themselves. Each figure is the median of `--rounds` rounds, the measures interleaved.
 *
 *   bun run bench:memory [--entries 20000] [--sizes 200,2000] [--rounds 3]
 */
import { heapStats } from "bun:jsc";
import { createClient } from "redis";
import { servicesUp } from "../lab/services/lifecycle.ts";
import { createCache as createLocal } from "../strategies/local.ts";
import { trackingClient } from "../strategies/redis_node.ts";
import { benchArgs } from "./_args.ts";

const values = benchArgs("bun run bench:memory [--entries 20000] [--sizes 200,2000] [--rounds 3]", {
  entries: { type: "string", default: "20000" },
  sizes: { type: "string", default: "200,2000" },
  rounds: { type: "string", default: "3" },
});
const entries = Number(values.entries);
const rounds = Number(values.rounds);
const sizes = values.sizes.split(",").map(Number);
if (!(Number.isInteger(entries) && entries >= 10_000) || !(Number.isInteger(rounds) && rounds >= 1)) {
  console.error(
    `--entries must be an integer ≥ 10000 (fewer leave the heap figures to its page granularity) and --rounds ≥ 1: received ${values.entries}, ${values.rounds}`,
  );
  process.exit(2);
}
if (!sizes.every((size) => Number.isInteger(size) && size >= 20)) {
  console.error(`--sizes must be integers ≥ 20: received ${values.sizes}`);
  process.exit(2);
}

const { redisUrl } = await servicesUp({ log: () => {} });
const plain = createClient({ url: redisUrl });
plain.on("error", () => {});
await plain.connect();
const readers = [trackingClient(redisUrl), trackingClient(redisUrl)];
while (!readers.every((reader) => reader.isReady)) await Bun.sleep(5);
const prefix = `cachelab:bench:memory:${crypto.randomUUID().slice(0, 8)}:`;
const keys = Array.from({ length: entries }, (_, i) => `product:${i}`);
/** A distinct string of `size` bytes for key i, built fresh on every call (as a body from Postgres or Redis). */
const body = (i: number, size: number) => `{"id":${i},"d":"${String(i).padEnd(size, "x")}"}`.slice(0, size);
/** redis.ts's value key (a Redis Cluster hash tag around the cache key). */
const valueKey = (key: string) => `${prefix}{${key}}`;

/** Heap bytes per entry that `fill` leaves behind, with what it made still held. */
async function heapPerEntry(fill: () => Promise<unknown>): Promise<number> {
  Bun.gc(true);
  const before = heapStats().heapSize;
  const held = await fill();
  Bun.gc(true);
  const bytes = (heapStats().heapSize - before) / entries;
  if (held === null) throw new Error("unreachable"); // keeps `held` alive through the second collection
  return bytes;
}

async function usedMemory(): Promise<number> {
  const match = (await plain.info("memory")).match(/^used_memory:(\d+)/m);
  if (!match) throw new Error("Cannot read used_memory from INFO memory");
  return Number(match[1]);
}

/** used_memory's growth per key while `reader` GETs every key once (each read tracked on its connection). */
async function trackedPerKey(reader: (typeof readers)[number]): Promise<number> {
  const before = await usedMemory();
  for (const key of keys) await reader.sendCommand(["GET", valueKey(key)]);
  return ((await usedMemory()) - before) / entries;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

console.log(`# memory per entry, ${entries} entries, median of ${rounds} rounds (Bun ${Bun.version})`);
console.log("value_bytes\tmap_heap\tl1_heap\tl1÷map\tredis_value\ttracked_1st_reader\ttracked_2nd_reader");
// A throwaway fill first: the heap the process grows into on its first allocations is not an entry's cost.
await heapPerEntry(async () => new Map(keys.map((key, i) => [key, body(i, sizes[0] as number)])));
for (const size of sizes) {
  const figures: Record<string, number[]> = { map: [], l1: [], value: [], first: [], second: [] };
  for (let round = 0; round < rounds; round++) {
    figures.map?.push(
      await heapPerEntry(async () => {
        const held = new Map<string, string>();
        for (let i = 0; i < entries; i++) held.set(keys[i] as string, body(i, size));
        return held;
      }),
    );
    const local = createLocal({ maxSize: entries * 2, ttlMs: 600_000 });
    figures.l1?.push(
      await heapPerEntry(async () => {
        // local's getOrLoad of a loader that answers at once: what a miss leaves in its L1.
        for (let i = 0; i < entries; i++) await local.getOrLoad(keys[i] as string, async () => body(i, size));
        return local;
      }),
    );
    await local.close();

    // Values stored as redis.ts stores them (the string itself, no early-refresh header), with no generation
    // keys beside them (a miss's), so that used_memory moves with the tracking table alone.
    for (let i = 0; i < entries; i += 500) {
      const batch = keys.slice(i, i + 500).flatMap((key, j) => [valueKey(key), body(i + j, size)]);
      await plain.sendCommand(["MSET", ...batch]);
    }
    let usage = 0;
    for (let i = 0; i < entries; i += 20) {
      usage += Number(
        await plain.sendCommand(["MEMORY", "USAGE", valueKey(keys[i] as string), "SAMPLES", "0"]),
      );
    }
    figures.value?.push(usage / Math.ceil(entries / 20));
    figures.first?.push(await trackedPerKey(readers[0] as (typeof readers)[number]));
    figures.second?.push(await trackedPerKey(readers[1] as (typeof readers)[number]));
    const tracking = (await plain.info("stats")).match(/^tracking_total_keys:(\d+)/m)?.[1];
    if (Number(tracking) < entries) {
      throw new Error(`Cannot trust the table's figures: Redis tracks ${tracking} keys, ${entries} read`);
    }
    // Deleting the keys pushes their invalidations and empties the table for the next round.
    for (let i = 0; i < entries; i += 500)
      await plain.sendCommand(["UNLINK", ...keys.slice(i, i + 500).map(valueKey)]);
    await Bun.sleep(100);
  }
  const [map, l1, value, first, second] = ["map", "l1", "value", "first", "second"].map((name) =>
    median(figures[name] ?? []),
  );
  const fixed = (bytes: number | undefined) => (bytes ?? Number.NaN).toFixed(0);
  console.log(
    [
      size,
      fixed(map),
      fixed(l1),
      ((l1 ?? 0) / (map ?? 1)).toFixed(2),
      fixed(value),
      fixed(first),
      fixed(second),
    ].join("\t"),
  );
}
for (const reader of readers) reader.destroy();
plain.destroy();
process.exit(0);
