/**
 * `--prometheus` against a real Prometheus (Debian's, started on its own port, scraping every second): a
 * short fixed-rate run of none and local, then what Prometheus serves for each row's measured window
 * (`X @ to − X @ from`, the lab idle at both scrapes) set against the row: the request count, p99, the
 * database load p99 and the hit ratio, each within the histogram's bucket resolution or exact where it
 * counts the same events. Every expression of docs/grafana/cachelab.json must return data for the run.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { announceCell, withdrawTargets } from "../cell/prometheus_targets.ts";
import type { Experiment } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { startPrometheus, type TestPrometheus } from "../services/prometheus.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { testDatabaseUrl, testServices } from "../shared/testing.ts";
import { runExperiment } from "./run_experiment.ts";
import { readRows, tempCsv } from "./run_testing.ts";

const SEED = { rows: 2_000, seed: 7, descriptionBytes: 64 };
/** Neighbouring bucket bounds are at most this far apart (server/metrics.ts DURATION_BUCKETS_S). */
const BUCKET_RATIO = 1.5;
let services: Services;
let prometheus: TestPrometheus;
let rows: Record<string, string>[];

const experiment: Experiment = {
  question: "test",
  expect: "test",
  strategies: ["none", "local"],
  repeats: 1,
  seed: SEED,
  tools: ["vegeta"],
  attacks: [
    {
      name: "reads",
      model: { kind: "open", rateRps: 300 },
      durationS: 4,
      warmupS: 1,
      requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
      keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 3, keyspace: 1_500 },
      targetCount: 3_000,
    },
  ],
};

beforeAll(async () => {
  services = { ...(await testServices()), databaseUrl: await testDatabaseUrl(SEED) };
  prometheus = await startPrometheus();
  const out = tempCsv();
  const summary = await runExperiment(experiment, {
    name: "prometheus",
    out,
    services,
    prometheus: { url: prometheus.url, targetsFile: join(prometheus.targetsDir, "lab.json") },
    log: () => {},
    status: () => {},
  });
  if (typeof summary === "string") throw new Error(summary);
  rows = readRows(out);
}, 120_000);
afterAll(async () => {
  await prometheus?.stop();
});

/** One number from an instant query, or NaN when it returns nothing. */
async function scalar(expr: string): Promise<number> {
  const [sample, ...rest] = await prometheus.query(expr);
  if (rest.length > 0) throw new Error(`${expr} returned ${rest.length + 1} series`);
  return sample?.value ?? Number.NaN;
}

/** `expr`'s increase over a row's measured window: its value at the later scrape less its value at the earlier. */
function windowed(row: Record<string, string>, expr: (at: string) => string): string {
  return `(${expr(`@ ${row.metrics_to_unix_s}`)}) - (${expr(`@ ${row.metrics_from_unix_s}`)})`;
}

