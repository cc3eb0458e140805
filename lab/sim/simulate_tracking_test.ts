/**
 * simulate() against tracking on the real Redis, as simulate_test.ts holds the other strategies to theirs:
 * its L1 filled only from L2 hits, and Redis's pushes (its own fill's, another instance's delete's) dropping
 * it. Each instance PINGs Redis after every request, so every push due has been handled, as the model takes
 * them: at once.
 */
import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { counted } from "../../strategies/_counted.ts";
import { nodeRedisCommands } from "../../strategies/redis_node.ts";
import * as tracking from "../../strategies/tracking.ts";
import { eventually, testServices, uniquePrefix } from "../shared/testing.ts";
import { dealt, measuredCounters, requestTrace, settingsFor } from "./sim_testing.ts";
import { type SimRequest, simulate } from "./simulate.ts";

afterEach(() => {
  setSystemTime();
});

const settings = settingsFor("tracking", { l1TtlMs: 30 });

/** `instances` tracking caches on one prefix, each on a node-redis client of its own, once they answer. */
async function trackingCaches(instances: number) {
  const { redisUrl } = await testServices();
  const prefix = uniquePrefix("sim-tracking");
  const caches = Array.from({ length: instances }, () =>
    counted((onEvent) =>
      tracking.createCache({
        redis: nodeRedisCommands(redisUrl),
        ttlMs: settings.cacheTtlMs,
        l1MaxSize: settings.l1MaxEntries,
        l1TtlMs: settings.l1TtlMs,
        prefix,
        onEvent,
      }),
    ),
  );
  for (const cache of caches) expect(await eventually(() => cache.healthy(), 5_000)).toBe(true);
  return caches;
}

/** A warm-up and a measured trace after it (dealt over `instances` when more than one). */
function traces(seed: number, instances: number): { warmup: SimRequest[]; measured: SimRequest[] } {
  const deal = (requests: SimRequest[], offset = 0) =>
    instances > 1 ? dealt(requests, instances, offset) : requests;
  const warmup = deal(requestTrace({ seed, count: 1_500, keyspace: 200, startMs: 0, maxStepMs: 3 }));
  const last = warmup.at(-1)?.atMs ?? 0;
  const measured = deal(
    requestTrace({ seed: seed + 100, count: 1_500, keyspace: 200, startMs: last, maxStepMs: 3 }),
    warmup.length,
  );
  return { warmup, measured };
}

describe("simulate against tracking", () => {
  for (const instances of [1, 2]) {
    test(`simulate matches tracking's counters exactly on ${instances} instance(s): L1 expiry, L2 hits, pushes`, async () => {
      const { warmup, measured } = traces(31 + instances, instances);
      const caches = await trackingCaches(instances);
      const real = await measuredCounters(caches, warmup, measured, settings.rows, { pushes: true });
      for (const cache of caches) await cache.close();
      const simulated = simulate(warmup, measured, settings);
      expect(real.errors).toBe(0);
      expect(simulated.tiers).toEqual(real.tiers);
      expect(simulated.loads).toBe(real.loads);
      expect(simulated.dbQueries).toBe(real.dbQueries);
      expect(real.tiers.l1?.hits).toBeGreaterThan(50);
      expect(real.tiers.l2?.hits).toBeGreaterThan(100);
      // The pushes did happen (the fills' own, at least), and a second instance heard the other's deletes.
      for (const cache of caches) expect(cache.stats().invalidationsReceived).toBeGreaterThan(0);
    });
  }
});
