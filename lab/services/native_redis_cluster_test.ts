/**
 * The lab's Redis Cluster, in a state folder of this test's own (so killing a master disturbs no other
 * test): three masters that require the password and cover every slot; redis and two_tier on each cluster
 * client keep answering with one master killed (its keys from the loader, the others' from Redis, each node
 * with a breaker of its own); the adapters' slot is Redis's own; and
 * `services down` stops every node and leaves no nodes.conf behind.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as redisStrategy from "../../strategies/redis.ts";
import * as ioredisAdapter from "../../strategies/redis_ioredis.ts";
import * as nodeAdapter from "../../strategies/redis_node_cluster.ts";
import * as twoTier from "../../strategies/two_tier.ts";
import { eventually, uniquePrefix } from "../shared/testing.ts";
import { redisClusterUp, servicesDown, servicesStatus } from "./lifecycle.ts";
import { CLUSTER_MASTERS, clusterReady, nodeClient, type RedisClusterInfo } from "./native_redis_cluster.ts";
import { readState } from "./state.ts";

const stateDir = mkdtempSync(join(tmpdir(), "cachelab-cluster-"));
const options = { stateDir, log: () => {} };
// Status looks for Postgres and Redis at these first: closed ports, so nothing of the machine's answers.
const closedPorts = { databaseUrl: "postgres://127.0.0.1:1/x", redisUrl: "redis://127.0.0.1:1" };
const recorded = () =>
  readState({
    ...options,
    statePath: join(stateDir, "services.json"),
    env: {},
    defaults: { databaseUrl: "", redisUrl: "" },
  }).redisCluster;
let cluster: RedisClusterInfo;

beforeAll(async () => {
  cluster = await redisClusterUp(options);
});
afterAll(async () => {
  await servicesDown(options).catch(() => {});
  rmSync(stateDir, { recursive: true, force: true });
});

describe("the lab's Redis Cluster", () => {
  test("three masters on their own ports, every slot covered, the password required", async () => {
    expect(cluster.nodes).toHaveLength(CLUSTER_MASTERS);
    expect(new Set(cluster.nodes).size).toBe(CLUSTER_MASTERS);
    expect(await clusterReady(cluster.nodes, cluster.password)).toBeNull();
    const [host, port] = (cluster.nodes[0] as string).split(":");
    // A command without AUTH, on a bare socket (a client would send HELLO first and give up on its error).
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), host as string, () => socket.write("GET x\r\n"));
      socket.once("data", (data) => {
        resolve(data.toString());
        socket.destroy();
      });
      socket.once("error", reject);
    });
    expect(reply).toStartWith("-NOAUTH");
    // A second start finds the same cluster rather than another; status reports it, starting nothing.
    expect((await redisClusterUp(options)).nodes).toEqual(cluster.nodes);
    expect((await servicesStatus({ ...options, defaults: closedPorts })).redisCluster?.nodes).toEqual(
      cluster.nodes,
    );
  });

  test("each cluster adapter's slot of a key is Redis's own (CLUSTER KEYSLOT), hash tags included", async () => {
    const node = nodeClient(cluster.nodes[0] as string, cluster.password);
    await node.connect();
    try {
      const keys = [
        "product:7",
        "c:{product:7}",
        "c:{product:7}:gen",
        "a{}b",
        "{}",
        "é{x}",
        "{a}{b}",
        "x{y",
        "x}y{z}",
      ];
      for (const key of keys) {
        const slot = Number(await node.call("CLUSTER", "KEYSLOT", key));
        expect({ key, io: ioredisAdapter.clusterSlot(key), node: nodeAdapter.clusterSlot(key) }).toEqual({
          key,
          io: slot,
          node: slot,
        });
      }
    } finally {
      node.disconnect();
    }
  });

  test("with one master killed, redis and two_tier on each client answer every key: its keys from the loader, the others' still from Redis, interleaved", async () => {
    const makers = {
      "redis on ioredis": (prefix: string) =>
        redisStrategy.createCache({
          redis: ioredisAdapter.ioredisClusterCommands(cluster),
          ttlMs: 60_000,
          prefix,
        }),
      "two_tier on node-redis": (prefix: string) =>
        twoTier.createCache({
          redis: nodeAdapter.nodeClusterCommands(cluster),
          ttlMs: 60_000,
          prefix,
          l1MaxSize: 1,
          l1TtlMs: 1, // L1 holds nothing for long: the reads below reach L2
        }),
    };
    const caches = Object.entries(makers).map(([name, make]) => {
      const prefix = uniquePrefix("killed");
      return { name, prefix, cache: make(prefix) };
    });
    const keys = Array.from({ length: 60 }, (_, i) => `product:${i}`);
    for (const { cache } of caches) {
      expect(await eventually(() => cache.healthy(), 5_000)).toBe(true);
      for (const key of keys) expect(await cache.getOrLoad(key, async () => `${key}:v`)).toBe(`${key}:v`);
    }
    // Which master holds each key's slot (the tag is the key: `prefix{key}`).
    const victim = cluster.nodes[1] as string;
    const node = nodeClient(victim, cluster.password);
    await node.connect();
    const slots = (await node.call("CLUSTER", "SLOTS")) as [number, number, [string, number]][];
    const victimSlots = slots.filter(([, , [, port]]) => `127.0.0.1:${port}` === victim);
    const slotOf = (key: string) => node.call("CLUSTER", "KEYSLOT", key) as Promise<number>;
    const onVictim = new Set<string>();
    for (const key of keys) {
      const slot = await slotOf(key);
      if (victimSlots.some(([from, to]) => slot >= from && slot <= to)) onVictim.add(key);
    }
    expect(onVictim.size).toBeGreaterThan(0);
    expect(onVictim.size).toBeLessThan(keys.length);
    await Bun.sleep(100); // the background fills have landed
    const pid = Number(/process_id:(\d+)/.exec(await node.info("server"))?.[1]);
    node.disconnect();
    process.kill(pid, "SIGKILL");

    for (const { name, cache } of caches) {
      // The dead master's keys first (they open its breaker), then the live ones (which would be skipped,
      // and answered by the loader, under one breaker for all), then all of them interleaved.
      const live = keys.filter((key) => !onVictim.has(key));
      const rounds = [[...onVictim], live, keys];
      for (const [round, order] of rounds.entries()) {
        for (const key of order) {
          const startedMs = performance.now();
          const dead = onVictim.has(key);
          const value = await cache.getOrLoad(key, async () => (dead ? `${key}:loaded` : "reloaded"));
          // A live master's key is still a Redis hit (the loader would say "reloaded"); the dead one's keys
          // are misses the loader answers, within a command timeout or so.
          expect({ name, round, key, value }).toEqual({
            name,
            round,
            key,
            value: dead ? `${key}:loaded` : `${key}:v`,
          });
          expect(performance.now() - startedMs).toBeLessThan(1_000);
        }
      }
      expect(cache.stats().errors).toBeGreaterThan(0);
      await cache.close();
    }
  });

  test("services down stops every node and removes their folders: no nodes.conf is left", async () => {
    expect(recorded()?.nodes).toHaveLength(CLUSTER_MASTERS);
    const lines = await servicesDown(options);
    expect(lines.filter((line) => line.startsWith("redis cluster:"))).toHaveLength(CLUSTER_MASTERS);
    expect(recorded()).toBeUndefined();
    expect((await servicesStatus({ ...options, defaults: closedPorts })).redisCluster).toBeNull();
    const left = existsSync(join(stateDir, "redis-cluster"))
      ? readdirSync(join(stateDir, "redis-cluster"))
      : [];
    expect(left).toEqual([]);
    for (const node of cluster.nodes) {
      const client = nodeClient(node, cluster.password);
      client.on("error", () => {});
      expect(
        await client.connect().then(
          () => "answered",
          () => "gone",
        ),
      ).toBe("gone");
      client.disconnect();
    }
  });

  // As root the nodes run as the redis user, who cannot pass through a private folder (a checkout in /root).
  test.skipIf(process.getuid?.() !== 0)(
    "under a folder its nodes' user cannot pass through, the nodes work in a folder of mkdtemp's, removed by down",
    async () => {
      const privateDir = mkdtempSync(join(tmpdir(), "cachelab-private-")); // 0700: others cannot pass
      const inside = { stateDir: join(privateDir, "state"), log: () => {} };
      try {
        const started = await redisClusterUp(inside);
        expect(await clusterReady(started.nodes, started.password)).toBeNull();
        const folders = readdirSync(tmpdir()).filter((name) => name.startsWith("cachelab-redis-cluster-"));
        expect(folders.length).toBeGreaterThan(0);
        await servicesDown(inside);
        const after = readdirSync(tmpdir()).filter((name) => name.startsWith("cachelab-redis-cluster-"));
        expect(after.filter((name) => !folders.includes(name))).toEqual([]);
        expect(after.length).toBe(folders.length - 1);
      } finally {
        await servicesDown(inside).catch(() => {});
        rmSync(privateDir, { recursive: true, force: true });
      }
    },
  );
});
