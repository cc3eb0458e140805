/**
 * GET /metrics on real servers (two two_tier instances on the real Redis and the test database): promtool
 * lints it, each request lands under the outcome it had, and every counter equals what /stats says.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type ServerProcess, startServer } from "../lab/cell/server_process.ts";
import { findBinary } from "../lab/shared/binaries.ts";
import { eventually, testDatabaseUrl, testServices, uniquePrefix } from "../lab/shared/testing.ts";
import { DURATION_BUCKETS_S } from "./metrics.ts";

const PLAN = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let first: ServerProcess;
let second: ServerProcess;
let plain: ServerProcess;

beforeAll(async () => {
  const { redisUrl } = await testServices();
  const env = {
    CACHE_STRATEGY: "two_tier",
    DATABASE_URL: await testDatabaseUrl(PLAN),
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: uniquePrefix("metrics"),
  };
  [first, second, plain] = await Promise.all([
    startServer({ env: { ...env, METRICS: "1" } }),
    startServer({ env: { ...env, METRICS: "1" } }),
    startServer({ env }),
  ]);
});
afterAll(async () => {
  await Promise.all([first?.stop(), second?.stop(), plain?.stop()]);
  await testDatabaseUrl(PLAN); // the PUT changed a row
});

/** promtool's verdict on an exposition: its exit code and what it printed. */
function promtool(text: string): { code: number; output: string } {
  const binary = findBinary("promtool", ["/usr/bin"]);
  if (binary === null)
    throw new Error("promtool not found: bash scripts/install-deps.sh installs Debian's prometheus");
  const run = Bun.spawnSync([binary, "check", "metrics"], { stdin: new TextEncoder().encode(text) });
  return { code: run.exitCode, output: `${run.stdout}${run.stderr}` };
}

/** The samples of an exposition, by their full series text (`name{labels}`). */
function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const space = line.lastIndexOf(" ");
    found.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return found;
}

const scrape = async (server: ServerProcess) => (await fetch(`${server.url}/metrics`)).text();
const get = (server: ServerProcess, path: string) => fetch(`${server.url}${path}`).then((r) => r.status);
const count = (route: string, outcome: string, method = "GET") =>
  `cachelab_http_request_duration_seconds_count{method="${method}",route="${route}",outcome="${outcome}"}`;

