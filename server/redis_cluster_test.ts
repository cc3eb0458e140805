/**
 * The server on the lab's three-master Redis Cluster (REDIS_CLUSTER_NODES), on each cluster client: it serves
 * hits with no cache error, its keys land on every master, two_tier's invalidation reaches another instance
 * through the cluster, /info names the masters, and a reset empties every master of its keys. Also the
 * setting's refusals.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Cluster } from "ioredis";
import { type ServerProcess, startServer } from "../lab/cell/server_process.ts";
import type { RedisClusterInfo } from "../lab/services/native_redis_cluster.ts";
import { eventually, testDatabaseUrl, testRedisCluster, uniquePrefix } from "../lab/shared/testing.ts";
import { ADMIN_TOKEN_HEADER, readConfig } from "../server_config.ts";
import { escapeRedisGlob } from "./redis_glob.ts";

const PLAN = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let cluster: RedisClusterInfo;
let redis: Cluster;
let databaseUrl: string;

beforeAll(async () => {
  cluster = await testRedisCluster();
  databaseUrl = await testDatabaseUrl(PLAN);
  const [host, port] = (cluster.nodes[0] as string).split(":");
  redis = new Cluster([{ host: host as string, port: Number(port) }], {
    lazyConnect: true,
    redisOptions: { password: cluster.password, commandTimeout: 2_000 },
  });
  await redis.connect();
});
afterAll(async () => {
  redis?.disconnect();
  await testDatabaseUrl(PLAN); // the PUT changed a row
});

describe("REDIS_CLUSTER_NODES", () => {
  const base = { CACHE_STRATEGY: "redis" };
  test("is read as host:port pairs, with its password; REDIS_URL is then not used", () => {
    const config = readConfig({
      ...base,
      REDIS_CLUSTER_NODES: "127.0.0.1:7000, redis-2.internal:7001",
      REDIS_CLUSTER_PASSWORD: "pw",
    });
    expect([config.redisClusterNodes, config.redisClusterPassword]).toEqual([
      ["127.0.0.1:7000", "redis-2.internal:7001"],
      "pw",
    ]);
    expect([readConfig(base).redisClusterNodes, readConfig(base).redisClusterPassword]).toEqual([null, null]);
  });

  test("refuses a malformed list, Bun's client (no cluster support), and node-redis without a cluster", () => {
    for (const nodes of [
      "127.0.0.1",
      "127.0.0.1:0",
      "127.0.0.1:7000,",
      "redis://127.0.0.1:7000",
      "a:70000",
    ]) {
      expect(() => readConfig({ ...base, REDIS_CLUSTER_NODES: nodes })).toThrow(
        `Cannot read REDIS_CLUSTER_NODES: expected host:port[,host:port…]: received ${nodes}`,
      );
    }
    expect(() => readConfig({ ...base, REDIS_CLUSTER_NODES: "127.0.0.1:7000", REDIS_CLIENT: "bun" })).toThrow(
      "Bun's RedisClient has no cluster support",
    );
    expect(() => readConfig({ ...base, REDIS_CLIENT: "node-redis" })).toThrow(
      "node-redis is the lab's client for tracking and a Redis Cluster only",
    );
  });

  test("refuses tracking on a cluster: node-redis's cluster client hands over no invalidation pushes", () => {
    expect(() =>
      readConfig({
        CACHE_STRATEGY: "tracking",
        REDIS_CLUSTER_NODES: "127.0.0.1:7000",
        REDIS_CLIENT: "node-redis",
      }),
    ).toThrow(
      "Cannot run CACHE_STRATEGY=tracking on REDIS_CLUSTER_NODES: node-redis's cluster client hands over no invalidation pushes",
    );
    expect(readConfig({ CACHE_STRATEGY: "tracking" }).redisClusterNodes).toBeNull();
  });

  test("tracking runs on ioredis (the default) or node-redis on one Redis, and refuses Bun's client", () => {
    expect(readConfig({ CACHE_STRATEGY: "tracking" }).redisClient).toBe("ioredis");
    expect(readConfig({ CACHE_STRATEGY: "tracking", REDIS_CLIENT: "node-redis" }).redisClient).toBe(
      "node-redis",
    );
    expect(() => readConfig({ CACHE_STRATEGY: "tracking", REDIS_CLIENT: "bun" })).toThrow(
      "Cannot run CACHE_STRATEGY=tracking on REDIS_CLIENT=bun: Bun's RedisClient hands over no invalidations; use ioredis or node-redis: received bun",
    );
  });
});

/** How many keys under `prefix` each master holds (a SCAN sees one node). */
async function keysPerMaster(prefix: string): Promise<number[]> {
  return Promise.all(
    redis.nodes("master").map(async (node) => {
      let cursor = "0";
      let count = 0;
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", `${escapeRedisGlob(prefix)}*`, "COUNT", 1_000);
        cursor = next;
        count += keys.length;
      } while (cursor !== "0");
      return count;
    }),
  );
}

