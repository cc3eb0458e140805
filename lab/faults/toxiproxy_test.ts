/** Toxiproxy for real: its own server, a proxy in front of the real Redis, each fault the lab will use. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Redis } from "ioredis";
import { testServices } from "../shared/testing.ts";
import { detectToxiproxy, startToxiproxy, type ToxiproxyServer } from "./toxiproxy.ts";

let toxiproxy: ToxiproxyServer;
let redisUpstream: string;

beforeAll(async () => {
  toxiproxy = await startToxiproxy();
  redisUpstream = new URL((await testServices()).redisUrl).host;
});
afterAll(async () => {
  await toxiproxy?.stop();
});

/** A fresh proxy to Redis on a port Toxiproxy picks, and a fail-fast client through it. */
async function redisThroughProxy(name: string): Promise<{ client: Redis; listen: string }> {
  const proxy = await toxiproxy.client.createProxy({ name, listen: "127.0.0.1:0", upstream: redisUpstream });
  const client = new Redis(`redis://${proxy.listen}`, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 300,
    retryStrategy: () => 50,
  });
  client.on("error", () => {});
  await client.connect();
  return { client, listen: proxy.listen };
}

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T | Error }> {
  const startedMs = performance.now();
  const value = await work().catch((error: Error) => error);
  return { ms: performance.now() - startedMs, value };
}

describe("toxiproxy", () => {
  test("the installed server is the pinned v2.12.0 and answers its API", async () => {
    expect(detectToxiproxy()).toMatchObject({ version: "2.12.0" });
    // A `go install` build says "git" on its API; the module version is in its build info (go version -m).
    expect(JSON.parse(await toxiproxy.client.version())).toHaveProperty("version");
  });

  test("a proxy forwards to Redis, and latency on both streams adds a round trip", async () => {
    const { client } = await redisThroughProxy("redis-latency");
    try {
      expect(await client.ping()).toBe("PONG");
      for (const stream of ["upstream", "downstream"] as const) {
        await toxiproxy.client.addToxic("redis-latency", {
          name: `lat_${stream}`,
          type: "latency",
          stream,
          attributes: { latency: 40, jitter: 0 },
        });
      }
      const { ms, value } = await timed(() => client.ping());
      expect(value).toBe("PONG");
      expect(ms).toBeGreaterThanOrEqual(75);
      await toxiproxy.client.removeToxic("redis-latency", "lat_upstream");
      await toxiproxy.client.removeToxic("redis-latency", "lat_downstream");
      expect((await timed(() => client.ping())).ms).toBeLessThan(40);
    } finally {
      client.disconnect();
    }
  });

  test("a disabled proxy closes its connections and refuses new ones; enabled, it serves again", async () => {
    const { client } = await redisThroughProxy("redis-down");
    try {
      await toxiproxy.client.setEnabled("redis-down", false);
      expect((await timed(() => client.ping())).value).toBeInstanceOf(Error);
      await toxiproxy.client.setEnabled("redis-down", true);
      const deadline = performance.now() + 3_000;
      let answer: unknown = null;
      while (performance.now() < deadline && answer !== "PONG") {
        answer = await client.ping().catch(() => null);
        if (answer !== "PONG") await Bun.sleep(50);
      }
      expect(answer).toBe("PONG");
    } finally {
      client.disconnect();
    }
  });

  test("a timeout toxic hangs Redis: commands time out on the client, and reset clears it", async () => {
    const { client } = await redisThroughProxy("redis-hang");
    try {
      await toxiproxy.client.addToxic("redis-hang", {
        name: "hang",
        type: "timeout",
        stream: "upstream",
        attributes: { timeout: 0 },
      });
      const hung = await timed(() => client.ping());
      expect(hung.value).toBeInstanceOf(Error);
      expect((hung.value as Error).message).toContain("timed out");
      expect(hung.ms).toBeGreaterThanOrEqual(290);
      await toxiproxy.client.reset();
      expect((await toxiproxy.client.proxies())["redis-hang"]?.toxics).toEqual([]);
    } finally {
      client.disconnect();
    }
  });

  test("API errors name the action and Toxiproxy's answer", async () => {
    await toxiproxy.client.createProxy({ name: "twice", listen: "127.0.0.1:0", upstream: redisUpstream });
    await expect(
      toxiproxy.client.createProxy({ name: "twice", listen: "127.0.0.1:0", upstream: redisUpstream }),
    ).rejects.toThrow("Cannot create proxy twice: Toxiproxy answered 409");
    await expect(toxiproxy.client.removeToxic("twice", "nothing")).rejects.toThrow(
      "Cannot remove toxic nothing from twice: Toxiproxy answered 404",
    );
    await toxiproxy.client.deleteProxy("twice");
    expect(Object.keys(await toxiproxy.client.proxies())).not.toContain("twice");
  });
});
