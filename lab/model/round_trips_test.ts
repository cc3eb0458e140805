/**
 * The counts in ROUND_TRIPS held against the strategies' code: redis.ts, two_tier.ts and tracking.ts driven
 * through a fake command set that records what is sent, where a command the request must not wait for never
 * answers.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { createCache as createRedis } from "../../strategies/redis.ts";
import { createCache as createTracking, type TrackingCommands } from "../../strategies/tracking.ts";
import { createCache as createTwoTier, type PubSubCommands } from "../../strategies/two_tier.ts";
import { ROUND_TRIPS } from "./round_trips.ts";

function scriptName(lua: string): string {
  if (lua.includes('redis.call("DEL"')) return "INVALIDATE";
  if (lua.includes("ARGV[3]")) return "FILL";
  return "READ_GENERATION";
}

/**
 * Records each command; FILL never answers (a request that awaited it would hang), INVALIDATE when
 * `release()` is called, the rest at once.
 */
function fakeRedis(stored: Map<string, string>) {
  const sent: string[] = [];
  const held: (() => void)[] = [];
  const hashes = new Map<string, string>();
  const script = (lua: string): Promise<unknown> => {
    hashes.set(createHash("sha1").update(lua).digest("hex"), lua);
    const name = scriptName(lua);
    sent.push(name);
    if (name === "FILL") return new Promise(() => {});
    if (name === "INVALIDATE") return new Promise((resolve) => held.push(() => resolve(1)));
    return Promise.resolve("generation");
  };
  const commands: PubSubCommands & TrackingCommands = {
    get: async (key) => {
      sent.push("GET");
      return stored.get(key) ?? null;
    },
    eval: (lua) => script(lua),
    evalsha: (sha) => script(hashes.get(sha) ?? ""),
    ping: async () => "PONG",
    end: () => {},
    publish: async () => {
      sent.push("PUBLISH");
      return 1;
    },
    subscribe: (_channel, on) => {
      queueMicrotask(() => on.subscribed());
      return { active: () => true, end: () => {} };
    },
    track: () => ({ end: () => {} }),
  };
  const release = () => {
    for (const resolve of held.splice(0)) resolve();
  };
  return { sent, commands, release };
}

/** Reads product:7: its value and whether the loader ran. */
async function read(cache: { getOrLoad(key: string, load: () => Promise<string | undefined>): unknown }) {
  let loaded = false;
  const value = await cache.getOrLoad("product:7", async () => {
    loaded = true;
    return "row";
  });
  return { value, loaded };
}