test("each request is timed under the outcome it had, the exposition passes promtool, and every counter is /stats's", async () => {
  // first: a miss, then an L1 hit; second: the same product from Redis (L2), then from its L1.
  expect(await get(first, "/products/5")).toBe(200);
  expect(await get(first, "/products/5")).toBe(200);
  expect(await get(second, "/products/5")).toBe(200);
  expect(await get(second, "/products/5")).toBe(200);
  expect(await get(first, "/products/abc")).toBe(400);
  expect(await get(first, "/products/999999")).toBe(404);
  expect(await get(first, "/products?category=3&size=5")).toBe(200);
  const put = await fetch(`${first.url}/products/6`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ stock: 3 }),
  });
  expect(put.status).toBe(200);

  const [firstText, secondText] = await Promise.all([scrape(first), scrape(second)]);
  expect(promtool(firstText)).toEqual({ code: 0, output: "" });
  expect(promtool(secondText)).toEqual({ code: 0, output: "" });
  const a = samples(firstText);
  const b = samples(secondText);
  expect({
    firstMiss: a.get(count("/products/:id", "miss")),
    firstL1: a.get(count("/products/:id", "l1_hit")),
    secondL2: b.get(count("/products/:id", "l2_hit")),
    secondL1: b.get(count("/products/:id", "l1_hit")),
    secondMiss: b.get(count("/products/:id", "miss")),
    invalid: a.get(count("/products/:id", "invalid")),
    list: a.get(count("/products", "miss")),
    write: a.get(count("/products/:id", "write", "PUT")),
  }).toEqual({
    firstMiss: 2,
    firstL1: 1,
    secondL2: 1,
    secondL1: 1,
    secondMiss: undefined,
    invalid: 1,
    list: 1,
    write: 1,
  });

  // Every bucket is there, cumulative, and +Inf is the count.
  const bucket = (le: string) =>
    a.get(
      `cachelab_http_request_duration_seconds_bucket{le="${le}",method="GET",route="/products/:id",outcome="miss"}`,
    );
  expect(DURATION_BUCKETS_S.map((le) => bucket(String(le)) !== undefined).every(Boolean)).toBe(true);
  expect(bucket("+Inf")).toBe(2);

  const stats = (await (await fetch(`${first.url}/stats`)).json()) as {
    requests: number;
    readDbQueries: number;
    writes: number;
    loads: number;
    tiers: Record<string, { hits: number; misses: number }>;
    invalidationsPublished: number;
    dbLoadMs: Record<string, { count: number }>;
  };
  expect({
    requests: a.get("cachelab_requests_total"),
    reads: a.get('cachelab_db_queries_total{kind="read"}'),
    writes: a.get('cachelab_db_queries_total{kind="write"}'),
    loads: a.get("cachelab_cache_loads_total"),
    l1Hits: a.get('cachelab_cache_hits_total{tier="l1"}'),
    l2Misses: a.get('cachelab_cache_misses_total{tier="l2"}'),
    published: a.get("cachelab_invalidations_published_total"),
    detailLoads: a.get('cachelab_db_load_duration_seconds_count{kind="detail"}'),
    breakerOpen: a.get("cachelab_redis_breaker_open"),
  }).toEqual({
    requests: stats.requests,
    reads: stats.readDbQueries,
    writes: stats.writes,
    loads: stats.loads,
    l1Hits: stats.tiers.l1?.hits,
    l2Misses: stats.tiers.l2?.misses,
    published: stats.invalidationsPublished,
    detailLoads: stats.dbLoadMs.detail?.count,
    breakerOpen: 0,
  });
  expect(b.get('cachelab_cache_hits_total{tier="l2"}')).toBe(1);
  // The first server's PUT reaches the second as a bus message: delivered in the background, so waited for.
  const received = async () =>
    (samples(await scrape(second)).get("cachelab_invalidations_received_total") ?? 0) >= 1;
  expect(await eventually(received, 10_000)).toBe(true);
});

test("the buckets resolve 10 µs to 10 s, neighbours at most 1.5× apart (a local hit and a slow miss in buckets of their own)", () => {
  const ratios = DURATION_BUCKETS_S.slice(1).map((bound, i) => bound / (DURATION_BUCKETS_S[i] as number));
  expect({
    first: DURATION_BUCKETS_S[0],
    last: DURATION_BUCKETS_S.at(-1),
    widest: Math.max(...ratios),
    increasing: ratios.every((ratio) => ratio > 1),
  }).toEqual({ first: 0.00001, last: 10, widest: 1.5, increasing: true });
});

test("the process collectors that work on Bun report this process, and the one that crashed Bun is not there", async () => {
  const text = await scrape(first);
  const found = samples(text);
  const status = await Bun.file(`/proc/${first.pid}/status`).text();
  const rssBytes = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
  const rss = found.get("process_resident_memory_bytes") ?? 0;
  expect(rss / rssBytes).toBeGreaterThan(0.8);
  expect(rss / rssBytes).toBeLessThan(1.25);
  expect(found.get("process_cpu_seconds_total")).toBeGreaterThan(0);
  expect(found.get("process_start_time_seconds")).toBeGreaterThan(Date.now() / 1000 - 600);
  expect(found.get("process_open_fds")).toBeGreaterThan(0);
  expect(text).not.toContain("nodejs_eventloop_lag");
});

test("without METRICS=1 there is no /metrics, and promtool is the real linter (it refuses a counter named without _total)", async () => {
  expect(await get(plain, "/metrics")).toBe(404);
  const bad = promtool(
    "# HELP cachelab_requests requests\n# TYPE cachelab_requests counter\ncachelab_requests 1\n",
  );
  expect(bad.code).not.toBe(0);
  expect(bad.output).toContain('counter metrics should have "_total" suffix');
});
