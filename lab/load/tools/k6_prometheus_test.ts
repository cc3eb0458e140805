/**
 * k6 into Prometheus (the settings alone: k6_prometheus_settings_test.ts): real k6 runs against a real
 * test Prometheus (its receiver on) and a counting Bun.serve, read back from Prometheus and set against what
 * k6 counted in its own summary and what the target served.
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { main } from "../../cli/attack.ts";
import type { NormalizedResult } from "../../plan/attack_plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { startPrometheus, type TestPrometheus } from "../../services/prometheus.ts";
import { testTmpdir } from "../../shared/test_tmpdir.ts";
import { runTool } from "../run_attack.ts";
import type { Tool } from "../tool.ts";
import { tool } from "./k6.ts";
import { detailPlan } from "./tool_testing.ts";

/** One series of a range selector as the HTTP API gives it: floats or native histograms, with timestamps. */
interface RangeSeries {
  metric: Record<string, string>;
  values?: [number, string][];
  histograms?: [number, { count: string; sum: string }][];
}

async function rangeSelect(prometheus: TestPrometheus, selector: string): Promise<RangeSeries[]> {
  const params = new URLSearchParams({ query: selector });
  const response = await fetch(`${prometheus.url}/api/v1/query?${params}`);
  const body = (await response.json()) as {
    status: string;
    data: { resultType: string; result: RangeSeries[] };
  };
  expect(body.status).toBe("success");
  expect(body.data.resultType).toBe("matrix");
  return body.data.result;
}

/** k6's own summary of a run: what it counted, overall and in each second's sub-metrics. */
interface Summary {
  setup_data: { startS: number };
  metrics: Record<string, { values: Record<string, number> }>;
}

function value(summary: Summary, metric: string, stat: string): number {
  const v = summary.metrics[metric]?.values[stat];
  expect(typeof v, `${metric} ${stat} in k6's summary`).toBe("number");
  return v as number;
}

/** The seconds (the `sec` tag) in which k6 sent requests, from its own summary. */
function secondsSent(summary: Summary): string[] {
  return Object.keys(summary.metrics)
    .flatMap((name) => /^http_reqs\{sec:(\d+)\}$/.exec(name)?.[1] ?? [])
    .filter((sec) => value(summary, `http_reqs{sec:${sec}}`, "count") > 0)
    .sort((a, b) => Number(a) - Number(b));
}

/** `a` within `relative` of `b`. */
function near(a: number, b: number, relative: number): boolean {
  return Math.abs(a - b) <= relative * Math.abs(b);
}

