/** The idle probe on the real services: Postgres, Redis and Toxiproxy, and the real server for its query. */
import { beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { Toxiproxy } from "../faults/toxiproxy.ts";
import type { Services } from "../services/lifecycle.ts";
import { testDatabaseUrl, testServices } from "../shared/testing.ts";
import { DETAIL_QUERY, detailBody, idleProbe, measureIdle } from "./idle_probe.ts";
import { startServer } from "./server_process.ts";

const SEED = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let services: Services;

beforeAll(async () => {
  const found = await testServices();
  // A missing Toxiproxy fails these tests: it is part of the lab, like Postgres and Redis.
  if (found.toxiproxy === null) throw new Error("Toxiproxy is not running: bash scripts/install-deps.sh");
  services = { ...found, databaseUrl: await testDatabaseUrl(SEED) };
});

test("the probe's query is the server's detail query: the same body, byte for byte", async () => {
  const server = await startServer({
    env: { CACHE_STRATEGY: "none", DATABASE_URL: services.databaseUrl, REDIS_URL: services.redisUrl },
  });
  const sql = postgres(services.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    for (const id of [1, 777, SEED.rows]) {
      const response = await fetch(`${server.url}/products/${id}`);
      expect(response.status).toBe(200);
      expect(await detailBody(sql, id)).toBe(await response.text());
    }
    expect(await detailBody(sql, SEED.rows + 1)).toBeUndefined();
    expect(DETAIL_QUERY).toContain('where "products"."id" = $1');
  } finally {
    await sql.end();
    await server.stop();
  }
}, 30_000);

test("the idle probe measures each proxied service through a proxy of its own, then deletes it", async () => {
  const toxiproxy = new Toxiproxy(services.toxiproxy?.url as string);
  const tag = `cachelab-test-probe-${crypto.randomUUID().slice(0, 8)}`;
  const both = await idleProbe(toxiproxy, services, ["postgres", "redis"], {
    tag,
    listenHost: "127.0.0.1",
    rows: SEED.rows,
    samples: 50,
  });
  expect(both.missCostMs).toBeGreaterThan(0);
  expect(both.redisRttMs).toBeGreaterThan(0);
  // To the µs, as the toxic takes it.
  expect(Math.round((both.missCostMs as number) * 1_000)).toBe((both.missCostMs as number) * 1_000);
  expect(Object.keys(await toxiproxy.proxies()).filter((name) => name.startsWith(tag))).toEqual([]);
  // A service not proxied is not probed: no figure, never a guess.
  const redisOnly = await idleProbe(toxiproxy, services, ["redis"], {
    tag,
    listenHost: "127.0.0.1",
    rows: SEED.rows,
    samples: 20,
  });
  expect(redisOnly.missCostMs).toBeNull();
  expect(redisOnly.redisRttMs).toBeGreaterThan(0);
  // Direct, without Toxiproxy: the same measurement on the services' own addresses.
  const direct = await measureIdle(services, ["postgres", "redis"], { rows: SEED.rows, samples: 50 });
  expect(direct.missCostMs).toBeGreaterThan(0);
  expect(direct.redisRttMs).toBeGreaterThan(0);
}, 30_000);

test("a probe that cannot run its query throws, naming why", async () => {
  await expect(measureIdle(services, ["postgres"], { rows: SEED.rows * 10, samples: 5 })).rejects.toThrow(
    "Cannot probe the miss cost: product",
  );
});
