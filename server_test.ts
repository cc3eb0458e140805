import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import postgres from "postgres";
import { type ServerProcess, startServer } from "./lab/cell/server_process.ts";
import { eventually, testDatabaseUrl, testServices, uniquePrefix } from "./lab/shared/testing.ts";
import type { SeedPlan } from "./seed/seed.ts";
import { createLab, type Lab, type ServerStats } from "./server.ts";
import {
  DEFAULT_CONFIG,
  PROBE_HEADER,
  readConfig,
  type ServerConfig,
  STRATEGY_NAMES,
} from "./server_config.ts";

const PLAN: SeedPlan = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let databaseUrl: string;
let redisUrl: string;
let sql: postgres.Sql;

beforeAll(async () => {
  databaseUrl = await testDatabaseUrl(PLAN);
  redisUrl = (await testServices()).redisUrl;
  sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql.end();
});

function configFor(strategy: ServerConfig["strategy"]): ServerConfig {
  return {
    ...DEFAULT_CONFIG,
    strategy,
    databaseUrl,
    redisUrl,
    redisKeyPrefix: uniquePrefix(`server-${strategy}`),
  };
}

/** The row as the API must render it, read straight from Postgres (not through drizzle). */
async function dbRows(ids: number[]): Promise<Map<number, Record<string, unknown>>> {
  const rows = await sql<
    {
      id: number;
      name: string;
      category_id: number;
      price_cents: number;
      stock: number;
      description: string;
      version: number;
      updated_at: Date;
    }[]
  >`select * from products where id = any(${ids}::int[]) order by id`;
  return new Map(
    rows.map((row) => [
      row.id,
      {
        id: row.id,
        name: row.name,
        categoryId: row.category_id,
        priceCents: row.price_cents,
        stock: row.stock,
        description: row.description,
        version: row.version,
        updatedAt: row.updated_at.toISOString(),
      },
    ]),
  );
}

async function call(lab: Lab, path: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const response = await lab.app.handle(new Request(`http://localhost${path}`, init));
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) };
}

function put(body: unknown, contentType = "application/json"): RequestInit {
  return {
    method: "PUT",
    headers: { "content-type": contentType },
    body: typeof body === "string" ? body : JSON.stringify(body),
  };
}

test("STRATEGY_NAMES are exactly the strategy files", () => {
  const files = readdirSync(`${import.meta.dir}/strategies`)
    .filter((name) => name.endsWith(".ts") && !name.startsWith("_") && !name.endsWith("_test.ts"))
    .map((name) => name.slice(0, -3))
    .sort();
  expect([...STRATEGY_NAMES].sort() as string[]).toEqual(files);
});

describe("readConfig", () => {
  test("readConfig rejects an unknown strategy and lists the valid ones", () => {
    expect(() => readConfig({ CACHE_STRATEGY: "memcached" })).toThrow(
      "Cannot read CACHE_STRATEGY: expected one of none, local, redis, two_tier: received memcached",
    );
  });

  test("readConfig rejects a non-integer number", () => {
    expect(() => readConfig({ PG_POOL_MAX: "ten" })).toThrow("Cannot read PG_POOL_MAX");
    expect(() => readConfig({ L1_TTL_MS: "-5" })).toThrow("Cannot read L1_TTL_MS");
  });

  test("readConfig defaults reusePort to off", () => {
    expect(readConfig({}).reusePort).toBe(false);
    expect(readConfig({ REUSE_PORT: "1" }).reusePort).toBe(true);
  });
});