test("each row's measured window, read back from Prometheus, agrees with the row", async () => {
  expect(rows.map((row) => [row.strategy, row.valid])).toEqual([
    ["none", "true"],
    ["local", "true"],
  ]);
  for (const row of rows) {
    const sel = `run_id="${row.run_id}",strategy="${row.strategy}",repeat="1"`;
    expect(Number(row.metrics_to_unix_s)).toBeGreaterThan(Number(row.metrics_from_unix_s));
    const requests = await scalar(
      windowed(row, (at) => `sum(cachelab_http_request_duration_seconds_count{${sel}} ${at})`),
    );
    const bucketDelta = (metric: string) =>
      windowed(row, (at) => `sum by (le) (${metric}_bucket{${sel}} ${at})`);
    const p99Ms =
      1000 *
      (await scalar(`histogram_quantile(0.99, ${bucketDelta("cachelab_http_request_duration_seconds")})`));
    const loadP99Ms =
      1000 * (await scalar(`histogram_quantile(0.99, ${bucketDelta("cachelab_db_load_duration_seconds")})`));
    // No hit series at all (none) is no hit: said in PromQL, not read from an empty answer.
    const hits = await scalar(
      windowed(
        row,
        (at) =>
          `sum(cachelab_http_request_duration_seconds_count{outcome=~"l1_hit|l2_hit",${sel}} ${at}) or vector(0)`,
      ),
    );
    const readQueries = await scalar(
      windowed(row, (at) => `sum(cachelab_db_queries_total{kind="read",${sel}} ${at})`),
    );
    const reads = await scalar(windowed(row, (at) => `sum(cachelab_reads_total{${sel}} ${at})`));
    const figures = {
      strategy: row.strategy,
      requests,
      serverRequests: Number(row.server_requests),
      p99Ms,
      rowP99Ms: Number(row.latency_p99_ms),
      loadP99Ms,
      rowLoadP99Ms: Number(row.db_load_ms_p99),
      requestHitShare: hits / requests,
      counterHitRatio: 1 - readQueries / reads,
      rowHitRatio: Number(row.hit_ratio),
    };
    // The histogram timed each request the server counted, and nothing else.
    expect(figures).toMatchObject({ requests: figures.serverRequests });
    // The server's /stats and Prometheus's copy of the same counters: equal (to the row's rounding).
    expect(Math.abs(figures.counterHitRatio - figures.rowHitRatio)).toBeLessThan(0.001);
    // Each request's own outcome against the counters: a request that joined another's load is a miss for
    // the first and not a load for the second, so the first may be lower, and only by those.
    expect(figures.rowHitRatio - figures.requestHitShare).toBeGreaterThanOrEqual(-0.001);
    expect(figures.rowHitRatio - figures.requestHitShare).toBeLessThan(0.01);
    // Two histograms of the same loads (the server's 2% one in /stats, Prometheus's): one bucket apart at most.
    expect(figures.loadP99Ms / figures.rowLoadP99Ms).toBeGreaterThan(1 / BUCKET_RATIO);
    expect(figures.loadP99Ms / figures.rowLoadP99Ms).toBeLessThan(BUCKET_RATIO);
    // The server cannot see the wire nor the tool: its p99 is at most the client's, within a bucket (here
    // none's was 0.86 ms by the server, 1.67 ms by vegeta: docs/metrics.md).
    expect(figures.p99Ms).toBeLessThan(figures.rowP99Ms * BUCKET_RATIO);
    if (row.strategy === "none") expect(figures.requestHitShare).toBe(0);
    console.error(JSON.stringify(figures));
  }
});

test("a Prometheus that does not read the targets file is waited for, then reported, and no window is claimed", async () => {
  const elsewhere = join(tempCsv(), "..", "not-watched.json");
  const announced = announceCell(
    { url: prometheus.url, targetsFile: elsewhere },
    [{ url: "http://127.0.0.1:9" }],
    {
      run_id: "never",
      experiment: "test",
      strategy: "local",
      repeat: "1",
      cell: "1",
    },
  );
  const startedMs = performance.now();
  expect(await announced.scrapedAfter(Date.now() / 1000, 1_500)).toBeNull();
  expect(performance.now() - startedMs).toBeGreaterThanOrEqual(1_500);
  withdrawTargets({ url: prometheus.url, targetsFile: elsewhere });
  expect(JSON.parse(readFileSync(elsewhere, "utf8"))).toEqual([]);
});

test("every expression of docs/grafana/cachelab.json returns data for the run", async () => {
  const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, "docs", "grafana", "cachelab.json"), "utf8")) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  const [row] = rows;
  const empty: string[] = [];
  let expressions = 0;
  for (const panel of dashboard.panels) {
    for (const { expr } of panel.targets) {
      expressions++;
      // Grafana's variables as a viewer of this run would have them; evaluated inside its last cell.
      const query = expr
        .replaceAll("$run_id", String(row?.run_id))
        .replaceAll("$strategy", ".*")
        .replaceAll("$__rate_interval", "4s");
      const atS = Number(rows.at(-1)?.metrics_to_unix_s) - 1;
      const samples = await prometheus.query(query, atS);
      if (!samples.some((sample) => Number.isFinite(sample.value))) empty.push(`${panel.title}: ${expr}`);
    }
  }
  expect(expressions).toBeGreaterThan(20);
  expect(empty).toEqual([]);
});
