/**
 * Shedding on event-loop delay: the monitor in this process (a loop blocked on purpose), and a real server
 * whose CPU a cgroup quota cuts to a sliver, so its timers fire late while requests keep coming: it answers
 * 503 with Retry-After, counts them apart in /stats and /metrics, and never sheds the lab's probes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type ServerProcess, startServer } from "../lab/cell/server_process.ts";
import { testDatabaseUrl, testServices } from "../lab/shared/testing.ts";
import { createLoopMonitor } from "./loop_delay.ts";

const PLAN = { rows: 1_000, seed: 7, descriptionBytes: 64 };
const busy = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until) {}
};

/** Polls `check` every millisecond until it holds or `timeoutMs` passes; returns whether it held. */
async function within(timeoutMs: number, check: () => boolean): Promise<boolean> {
  const until = performance.now() + timeoutMs;
  while (!check() && performance.now() < until) await Bun.sleep(1);
  return check();
}

// A limit of 100 ms and blocks of 250: a busy machine (the suite, Postgres, a load tool) can hold this process
// off the CPU for tens of milliseconds, which a 50 ms limit would read as the loop being behind.
test("a loop late in two samples in a row sheds until a sample fires on time; one late sample does not; 0 samples and sheds nothing", async () => {
  const monitor = createLoopMonitor(100);
  const off = createLoopMonitor(0);
  try {
    expect(await within(1_000, () => !monitor.state.shedding)).toBe(true);
    busy(250);
    await Bun.sleep(1); // the overdue sample fires: one late sample, a pause
    expect(monitor.state.shedding).toBe(false);
    busy(250);
    await Bun.sleep(1); // late again: a backlog
    expect(monitor.state.shedding).toBe(true);
    expect(off.state.shedding).toBe(false);
    expect(monitor.stats().eventLoopDelayMs).toBeGreaterThan(100);
    expect(off.stats()).toEqual({ eventLoopDelayMs: null, eventLoopDelayPeakMs: null }); // no sampler at all
    // The next sample on time ends it (within a second, however busy the machine).
    expect(await within(1_000, () => !monitor.state.shedding)).toBe(true);
    expect(monitor.stats().eventLoopDelayPeakMs).toBeGreaterThan(100);
    monitor.reset();
    expect(monitor.stats().eventLoopDelayPeakMs).toBe(0);
  } finally {
    monitor.close();
    off.close();
  }
});

let throttled: ServerProcess;
beforeAll(async () => {
  const { redisUrl } = await testServices();
  const env = { CACHE_STRATEGY: "local", DATABASE_URL: await testDatabaseUrl(PLAN), REDIS_URL: redisUrl };
  // 5% of a core: the process runs 5 ms of every 100 and its 20 ms timer fires up to ~95 ms late.
  throttled = await startServer({
    env: { ...env, MAX_EVENT_LOOP_DELAY_MS: "20", METRICS: "1" },
    cpuLimit: 0.05,
    readyTimeoutMs: 60_000,
  });
}, 90_000);
afterAll(async () => {
  await throttled?.stop();
});

test("a server whose loop is behind answers 503 with Retry-After, counted as the event loop's, and still serves probes", async () => {
  const statuses: number[] = [];
  let retryAfter: string | null = null;
  for (let round = 0; round < 40 && !statuses.includes(503); round++) {
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => fetch(`${throttled.url}/products/${1 + i}`)),
    );
    for (const answer of answers) {
      statuses.push(answer.status);
      if (answer.status === 503) retryAfter = answer.headers.get("retry-after");
      await answer.arrayBuffer();
    }
  }
  expect(statuses).toContain(503);
  expect(statuses.every((status) => status === 200 || status === 503)).toBe(true);
  expect(retryAfter).toBe("1");
  const stats = (await (await fetch(`${throttled.url}/stats`)).json()) as Record<string, number>;
  const shed503 = statuses.filter((status) => status === 503).length;
  expect(stats.shedEventLoop).toBe(shed503);
  expect(stats.shed).toBe(shed503);
  expect(stats.eventLoopDelayPeakMs).toBeGreaterThan(20);
  const metrics = await (await fetch(`${throttled.url}/metrics`)).text();
  expect(metrics).toContain(`cachelab_shed_total{cause="event_loop"} ${shed503}`);
  expect(metrics).toContain('cachelab_shed_total{cause="db_gate"} 0');
  // The lab's probes are never shed: they check answers, not load.
  for (let i = 0; i < 10; i++) expect((await fetch(`${throttled.url}/probe/products/3`)).status).toBe(200);
}, 60_000);