for (const strategy of STRATEGY_NAMES) {
  describe(`server with ${strategy}`, () => {
    let lab: Lab;
    beforeAll(async () => {
      lab = createLab(configFor(strategy));
      expect(await eventually(() => lab.ready(), 5_000)).toBe(true);
    });
    afterAll(async () => {
      await lab.close();
    });

    test(`${strategy}: 200 random ids equal their database rows, on a miss and on a hit`, async () => {
      const ids = Array.from({ length: 200 }, () => 1 + Math.floor(Math.random() * PLAN.rows));
      const expected = await dbRows(ids);
      for (const pass of ["miss", "hit"]) {
        for (const id of ids) {
          const response = await lab.app.handle(new Request(`http://localhost/products/${id}`));
          // Byte-for-byte what JSON.stringify prints for the row: key order, compact, ISO timestamps.
          const body = await response.text();
          expect({ pass, status: response.status, body }).toEqual({
            pass,
            status: 200,
            body: JSON.stringify(expected.get(id)),
          });
          expect(response.headers.get("content-type")).toBe("application/json");
        }
      }
    });

    test(`${strategy}: list pages equal the database query`, async () => {
      for (const [category, page, size] of [
        [1, 0, 20],
        [7, 2, 9],
        [50, 0, 100],
        [13, 1_000, 5],
      ] as const) {
        const rows = await sql<{ id: number }[]>`
          select id from products where category_id = ${category} order by id limit ${size} offset ${page * size}`;
        const expected = await dbRows(rows.map((row) => row.id));
        for (let pass = 0; pass < 2; pass++) {
          const { status, body } = await call(
            lab,
            `/products?category=${category}&page=${page}&size=${size}`,
          );
          expect(status).toBe(200);
          expect(body).toEqual({ category, page, size, items: rows.map((row) => expected.get(row.id)) });
        }
      }
    });

    test(`${strategy}: PUT then GET returns the new version, in the detail and in its list page`, async () => {
      const id = 1 + Math.floor(Math.random() * PLAN.rows);
      const [before] = [...(await dbRows([id])).values()] as [Record<string, unknown>];
      const category = before.categoryId as number;
      const listPath = `/products?category=${category}&size=100`;
      const [{ n }] =
        (await sql`select count(*)::int as n from products where category_id = ${category} and id < ${id}`) as [
          { n: number },
        ];
      const listPage = Math.floor(n / 100);
      const pagedPath = `${listPath}&page=${listPage}`;
      await call(lab, `/products/${id}`); // cached now (except none)
      await call(lab, pagedPath);
      const priceCents = 100 + Math.floor(Math.random() * 1_000_000);
      const updated = await call(lab, `/products/${id}`, put({ priceCents, name: `renamed ${id}` }));
      expect(updated.status).toBe(200);
      expect(updated.body).toMatchObject({
        id,
        priceCents,
        name: `renamed ${id}`,
        version: (before.version as number) + 1,
      });
      const after = await call(lab, `/products/${id}`);
      expect(after.body).toEqual(updated.body);
      expect(after.body).toEqual((await dbRows([id])).get(id));
      const list = (await call(lab, pagedPath)).body as { items: { id: number }[] };
      expect(list.items.find((item) => item.id === id)).toEqual(updated.body as { id: number });
    });

    test(`${strategy}: bad ids, parameters and bodies get 400 or 404, never 5xx`, async () => {
      const cases: [string, RequestInit | undefined, number][] = [
        ["/products/0", undefined, 400],
        ["/products/-1", undefined, 400],
        ["/products/abc", undefined, 400],
        ["/products/1.5", undefined, 400],
        ["/products/007", undefined, 400],
        ["/products/2147483648", undefined, 400],
        ["/products/99999999999999999999", undefined, 400],
        [`/products/${PLAN.rows + 1}`, undefined, 404],
        ["/products/2147483647", undefined, 404],
        ["/products", undefined, 400],
        ["/products?category=abc", undefined, 400],
        ["/products?category=1&size=0", undefined, 400],
        ["/products?category=1&size=101", undefined, 400],
        ["/products?category=1&page=-1", undefined, 400],
        ["/products?category=1&colour=red", undefined, 400],
        ["/products/1", put("{not json"), 400],
        ["/products/1", put([]), 400],
        ["/products/1", put({}), 400],
        ["/products/1", put(null), 400],
        ["/products/1", put({ stock: -1 }), 400],
        ["/products/1", put({ stock: 1.5 }), 400],
        ["/products/1", put({ priceCents: "5" }), 400],
        ["/products/1", put({ name: "  " }), 400],
        ["/products/1", put({ stock: 1, colour: "red" }), 400],
        ["/products/1", put('{"stock":1}', "text/plain"), 400],
        ["/products/abc", put({ stock: 1 }), 400],
        [`/products/${PLAN.rows + 1}`, put({ stock: 1 }), 404],
        ["/nothing/here", undefined, 404],
      ];
      for (const [path, init, status] of cases) {
        const response = await call(lab, path, init);
        expect({ path, init: init?.body, status: response.status }).toEqual({
          path,
          init: init?.body,
          status,
        });
        expect(response.body).toHaveProperty("error");
      }
    });

    test(`${strategy}: /stats counts requests, database queries and per-tier hits`, async () => {
      const before = lab.stats();
      await call(lab, "/products/42");
      await call(lab, "/products/42");
      await call(lab, "/health");
      const after = lab.stats();
      expect(after.requests - before.requests).toBe(2);
      const caches = strategy !== "none";
      expect(after.dbQueries - before.dbQueries).toBeLessThanOrEqual(caches ? 1 : 2);
      if (strategy === "none") expect(after.dbQueries - before.dbQueries).toBe(2);
      const hits = (s: typeof after) => Object.values(s.tiers)[0]?.hits ?? 0;
      if (caches) expect(hits(after) - hits(before)).toBeGreaterThanOrEqual(1);
      expect(after.cacheErrors).toBe(0);
    });

    test(`${strategy}: /stats counts reads, their queries, writes and distinct keys; probes stay apart`, async () => {
      const windowed = (await call(lab, "/stats/window", { method: "POST" })).body as ServerStats;
      expect(windowed.requests).toBe(lab.stats().requests);
      expect(lab.stats().distinctKeys).toBe(0);
      const before = lab.stats();
      for (const path of [
        "/products/7",
        "/products/7",
        "/products/8",
        "/products?category=3&page=1&size=5",
      ]) {
        await call(lab, path);
      }
      await call(lab, "/products/0"); // a 400: a request, not a read
      await call(lab, "/products/9", put({ stock: 1 }));
      // The probe's PUT invalidates 11, so its GET must load: two queries, both counted apart.
      await call(lab, "/products/11", {
        ...put({ stock: 2 }),
        headers: { ...put({}).headers, [PROBE_HEADER]: "test" },
      });
      await call(lab, "/products/11", { headers: { [PROBE_HEADER]: "test" } });
      const after = lab.stats();
      const delta = (name: keyof ServerStats) => (after[name] as number) - (before[name] as number);
      expect(delta("requests")).toBe(6);
      expect(delta("reads")).toBe(4);
      expect(delta("writes")).toBe(1);
      expect(delta("probes")).toBe(2);
      expect(delta("probeDbQueries")).toBe(2);
      // The second read of 7 is a hit for every cache (earlier tests may have cached the others).
      if (strategy === "none") expect(delta("readDbQueries")).toBe(4);
      else expect(delta("readDbQueries")).toBeLessThanOrEqual(3);
      expect(delta("dbQueries")).toBe(delta("readDbQueries") + 1);
      expect(after.distinctKeys).toBe(3); // 7, 8 and one list page; never the probe's 11
    });
  });
}

