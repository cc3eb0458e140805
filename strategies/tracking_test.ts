/**
 * tracking against a redis-server of this file's own with active expiry off, so that a key expires exactly
 * when a GET reads it: Redis then pushes the key's invalidation to the connection that tracked it, the
 * reader's own included, in the same reply chunk as the GET's nil. The same against a valkey-server (the
 * lab's binary, install-deps.sh's pin): a missing one fails, never skips. And the ioredis adapter's rule for
 * a failed command, on a server paused by this file (CLIENT PAUSE), which no other test shares.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Redis } from "ioredis";
import { eventually, ownRedisServer, uniquePrefix } from "../lab/shared/testing.ts";
import { ioredisTrackingCommands } from "./redis_ioredis_tracking.ts";
import { nodeRedisCommands } from "./redis_node.ts";
import { createCache } from "./tracking.ts";

for (const server of ["redis", "valkey"] as const) {
  describe(`on ${server}`, () => {
    let own: Awaited<ReturnType<typeof ownRedisServer>>;
    let redis: Redis;

    beforeAll(async () => {
      own = await ownRedisServer(`tracking on an expiry on ${server}`, {
        args: ["--enable-debug-command", "local"],
        server,
      });
      redis = own.redis;
      await redis.call("DEBUG", "SET-ACTIVE-EXPIRE", "0");
    });

    afterAll(() => own?.stop());

    test("the ioredis adapter drops everything on a command that got no reply, not on Redis's error reply", async () => {
      // No heartbeat during the test: only the commands it sends can find the pause.
      const commands = ioredisTrackingCommands(own.url, { commandTimeoutMs: 50, heartbeatMs: 600_000 });
      const heard: (string | null)[] = [];
      const tracked = commands.track((key) => heard.push(key));
      try {
        const answers = () =>
          commands.get("absent").then(
            () => true,
            () => false,
          );
        expect(await eventually(answers, 5_000)).toBe(true); // tracking is on
        await expect(commands.eval("return redis.error_reply('refused')", [], [])).rejects.toThrow("refused");
        expect(heard).toEqual([]);
        await redis.call("CLIENT", "PAUSE", "300", "ALL");
        await expect(commands.get("k")).rejects.toThrow(/timed out/i); // no reply within 50 ms
        expect(heard).toEqual([null]);
      } finally {
        tracked.end();
      }
    });

    test("tracking fills Redis after a miss whose own GET expired the key (and heard its push)", async () => {
      const prefix = uniquePrefix("tracking-expiry");
      const events: string[] = [];
      const cache = createCache({
        redis: nodeRedisCommands(own.url),
        ttlMs: 150,
        l1MaxSize: 100,
        l1TtlMs: 50,
        prefix,
        onEvent: (event) => events.push(event),
      });
      try {
        expect(await eventually(() => cache.healthy(), 5_000)).toBe(true);
        const load = async () => "v";
        await cache.getOrLoad("k", load); // a miss: loads and fills
        expect(await eventually(async () => (await redis.exists(`${prefix}{k}`)) === 1)).toBe(true);
        await cache.getOrLoad("k", load); // an L2 hit: Redis tracks the key here
        await Bun.sleep(250); // past both TTLs; with active expiry off, Redis still holds the key
        await cache.getOrLoad("k", load); // its GET expires the key: the push comes with the nil
        expect(cache.stats().loads).toBe(2);
        // The load's fill lands, so the next read is an L2 hit, not a third load.
        expect(await eventually(async () => (await redis.exists(`${prefix}{k}`)) === 1, 1_000)).toBe(true);
        await cache.getOrLoad("k", load);
        expect(cache.stats()).toMatchObject({ loads: 2, errors: 0 });
        expect(events.filter((event) => event === "invalidationsReceived").length).toBeGreaterThanOrEqual(2);
      } finally {
        await cache.close();
      }
    });
  });
}
