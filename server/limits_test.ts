/**
 * The input limits over a real server process (Bun's own 413 needs a real listener): bodies, names,
 * categories and pages refused with 4xx, the row and Redis left as they were; and distinct keys bounded.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Redis } from "ioredis";
import type postgres from "postgres";
import { type ServerProcess, startServer } from "../lab/cell/server_process.ts";
import { testDatabaseUrl, testRedis, testServices, uniquePrefix } from "../lab/shared/testing.ts";
import { createServer } from "../server.ts";
import { DEFAULT_CONFIG } from "../server_config.ts";
import {
  CATEGORY_MAX,
  MAX_REQUEST_BODY_BYTES,
  NAME_MAX_CHARS,
  nameProblem,
  PAGE_MAX,
  parseId,
} from "./limits.ts";
import type { ServerStats } from "./meter.ts";

const PLAN = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let databaseUrl: string;
let redisUrl: string;
let redis: Redis;
let sql: postgres.Sql;
let server: ServerProcess;
const prefix = uniquePrefix("limits");

beforeAll(async () => {
  redisUrl = (await testServices()).redisUrl;
  databaseUrl = await testDatabaseUrl(PLAN);
  redis = await testRedis();
  const { default: pg } = await import("postgres");
  sql = pg(databaseUrl, { max: 1, onnotice: () => {} });
  server = await startServer({
    env: {
      CACHE_STRATEGY: "redis",
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: prefix,
    },
  });
});
afterAll(async () => {
  await server.stop();
  redis.disconnect();
  await sql.end();
});

async function row(id: number): Promise<unknown> {
  const [found] = await sql`select * from products where id = ${id}`;
  return found;
}

function put(id: number, body: string): Promise<Response> {
  return fetch(`${server.url}/products/${id}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body,
  });
}

async function errorOf(response: Response): Promise<{ status: number; error: string }> {
  const text = await response.text();
  return { status: response.status, error: (JSON.parse(text || "{}") as { error?: string }).error ?? text };
}

describe("request bodies and product names", () => {
  test(`a 1 MiB body is 413 before the handler (limit ${MAX_REQUEST_BODY_BYTES} bytes), and the row is unchanged`, async () => {
    const before = await row(5);
    const response = await put(5, JSON.stringify({ name: "x".repeat(1024 * 1024) }));
    await response.body?.cancel();
    expect(response.status).toBe(413);
    expect(await row(5)).toEqual(before);
    // The same server still answers.
    expect((await fetch(`${server.url}/products/5`)).status).toBe(200);
  });

  test("a NUL, another control character or a lone surrogate in a name is 400 naming `name`; the row is unchanged", async () => {
    const before = await row(6);
    for (const body of [
      '{"name":"\\u0000"}',
      '{"name":"a\\u0000b"}',
      '{"name":"tab\\there"}',
      '{"name":"\\u009b"}',
      '{"name":"\\ud800"}',
    ]) {
      const answer = await errorOf(await put(6, body));
      expect({ body, status: answer.status }).toEqual({ body, status: 400 });
      expect(answer.error).toStartWith("name must");
    }
    expect(await row(6)).toEqual(before);
  });

  test(`a name of ${NAME_MAX_CHARS + 1} characters is 400; ${NAME_MAX_CHARS} (astral ones count once) is taken`, async () => {
    const before = (await row(7)) as { name: string };
    const tooLong = await errorOf(await put(7, JSON.stringify({ name: "n".repeat(NAME_MAX_CHARS + 1) })));
    expect(tooLong).toEqual({
      status: 400,
      error: `name must be at most ${NAME_MAX_CHARS} characters: received ${NAME_MAX_CHARS + 1}`,
    });
    expect(await row(7)).toEqual(before);
    const longest = "🛒".repeat(NAME_MAX_CHARS);
    try {
      const response = await put(7, JSON.stringify({ name: longest }));
      expect(response.status).toBe(200);
      expect(((await response.json()) as { name: string }).name).toBe(longest);
    } finally {
      await sql`update products set name = ${before.name}, version = version - 1 where id = 7`;
    }
  });

  test("nameProblem takes ordinary names", () => {
    expect(nameProblem("Café crème, 250 g")).toBeNull();
    expect(nameProblem("")).toBe("name must be a non-empty string");
  });
});

describe("list parameters", () => {
  test(`category ${CATEGORY_MAX + 1} and 2^31 are 400 and create no catgen: key; category ${CATEGORY_MAX} does`, async () => {
    for (const category of [CATEGORY_MAX + 1, 2 ** 31 - 1, 2 ** 31]) {
      const answer = await errorOf(await fetch(`${server.url}/products?category=${category}`));
      expect({ category, ...answer }).toEqual({
        category,
        status: 400,
        error: `category must be an integer in 1..${CATEGORY_MAX}`,
      });
    }
    expect(await redis.keys(`${prefix}{catgen:*}`)).toEqual([]);
    // The observation works: a valid category does make its token.
    expect((await fetch(`${server.url}/products?category=${CATEGORY_MAX}`)).status).toBe(200);
    expect(await redis.keys(`${prefix}{catgen:*}`)).toEqual([`${prefix}{catgen:${CATEGORY_MAX}}`]);
  });

  test(`page ${PAGE_MAX + 1} is 400, page ${PAGE_MAX} is an empty page`, async () => {
    expect(await errorOf(await fetch(`${server.url}/products?category=1&page=${PAGE_MAX + 1}`))).toEqual({
      status: 400,
      error: `page must be an integer in 0..${PAGE_MAX}`,
    });
    const last = await fetch(`${server.url}/products?category=1&page=${PAGE_MAX}`);
    expect(((await last.json()) as { items: unknown[] }).items).toEqual([]);
  });
});

describe("distinct keys", () => {
  test("past its exact bound the server's distinct-key count holds registers, not keys, and stays close", async () => {
    const lab = createServer(
      { ...DEFAULT_CONFIG, strategy: "local", databaseUrl, redisUrl },
      { distinctKeysExactMax: 100 },
    );
    try {
      const read = (path: string) => lab.app.handle(new Request(`http://localhost${path}`));
      for (let id = 1; id <= 100; id++) await read(`/products/${id}`);
      expect(lab.stats()).toMatchObject({ distinctKeys: 100, distinctKeysExact: true });
      // 1 000 list keys (pages of category 1 that are empty: one cheap query each) and the ids again.
      for (let page = 0; page < 1_000; page++) await read(`/products?category=1&page=${page}&size=1`);
      for (let id = 1; id <= 100; id++) await read(`/products/${id}`);
      const stats: ServerStats = lab.stats();
      expect(stats.distinctKeysExact).toBe(false);
      expect(Math.abs(stats.distinctKeys / 1_100 - 1)).toBeLessThan(0.03);
    } finally {
      await lab.close();
    }
  });
});

test("parseId takes canonical decimals in min..max only", () => {
  for (const [raw, id] of [
    ["1", 1],
    ["0", null], // below min 1
    ["2147483647", 2_147_483_647],
    ["2147483648", null],
    ["99999999999", null],
  ] as const)
    expect([raw, parseId(raw, 1, 2_147_483_647)]).toEqual([raw, id]);
  expect(parseId("0", 0, 10)).toBe(0);
  for (const raw of [undefined, "", "00", "01", "-1", "+1", "1.0", "1e3", " 1", "1 ", "0x1", "12a", "١"])
    expect([raw, parseId(raw, 0, 2_147_483_647)]).toEqual([raw, null]);
});
