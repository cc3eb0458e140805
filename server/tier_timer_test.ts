/**
 * The server's own tier timing on real servers (the test database, the real Redis): each request lands in
 * /stats under the outcome it had, with its time (TIER_TIMING=1: every request timed); by default every request
 * is counted and one in four timed; each Redis command the strategy sends is timed; TIER_TIMING=0 times
 * nothing; a reset starts it over.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type ServerProcess, startServer } from "../lab/cell/server_process.ts";
import { testDatabaseUrl, testServices, uniquePrefix } from "../lab/shared/testing.ts";
import type { LoadTimes } from "./load_timer.ts";
import type { Outcome } from "./tier_timer.ts";

const PLAN = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let first: ServerProcess;
let second: ServerProcess;
let local: ServerProcess;
let untimed: ServerProcess;
let sampled: ServerProcess;

beforeAll(async () => {
  const { redisUrl } = await testServices();
  const env = {
    CACHE_STRATEGY: "two_tier",
    DATABASE_URL: await testDatabaseUrl(PLAN),
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: uniquePrefix("tiers"),
    TIER_TIMING: "1",
  };
  const { TIER_TIMING: _, ...withoutTiming } = env;
  [first, second, local, untimed, sampled] = await Promise.all([
    startServer({ env }),
    startServer({ env }),
    startServer({ env: { ...env, CACHE_STRATEGY: "local" } }),
    startServer({ env: { ...env, TIER_TIMING: "0" } }),
    startServer({ env: { ...withoutTiming, CACHE_STRATEGY: "local" } }),
  ]);
});
afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop(), local?.stop(), untimed?.stop(), sampled?.stop()]);
  await testDatabaseUrl(PLAN); // the PUT changed a row
});

interface Timed {
  requestMs: Record<Outcome, LoadTimes>;
  requestCounts: Record<Outcome, number>;
  requestTimedEvery: number;
  redisCommandMs: LoadTimes;
  dbLoadMs: Record<string, LoadTimes>;
}
const stats = async (server: ServerProcess) => (await (await fetch(`${server.url}/stats`)).json()) as Timed;
const get = (server: ServerProcess, path: string) => fetch(`${server.url}${path}`).then((r) => r.status);
const counts = (timed: Timed) => timed.requestCounts;
const timedCounts = (timed: Timed) =>
  Object.fromEntries(Object.entries(timed.requestMs).map(([outcome, times]) => [outcome, times.count]));

test("two_tier: a miss, an L1 hit, another instance's L2 hit and L1 hit, a 400, a 404 and a PUT land under their outcomes, a probe under none", async () => {
  expect(await get(first, "/products/5")).toBe(200); // miss: L1, then L2, then the database
  expect(await get(first, "/products/5")).toBe(200); // L1 hit
  expect(await get(second, "/products/5")).toBe(200); // L2 hit
  expect(await get(second, "/products/5")).toBe(200); // L1 hit
  expect(await get(first, "/products/abc")).toBe(400);
  expect(await get(first, "/products/999999")).toBe(404); // a miss: the database said absent
  expect(await get(first, "/probe/products/7")).toBe(200); // a probe: not timed
  const put = await fetch(`${first.url}/products/6`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ stock: 3 }),
  });
  expect(put.status).toBe(200);
  const [a, b] = await Promise.all([stats(first), stats(second)]);
  expect(counts(a)).toEqual({
    l1_hit: 1,
    l2_hit: 0,
    miss: 2,
    join: 0,
    write: 1,
    shed: 0,
    error: 0,
    invalid: 1,
  });
  expect(counts(b)).toEqual({
    l1_hit: 1,
    l2_hit: 1,
    miss: 0,
    join: 0,
    write: 0,
    shed: 0,
    error: 0,
    invalid: 0,
  });
  expect(timedCounts(a)).toEqual(counts(a)); // TIER_TIMING=1: every one timed
  // A miss holds its load, and a load is slower than an in-process hit.
  const missMean = a.requestMs.miss.meanMs as number;
  expect(missMean).toBeGreaterThanOrEqual(a.dbLoadMs.detail?.meanMs as number);
  expect(a.requestMs.l1_hit.meanMs as number).toBeLessThan(missMean);
  expect(b.requestMs.l2_hit.meanMs as number).toBeGreaterThan(b.requestMs.l1_hit.meanMs as number);
  // second's L2 hit sent one GET; first's misses sent GETs, generation reads and fills, and the PUT's
  // delete script and PUBLISH: all timed.
  expect(b.redisCommandMs.count).toBe(1);
  expect(a.redisCommandMs.count).toBeGreaterThanOrEqual(5);
});

test("local answers a hit in process, and a list page's miss is one miss", async () => {
  expect(await get(local, "/products/9")).toBe(200);
  expect(await get(local, "/products/9")).toBe(200);
  expect(await get(local, "/products?category=2&size=5")).toBe(200);
  const timed = await stats(local);
  expect(counts(timed)).toMatchObject({ l1_hit: 1, l2_hit: 0, miss: 2 });
  expect(timed.redisCommandMs.count).toBe(0);
});

test("TIER_TIMING=0 times nothing; a reset starts the timing over", async () => {
  expect(await get(untimed, "/products/11")).toBe(200);
  expect(await get(untimed, "/products/11")).toBe(200);
  const off = await stats(untimed);
  expect(Object.values(counts(off)).every((n) => n === 0)).toBe(true);
  expect(Object.values(timedCounts(off)).every((n) => n === 0)).toBe(true);
  expect(off.requestTimedEvery).toBe(0);
  expect(off.redisCommandMs.count).toBe(0);

  expect(await get(local, "/products/12")).toBe(200);
  expect(counts(await stats(local)).miss).toBeGreaterThan(0);
  const reset = await fetch(`${local.url}/admin/reset`, {
    method: "POST",
    headers: { "x-cachelab-admin-token": local.adminToken ?? "" },
  });
  expect(reset.status).toBe(200);
  const after = await stats(local);
  expect(Object.values(counts(after)).every((n) => n === 0)).toBe(true);
  expect(Object.values(timedCounts(after)).every((n) => n === 0)).toBe(true);
});

test("by default every request is counted and one in four, by arrival, timed", async () => {
  expect(await get(sampled, "/products/13")).toBe(200); // a miss
  for (let i = 0; i < 8; i++) expect(await get(sampled, "/products/13")).toBe(200); // 8 local hits
  const timed = await stats(sampled);
  expect(timed.requestTimedEvery).toBe(4);
  expect(counts(timed)).toMatchObject({ l1_hit: 8, miss: 1 });
  // Arrivals 4 and 8 were timed: both hits.
  expect(timedCounts(timed)).toMatchObject({ l1_hit: 2, miss: 0 });
  expect(timed.requestMs.l1_hit.meanMs).toBeGreaterThan(0);
});