describe("round trips counted from the code", () => {
  test("redis: a hit is one GET; a miss waits for GET and the generation read, the fill is not awaited", async () => {
    const stored = new Map([["cache:{product:7}", "row"]]);
    const { sent, commands } = fakeRedis(stored);
    const cache = createRedis({ redis: commands, ttlMs: 60_000 });
    expect(await read(cache)).toEqual({ value: "row", loaded: false });
    expect(sent).toEqual(["GET"]);
    expect(ROUND_TRIPS.redis.l2_hit).toEqual({ db: 0, redisOnPath: 1, redisCommands: 1 });
    stored.clear();
    sent.length = 0;
    const atLoad: string[] = [];
    await cache.getOrLoad("product:7", async () => {
      atLoad.push(...sent);
      return "row";
    });
    expect(atLoad).toEqual(["GET", "READ_GENERATION"]);
    // The read answered although FILL never did: it is sent, not waited for.
    expect(sent).toEqual(["GET", "READ_GENERATION", "FILL"]);
    expect(ROUND_TRIPS.redis.miss).toEqual({ db: 1, redisOnPath: 2, redisCommands: 3 });
  });

  test("redis: a delete is one script; the server's three deletes go together", async () => {
    const { sent, commands, release } = fakeRedis(new Map());
    const cache = createRedis({ redis: commands, ttlMs: 60_000 });
    const deletes = Promise.all(["product:7", "summary:7", "catgen:3"].map((key) => cache.delete(key)));
    // All three are on the wire before any answers: one round trip on the write's path.
    expect(sent).toEqual(["INVALIDATE", "INVALIDATE", "INVALIDATE"]);
    release();
    await deletes;
    expect(ROUND_TRIPS.redis.write).toEqual({ db: 1, redisOnPath: 1, redisCommands: 3 });
  });

  test("two_tier: L1 hit sends nothing, L2 hit one GET, a miss as redis; a delete then its PUBLISH", async () => {
    const stored = new Map([["cache:{product:7}", "row"]]);
    const { sent, commands, release } = fakeRedis(stored);
    const cache = createTwoTier({ redis: commands, ttlMs: 60_000, l1MaxSize: 100, l1TtlMs: 5_000 });
    await Bun.sleep(0); // the first subscription flushes L1
    expect(await read(cache)).toEqual({ value: "row", loaded: false });
    expect(sent).toEqual(["GET"]);
    sent.length = 0;
    expect(await read(cache)).toEqual({ value: "row", loaded: false });
    expect(sent).toEqual([]);
    expect(ROUND_TRIPS.two_tier.l1_hit?.redisCommands).toBe(0);
    expect(ROUND_TRIPS.two_tier.l2_hit?.redisOnPath).toBe(1);
    stored.clear();
    const atLoad: string[] = [];
    await cache.getOrLoad("product:8", async () => {
      atLoad.push(...sent);
      return "row";
    });
    expect(atLoad).toEqual(["GET", "READ_GENERATION"]);
    expect(sent).toEqual(["GET", "READ_GENERATION", "FILL"]);
    expect(ROUND_TRIPS.two_tier.miss).toEqual({ db: 1, redisOnPath: 2, redisCommands: 3 });
    sent.length = 0;
    const deleting = cache.delete("product:7");
    await Bun.sleep(0);
    // PUBLISH waits for the INVALIDATE's answer: two round trips on a write's path.
    expect(sent).toEqual(["INVALIDATE"]);
    release();
    await deleting;
    expect(sent).toEqual(["INVALIDATE", "PUBLISH"]);
    expect(ROUND_TRIPS.two_tier.write).toEqual({ db: 1, redisOnPath: 2, redisCommands: 6 });
    await cache.close();
  });

  test("tracking: L1 hit sends nothing, L2 hit one GET, a miss as redis and no L1 fill; a delete is one script", async () => {
    const stored = new Map([["cache:{product:7}", "row"]]);
    const { sent, commands, release } = fakeRedis(stored);
    const cache = createTracking({ redis: commands, ttlMs: 60_000, l1MaxSize: 100, l1TtlMs: 5_000 });
    expect(await read(cache)).toEqual({ value: "row", loaded: false });
    expect(sent).toEqual(["GET"]);
    sent.length = 0;
    expect(await read(cache)).toEqual({ value: "row", loaded: false });
    expect(sent).toEqual([]);
    expect(ROUND_TRIPS.tracking.l1_hit?.redisCommands).toBe(0);
    expect(ROUND_TRIPS.tracking.l2_hit?.redisOnPath).toBe(1);
    stored.clear();
    const atLoad: string[] = [];
    await cache.getOrLoad("product:8", async () => {
      atLoad.push(...sent);
      return "row";
    });
    expect(atLoad).toEqual(["GET", "READ_GENERATION"]);
    expect(sent).toEqual(["GET", "READ_GENERATION", "FILL"]);
    expect(ROUND_TRIPS.tracking.miss).toEqual({ db: 1, redisOnPath: 2, redisCommands: 3 });
    // The loaded value is not in L1: the next read asks Redis again.
    sent.length = 0;
    await cache.getOrLoad("product:8", async () => "row");
    expect(sent[0]).toBe("GET");
    sent.length = 0;
    const deletes = Promise.all(["product:7", "summary:7", "catgen:3"].map((key) => cache.delete(key)));
    // No PUBLISH: Redis pushes the invalidations to whoever read the keys.
    expect(sent).toEqual(["INVALIDATE", "INVALIDATE", "INVALIDATE"]);
    release();
    await deletes;
    expect(ROUND_TRIPS.tracking.write).toEqual({ db: 1, redisOnPath: 1, redisCommands: 3 });
    await cache.close();
  });
});