describe("k6 into the test Prometheus", () => {
  let prometheus: TestPrometheus;
  let nativePrometheus: TestPrometheus;
  let target: ReturnType<typeof Bun.serve>;
  let served = 0;
  let scratch: string;
  beforeAll(async () => {
    target = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => {
        served++;
        return new Response("ok");
      },
    });
    [prometheus, nativePrometheus] = await Promise.all([
      startPrometheus(),
      startPrometheus({ nativeHistograms: true }),
    ]);
    scratch = mkdtempSync(join(testTmpdir(), "cachelab-k6-prometheus-test-"));
  });
  afterAll(async () => {
    await Promise.all([prometheus?.stop(), nativePrometheus?.stop()]);
    target?.stop(true);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /**
   * `bun run attack` at 50 rps into `--out <scratch>/<testId>` (the testid), as a user runs it: its exit code,
   * its result, k6's own summary, what it said on stderr, and how many requests the target served.
   */
  async function attack(
    testId: string,
    flags: string[],
  ): Promise<{ code: number; result?: NormalizedResult; summary?: Summary; stderr: string; served: number }> {
    const out = join(scratch, testId);
    const stdout: string[] = [];
    const stderr: string[] = [];
    const log = spyOn(console, "log").mockImplementation((line: string) => void stdout.push(line));
    const error = spyOn(console, "error").mockImplementation((line: string) => void stderr.push(line));
    const before = served;
    let code: number;
    try {
      code = await main([
        "--url",
        `${target.url.origin}/products/{id}`,
        "--rate",
        "50",
        "--json",
        "--out",
        out,
        ...flags,
      ]);
    } finally {
      log.mockRestore();
      error.mockRestore();
    }
    const printed = stdout.join("\n");
    return {
      code,
      stderr: stderr.join("\n"),
      served: served - before,
      ...(printed ? { result: JSON.parse(printed) as NormalizedResult } : {}),
      ...(printed
        ? { summary: JSON.parse(readFileSync(join(out, "measured", "summary.json"), "utf8")) as Summary }
        : {}),
    };
  }

  test("attack --prometheus-rw lands each second's p50, p95, p99 and max, and k6's request count", async () => {
    const run = await attack("stats-run", [
      "--duration",
      "3s",
      "--prometheus-rw",
      `${prometheus.url}/api/v1/write`,
    ]);
    expect(run.code).toBe(0);
    const result = run.result as NormalizedResult;
    const summary = run.summary as Summary;
    // The lab's measurement as without the output: every request counted, answered and in its timeline.
    const requests = value(summary, "http_reqs", "count");
    expect(requests).toBeGreaterThan(100);
    expect(result.requests).toBe(requests);
    expect(run.served).toBe(requests);
    expect(result.statusCounts).toEqual({ "200": requests });
    expect(result.timeline?.seconds.reduce((n, second) => n + second.sent, 0)).toBe(requests);
    expect(run.stderr).toContain("k6's metrics of the measured run:");

    const names = (await prometheus.query('count by (__name__) (last_over_time({testid="stats-run"}[1h]))'))
      .map((sample) => sample.metric.__name__ as string)
      .filter((name) => name.startsWith("k6_http_req_duration_"));
    expect(names.sort()).toEqual([
      "k6_http_req_duration_max",
      "k6_http_req_duration_p50",
      "k6_http_req_duration_p95",
      "k6_http_req_duration_p99",
    ]);
    // The stale markers ended every series of the run.
    expect(await prometheus.query('{testid="stats-run"}')).toEqual([]);

    const [total] = await prometheus.query('sum(last_over_time(k6_http_reqs_total{testid="stats-run"}[1h]))');
    expect(total?.value).toBe(requests);
    const bySecond = async (expr: string) =>
      new Map((await prometheus.query(expr)).map((sample) => [sample.metric.sec, sample.value]));
    const counts = await bySecond(
      'sum by (sec) (last_over_time(k6_http_reqs_total{testid="stats-run"}[1h]))',
    );
    const seconds = secondsSent(summary);
    expect(seconds.length).toBeGreaterThanOrEqual(3);
    expect([...counts.keys()].sort((a, b) => Number(a) - Number(b))).toEqual(seconds);
    for (const sec of seconds) expect(counts.get(sec)).toBe(value(summary, `http_reqs{sec:${sec}}`, "count"));
    // Each second's stats are k6's own for that second, from another sink of the same samples (ms → s).
    for (const [stat, summaryStat] of [
      ["p50", "med"],
      ["p95", "p(95)"],
      ["p99", "p(99)"],
      ["max", "max"],
    ] as const) {
      const stats = await bySecond(
        `max by (sec) (last_over_time(k6_http_req_duration_${stat}{testid="stats-run"}[1h]))`,
      );
      for (const sec of seconds) {
        const ms = value(summary, `http_req_duration{sec:${sec}}`, summaryStat);
        expect(near((stats.get(sec) as number) * 1_000, ms, 1e-9), `${stat} of second ${sec}`).toBe(true);
      }
    }
    // The p99 the lab's timeline shows for a second is the one Prometheus holds for it.
    const startS = summary.setup_data.startS;
    expect(result.timeline?.seconds.length).toBeGreaterThanOrEqual(3);
    const p99 = await bySecond(
      'max by (sec) (last_over_time(k6_http_req_duration_p99{testid="stats-run"}[1h]))',
    );
    for (const second of result.timeline?.seconds ?? []) {
      expect(
        near((p99.get(String(second.epochS - startS)) as number) * 1_000, second.p99Ms as number, 1e-9),
      ).toBe(true);
    }
    expect(
      JSON.parse(readFileSync(join(scratch, "stats-run", "measured", "env.json"), "utf8")),
    ).toMatchObject({
      K6_PROMETHEUS_RW_TREND_STATS: "p(50),p(95),p(99),max",
    });
  });

  test("without K6_PROMETHEUS_RW_TREND_STATS only p99 lands, k6's default: no p50 or p95 for a dashboard", async () => {
    expect(process.env.K6_PROMETHEUS_RW_TREND_STATS).toBeUndefined();
    const withoutStats: Tool = {
      ...tool,
      prepare(targets, context) {
        const prepared = tool.prepare(targets, context);
        const { K6_PROMETHEUS_RW_TREND_STATS: _, ...env } = prepared.env ?? {};
        return { ...prepared, env };
      },
    };
    const plan = detailPlan("k6-prw-default", { kind: "open", rateRps: 50 }, { baseUrl: target.url.origin });
    const run = await runTool(withoutStats, plan, {
      targets: generateTargets(plan),
      durationS: 2,
      workDir: scratch,
      label: "default-stats",
      detection: await tool.detect(),
      prometheusRw: { url: `${prometheus.url}/api/v1/write`, trends: "stats", testId: "default-stats" },
    });
    const names = (
      await prometheus.query('count by (__name__) (last_over_time({testid="default-stats"}[1h]))')
    ).map((sample) => sample.metric.__name__);
    expect(names).toContain("k6_http_req_duration_p99");
    expect(names).not.toContain("k6_http_req_duration_p50");
    expect(names).not.toContain("k6_http_req_duration_p95");
    const [total] = await prometheus.query(
      'sum(last_over_time(k6_http_reqs_total{testid="default-stats"}[1h]))',
    );
    expect(total?.value).toBe(run.result.requests as number);
  });

  test("--prometheus-trends native-histogram lands histograms whose counts are k6's, and their median", async () => {
    const run = await attack("native-run", [
      "--duration",
      "3s",
      "--prometheus-rw",
      `${nativePrometheus.url}/api/v1/write`,
      "--prometheus-trends",
      "native-histogram",
    ]);
    expect(run.code).toBe(0);
    const summary = run.summary as Summary;
    const requests = value(summary, "http_reqs", "count");
    expect(run.served).toBe(requests);
    const names = (
      await nativePrometheus.query('count by (__name__) (last_over_time({testid="native-run"}[1h]))')
    ).map((sample) => sample.metric.__name__);
    expect(names).toContain("k6_http_req_duration_seconds");
    expect(names).not.toContain("k6_http_req_duration_p99");

    const series = await rangeSelect(
      nativePrometheus,
      'k6_http_req_duration_seconds{testid="native-run"}[1h]',
    );
    const seconds = secondsSent(summary);
    expect(seconds.length).toBeGreaterThanOrEqual(3);
    expect(series.map((s) => s.metric.sec).sort((a, b) => Number(a) - Number(b))).toEqual(seconds);
    let lastS = 0;
    for (const s of series) {
      const [timestampS, histogram] = s.histograms?.at(-1) ?? [0, { count: "0" }];
      expect(Number(histogram.count)).toBe(value(summary, `http_req_duration{sec:${s.metric.sec}}`, "count"));
      lastS = Math.max(lastS, timestampS);
    }
    // At the last sample, before the stale markers: the seconds' histograms add up to the run's.
    const at = async (expr: string) => (await nativePrometheus.query(expr, lastS))[0]?.value as number;
    expect(await at('histogram_count(sum(k6_http_req_duration_seconds{testid="native-run"}))')).toBe(
      requests,
    );
    // Within a bucket (×1.09) either side of k6's exact median.
    const median = await at(
      'histogram_quantile(0.5, sum(k6_http_req_duration_seconds{testid="native-run"}))',
    );
    expect(near(median * 1_000, value(summary, "http_req_duration", "med"), 0.19)).toBe(true);
  });

  test("native histograms into a Prometheus without the feature: the result stands, attack exits 1 quoting k6", async () => {
    const run = await attack("no-native", [
      "--duration",
      "1s",
      "--prometheus-rw",
      `${prometheus.url}/api/v1/write`,
      "--prometheus-trends",
      "native-histogram",
    ]);
    expect(run.code).toBe(1);
    expect(run.result?.requests).toBe(run.served);
    expect(run.stderr).toContain("k6's metrics did not all reach");
    expect(run.stderr).toContain("got status code: 500");
  });

  test("attack exits 2 before any run when the endpoint refuses an empty write", async () => {
    const before = served;
    const wrongPath = await attack("wrong-path", ["--prometheus-rw", `${prometheus.url}/api/v1/writ`]);
    expect(wrongPath.code).toBe(2);
    expect(wrongPath.stderr).toContain("answered an empty remote write with HTTP 404");
    const nobody = await attack("nobody", ["--prometheus-rw", "http://127.0.0.1:1/api/v1/write"]);
    expect(nobody.code).toBe(2);
    expect(nobody.stderr).toContain("no answer to an empty remote write");
    expect(served).toBe(before);
  });
});
