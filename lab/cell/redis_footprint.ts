/**
 * What the lab's Redis holds for a cell at the end of its run: the entries under the lab's prefix, and the
 * bytes Redis itself counts per entry (`MEMORY USAGE`: key, value and dictionary entry), the figure a user
 * multiplies by their own key count to size a Redis.
 */
import type { Cluster, Redis } from "ioredis";
import { eachRedis, REDIS_PREFIX } from "./reset.ts";

/** Keys asked their MEMORY USAGE; SCAN's order is the hash table's, not the keys', so this is a fair sample. */
const SAMPLED = 1_000;

export interface RedisFootprint {
  entries: number;
  /** The mean MEMORY USAGE of up to 1 000 of the entries (exact, SAMPLES 0); null with no entry. */
  bytesPerEntry: number | null;
  /** Redis's tracking table (INFO's `tracking_total_items`: a key once per connection tracking it); null: not reported. */
  trackingItems: number | null;
}

/** INFO stats' `tracking_total_items` summed over the nodes; null when a node does not report it. */
async function trackingItems(nodes: Redis[]): Promise<number | null> {
  let total = 0;
  for (const node of nodes) {
    const match = /^tracking_total_items:(\d+)\r?$/m.exec(await node.info("stats"));
    if (!match) return null;
    total += Number(match[1]);
  }
  return total;
}

/** On a Redis Cluster: every master's entries, and a sample from each asked on its own node. */
export async function redisFootprint(redis: Redis | Cluster): Promise<RedisFootprint> {
  let entries = 0;
  const samples: [Redis, string[]][] = [];
  for (const node of eachRedis(redis)) {
    let cursor = "0";
    const sample: string[] = [];
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", `${REDIS_PREFIX}*`, "COUNT", 1_000);
      cursor = next;
      entries += keys.length;
      for (const key of keys) if (sample.length < SAMPLED) sample.push(key);
    } while (cursor !== "0");
    samples.push([node, sample]);
  }
  const tracked = await trackingItems(samples.map(([node]) => node));
  if (samples.every(([, sample]) => sample.length === 0)) {
    return { entries, bytesPerEntry: null, trackingItems: tracked };
  }
  const replies = [];
  for (const [node, sample] of samples) {
    const pipeline = node.pipeline();
    for (const key of sample) pipeline.call("MEMORY", "USAGE", key, "SAMPLES", "0");
    replies.push(...((await pipeline.exec()) ?? []));
  }
  let bytes = 0;
  let counted = 0;
  for (const [error, reply] of replies) {
    if (error) throw new Error(`Cannot read Redis MEMORY USAGE: ${error.message}`);
    // An entry that expired between SCAN and MEMORY USAGE answers nil: it is not counted.
    if (typeof reply === "number") {
      bytes += reply;
      counted += 1;
    }
  }
  return {
    entries,
    bytesPerEntry: counted === 0 ? null : Math.round(bytes / counted),
    trackingItems: tracked,
  };
}