describe("server processes", () => {
  const servers: ServerProcess[] = [];
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });

  test("two_tier: a PUT through instance A is seen through instance B within 100 ms", async () => {
    const env = {
      CACHE_STRATEGY: "two_tier",
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: uniquePrefix("two-process"),
      L1_TTL_MS: "600000",
    };
    const [a, b] = await Promise.all([startServer({ env }), startServer({ env })]);
    servers.push(a, b);
    const id = 1 + Math.floor(Math.random() * PLAN.rows);
    const read = async (server: ServerProcess) =>
      (await (await fetch(`${server.url}/products/${id}`)).json()) as { version: number };
    const { version } = await read(b);
    await read(b); // now in B's L1
    const response = await fetch(`${a.url}/products/${id}`, put({ stock: 3 }));
    expect(response.status).toBe(200);
    const startedMs = performance.now();
    expect(await eventually(async () => (await read(b)).version === version + 1, 100)).toBe(true);
    expect(performance.now() - startedMs).toBeLessThan(150);
    const stats = (await (await fetch(`${b.url}/stats`)).json()) as { invalidationsReceived: number };
    expect(stats.invalidationsReceived).toBeGreaterThanOrEqual(1);
  });

  test("server exits 0 after draining on SIGTERM", async () => {
    const server = await startServer({ env: { CACHE_STRATEGY: "local", DATABASE_URL: databaseUrl } });
    expect((await fetch(`${server.url}/products/1`)).status).toBe(200);
    expect(await server.stop()).toBe(0);
    expect(server.output()).toContain("draining");
  });

  test("server exits 2 and lists the strategies for an unknown CACHE_STRATEGY", async () => {
    const proc = Bun.spawn(["bun", `${import.meta.dir}/server.ts`], {
      env: { ...process.env, CACHE_STRATEGY: "memcached" },
      stderr: "pipe",
    });
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stderr).text()).toContain("none, local, redis, two_tier");
  });

  test("startServer refuses a port that is already taken", async () => {
    const server = await startServer({ env: { CACHE_STRATEGY: "none", DATABASE_URL: databaseUrl } });
    servers.push(server);
    await expect(startServer({ env: { CACHE_STRATEGY: "none" }, port: server.port })).rejects.toThrow(
      "already taken",
    );
  });
});
