/** Toxiproxy for real: its own server, a proxy in front of the real Redis, each fault the lab will use. */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";
import { testRedis, testServices, uniquePrefix } from "../shared/testing.ts";
import {
  detectToxiproxy,
  startToxiproxy,
  TOXIPROXY_BUILD,
  type ToxiproxyServer,
  toxiproxyBuild,
} from "./toxiproxy.ts";

let toxiproxy: ToxiproxyServer;
let redisUpstream: string;
/** The lab's Redis URL (its password included), pointed elsewhere by replacing the host. */
let redisUrl: URL;

beforeAll(async () => {
  toxiproxy = await startToxiproxy();
  redisUrl = new URL((await testServices()).redisUrl);
  redisUpstream = redisUrl.host;
});
afterAll(async () => {
  await toxiproxy?.stop();
});

/** A fresh proxy to Redis on a port Toxiproxy picks, and a fail-fast client through it. */
async function redisThroughProxy(
  name: string,
  options: { commandTimeoutMs?: number } = {},
): Promise<{ client: Redis; listen: string }> {
  const proxy = await toxiproxy.client.createProxy({ name, listen: "127.0.0.1:0", upstream: redisUpstream });
  const throughProxy = new URL(redisUrl);
  throughProxy.host = proxy.listen;
  const client = new Redis(throughProxy.toString(), {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: options.commandTimeoutMs ?? 300,
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

/** The same toxic on both streams (a latency toxic is one-way). */
async function bothWays(proxy: string, type: "latency" | "latency_us", attributes: Record<string, number>) {
  for (const stream of ["upstream", "downstream"] as const)
    await toxiproxy.client.addToxic(proxy, { name: `${type}_${stream}`, type, stream, attributes });
}

/**
 * The 10th-percentile PING round trip (ms) of each client, over `rounds` rounds that take one PING from each
 * in turn. A delay toxic sets a floor that noise only adds to, so a low quantile reads the floor; a median
 * moved by 0.4 ms on a busy CI machine. A few rounds first warm the connections up.
 */
async function lowPingsMs(clients: Redis[], rounds = 300): Promise<number[]> {
  const samples = clients.map(() => [] as number[]);
  for (let round = -20; round < rounds; round++) {
    for (const [index, client] of clients.entries()) {
      const startedMs = performance.now();
      await client.ping();
      if (round >= 0) samples[index]?.push(performance.now() - startedMs);
    }
  }
  return samples.map(
    (values) => values.toSorted((a, b) => a - b)[Math.ceil(values.length / 10) - 1] as number,
  );
}

/** `go version -m` of a stock `go install …/cmd/server@v2.12.0` and of the lab's build (first lines). */
const STOCK_BUILD_INFO = `/root/go/bin/toxiproxy-server: go1.26.8
\tpath\tgithub.com/Shopify/toxiproxy/v2/cmd/server
\tmod\tgithub.com/Shopify/toxiproxy/v2\tv2.12.0\th1:d1x++lYZg/zijXPPcv7PH0MvHMzEI5aX/YuUi/Sw+yg=
\tdep\tgithub.com/beorn7/perks\tv1.0.1\th1:VlbKKnNfV8bJzeqoa4cOKqO6bYr3WgKZxO8Z16+hsOM=
`;
const LAB_BUILD_INFO = `/root/go/bin/toxiproxy-server: go1.26.8
\tpath\tcachelab/toxiproxy
\tmod\tcachelab/toxiproxy\t(devel)\t
\tdep\tgithub.com/Shopify/toxiproxy/v2\tv2.12.0\th1:d1x++lYZg/zijXPPcv7PH0MvHMzEI5aX/YuUi/Sw+yg=
\tdep\tgithub.com/beorn7/perks\tv1.0.1\th1:VlbKKnNfV8bJzeqoa4cOKqO6bYr3WgKZxO8Z16+hsOM=
`;

describe("toxiproxy", () => {
  test("the installed server is the lab's build on the pinned v2.12.0 and answers its API", async () => {
    expect(detectToxiproxy()).toMatchObject({ version: "2.12.0" });
    // tools/toxiproxy sets the API's version from its Toxiproxy dependency, as a release build's -ldflags do.
    expect(JSON.parse(await toxiproxy.client.version())).toEqual({ version: "2.12.0" });
  });

  // Its API has no authentication: whoever reaches it may open proxies, so not with root's powers.
  test.skipIf(process.getuid?.() !== 0)(
    "as root, startToxiproxy runs its server as nobody, its API on 127.0.0.1",
    () => {
      const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${toxiproxy.pid}/status`, "utf8"))?.[1];
      const nobody = Bun.spawnSync(["id", "-u", "nobody"], { stdout: "pipe" }).stdout.toString().trim();
      expect(uid).toBe(nobody);
      expect(uid).not.toBe("0");
      expect(new URL(toxiproxy.apiUrl).hostname).toBe("127.0.0.1");
    },
  );

  test("detection reads the Toxiproxy dependency of the lab's build and refuses a stock build", () => {
    const path = "/root/go/bin/toxiproxy-server";
    expect(toxiproxyBuild(path, LAB_BUILD_INFO)).toEqual({ path, version: "2.12.0" });
    const stock = toxiproxyBuild(path, STOCK_BUILD_INFO);
    expect(stock).not.toHaveProperty("version");
    expect(stock).toHaveProperty("missing", expect.stringContaining("is a stock Toxiproxy build"));
    expect(stock).toHaveProperty("missing", expect.stringContaining("scripts/install-deps.sh"));
    expect(
      toxiproxyBuild(path, LAB_BUILD_INFO.replaceAll(TOXIPROXY_BUILD, "example.com/other")),
    ).toHaveProperty("missing", expect.stringContaining("not the lab's build (example.com/other)"));
  });

  test("latency_us takes the fractions of a millisecond the stock latency toxic rejects", async () => {
    await toxiproxy.client.createProxy({ name: "fraction", listen: "127.0.0.1:0", upstream: redisUpstream });
    try {
      await expect(
        toxiproxy.client.addToxic("fraction", {
          name: "ms",
          type: "latency",
          stream: "downstream",
          attributes: { latency: 0.25 },
        }),
      ).rejects.toThrow("cannot unmarshal number 0.25");
      const toxic = await toxiproxy.client.addToxic("fraction", {
        name: "us",
        type: "latency_us",
        stream: "downstream",
        attributes: { latency: 250, jitter: 50 },
      });
      expect(toxic).toMatchObject({ type: "latency_us", attributes: { latency: 250, jitter: 50 } });
    } finally {
      await toxiproxy.client.deleteProxy("fraction");
    }
  });

  test("latency_us of 250 µs on both streams adds about 0.5 ms to a Redis round trip", async () => {
    const direct = await testRedis();
    const { client: plain } = await redisThroughProxy("redis-plain");
    const { client: delayed } = await redisThroughProxy("redis-250us");
    try {
      await bothWays("redis-250us", "latency_us", { latency: 250, jitter: 0 });
      const [directMs, plainMs, delayedMs] = (await lowPingsMs([direct, plain, delayed])) as number[];
      const addedMs = (delayedMs as number) - (plainMs as number);
      // 0.5 ms asked; Go's own timers would give over 2 ms (they wake to the millisecond, clock_linux.go).
      const lows = `p10: direct ${directMs} ms, proxy ${plainMs} ms, +250 µs each way ${delayedMs} ms`;
      expect(addedMs, lows).toBeGreaterThan(0.35);
      expect(addedMs, lows).toBeLessThan(1.2);
    } finally {
      direct.disconnect();
      plain.disconnect();
      delayed.disconnect();
    }
  });

  test("latency_us with jitter keeps a large value's bytes in order", async () => {
    const direct = await testRedis();
    const { client } = await redisThroughProxy("redis-jitter", { commandTimeoutMs: 3_000 });
    const key = `${uniquePrefix("toxiproxy")}big`;
    const value = randomBytes(4 * 1024 * 1024);
    try {
      await direct.set(key, value);
      // Jitter nearly as large as the latency: each chunk's own delay would reorder them if it were applied
      // independently; released no earlier than the previous chunk, they stay in order.
      await bothWays("redis-jitter", "latency_us", { latency: 300, jitter: 290 });
      const [first, second] = await Promise.all([client.getBuffer(key), client.getBuffer(key)]);
      expect(first?.equals(value)).toBe(true);
      expect(second?.equals(value)).toBe(true);
    } finally {
      await direct.del(key);
      direct.disconnect();
      client.disconnect();
    }
  });

  test("removing latency_us mid-transfer passes on the chunks it holds", async () => {
    const direct = await testRedis();
    const { client } = await redisThroughProxy("redis-interrupt", { commandTimeoutMs: 3_000 });
    const key = `${uniquePrefix("toxiproxy")}big`;
    const value = randomBytes(1024 * 1024);
    try {
      await direct.set(key, value);
      await bothWays("redis-interrupt", "latency_us", { latency: 50_000, jitter: 0 });
      // The GETs reach Redis after 50 ms and their replies wait in the downstream toxic until 100 ms:
      // removing it at 70 ms interrupts a wait with a chunk in hand and the rest buffered.
      let settled = false;
      const gets = Promise.all(Array.from({ length: 16 }, () => client.getBuffer(key))).finally(() => {
        settled = true;
      });
      await Bun.sleep(70);
      expect(settled).toBe(false); // still held by the toxics (a removal answers only after its flush)
      await toxiproxy.client.removeToxic("redis-interrupt", "latency_us_downstream");
      await toxiproxy.client.removeToxic("redis-interrupt", "latency_us_upstream");
      const replies = await gets;
      expect(replies.filter((reply) => reply?.equals(value))).toHaveLength(16);
    } finally {
      await direct.del(key);
      direct.disconnect();
      client.disconnect();
    }
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