/** Whether every product in `ids` has its value in the cluster: a miss's fill lands after its response. */
async function filled(prefix: string, ids: number[]): Promise<boolean> {
  const found = await Promise.all(ids.map((id) => redis.exists(`${prefix}{product:${id}}`)));
  return found.every((count) => count === 1);
}

/** Takes the expiry off every key under `prefix` on every master, so a count stands until the keys are deleted. */
async function persistAll(prefix: string): Promise<void> {
  await Promise.all(
    redis.nodes("master").map(async (node) => {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", `${escapeRedisGlob(prefix)}*`, "COUNT", 1_000);
        cursor = next;
        await Promise.all(keys.map((key) => node.persist(key)));
      } while (cursor !== "0");
    }),
  );
}

interface Stats {
  redisClient: string;
  dbQueries: number;
  cacheErrors: number;
  tiers: Record<string, { hits: number; misses: number }>;
}
const stats = async (server: ServerProcess) => (await (await fetch(`${server.url}/stats`)).json()) as Stats;
const body = async (server: ServerProcess, id: number) =>
  (await (await fetch(`${server.url}/products/${id}`)).json()) as { stock: number };

for (const client of ["ioredis", "node-redis"] as const) {
  describe(`the server on the lab's Redis Cluster, REDIS_CLIENT=${client}`, () => {
    const prefix = uniquePrefix(`cluster-${client}`);
    const ids = Array.from({ length: 60 }, (_, i) => 1 + i * 31);
    let servers: ServerProcess[] = [];
    beforeAll(async () => {
      const env = {
        CACHE_STRATEGY: "two_tier",
        DATABASE_URL: databaseUrl,
        REDIS_CLUSTER_NODES: cluster.nodes.join(","),
        REDIS_CLUSTER_PASSWORD: cluster.password,
        REDIS_CLIENT: client,
        REDIS_KEY_PREFIX: prefix,
      };
      servers = await Promise.all([startServer({ env }), startServer({ env })]);
    });
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.stop()));
    });

    test("serves every read, then hits, with no cache error; its keys land on all three masters", async () => {
      const [a, b] = servers as [ServerProcess, ServerProcess];
      for (const id of ids) expect((await fetch(`${a.url}/products/${id}`)).status).toBe(200);
      // a's fills go to the cluster in the background: b reads once they have all landed.
      expect(await eventually(() => filled(prefix, ids), 10_000)).toBe(true);
      for (const id of ids) expect((await fetch(`${b.url}/products/${id}`)).status).toBe(200);
      const [sa, sb] = await Promise.all([stats(a), stats(b)]);
      expect(sa.redisClient).toMatch(/^(ioredis \S+ Cluster|node-redis \S+ cluster) masters=3 /);
      // a loaded each row once; b found every one in L2.
      expect({
        a: sa.dbQueries,
        b: sb.dbQueries,
        bL2Hits: sb.tiers.l2?.hits,
        errors: sa.cacheErrors + sb.cacheErrors,
      }).toEqual({ a: ids.length, b: 0, bL2Hits: ids.length, errors: 0 });
      const perMaster = await keysPerMaster(prefix);
      expect(perMaster).toHaveLength(3);
      for (const count of perMaster) expect(count).toBeGreaterThan(0);
      const info = (await (await fetch(`${a.url}/info`)).json()) as { redis: { runId: string } };
      expect(info.redis.runId.split(",")).toHaveLength(3);
    });

    test("a PUT on one instance reaches the other's L1 through the cluster's pub/sub", async () => {
      const [a, b] = servers as [ServerProcess, ServerProcess];
      const before = await body(b, 77); // now in b's L1
      expect((await body(b, 77)).stock).toBe(before.stock);
      const put = await fetch(`${a.url}/products/77`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ stock: before.stock + 1 }),
      });
      expect(put.status).toBe(200);
      expect(await eventually(async () => (await body(b, 77)).stock === before.stock + 1, 2_000)).toBe(true);
    });

    test("a reset deletes its keys on every master, and says how many", async () => {
      const [a] = servers as [ServerProcess];
      // The count is of a state at rest: every fill the reads above started has landed (b's reload of 77 is
      // the last), and no key expires before the reset (generations live 10 s, values 60 s).
      expect(await eventually(() => filled(prefix, [...ids, 77]), 10_000)).toBe(true);
      await persistAll(prefix);
      const perMaster = await keysPerMaster(prefix);
      for (const count of perMaster) expect(count).toBeGreaterThan(0);
      const held = perMaster.reduce((sum, count) => sum + count, 0);
      const reset = await fetch(`${a.url}/admin/reset`, {
        method: "POST",
        headers: { [ADMIN_TOKEN_HEADER]: a.adminToken ?? "" },
      });
      expect(await reset.json()).toEqual({ redisKeysRemoved: held });
      expect(await keysPerMaster(prefix)).toEqual([0, 0, 0]);
    });
  });
}
