/**
 * k6 into Prometheus, without a network: the settings the lab gives k6's remote-write output, the CLI's
 * refusals, k6's captured logs and the docs (the real runs: k6_prometheus_test.ts).
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { UsageError } from "../../cli/args.ts";
import { planFromArgs } from "../../cli/attack_args.ts";
import { generateTargets } from "../../plan/targets.ts";
import { REPO_ROOT } from "../../shared/repo.ts";
import { tool } from "./k6.ts";
import {
  PROMETHEUS_TREND_STATS,
  PROMETHEUS_TRENDS,
  prometheusRwRun,
  remoteWriteProblems,
} from "./k6_prometheus.ts";
import { detailPlan, testdata } from "./tool_testing.ts";

const URL_FLAGS = ["--url", "http://127.0.0.1:1/products/{id}"];

describe("k6 prometheus-rw settings", () => {
  test("prometheusRwRun keeps p50, p95, p99 and max, ends the series, and tags the run", () => {
    const stats = prometheusRwRun({ url: "http://p:9090/api/v1/write", trends: "stats", testId: "attack-1" });
    expect(stats).toEqual({
      args: ["--out", "experimental-prometheus-rw", "--tag", "testid=attack-1"],
      env: {
        K6_PROMETHEUS_RW_SERVER_URL: "http://p:9090/api/v1/write",
        K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM: "false",
        K6_PROMETHEUS_RW_TREND_STATS: "p(50),p(95),p(99),max",
        K6_PROMETHEUS_RW_STALE_MARKERS: "true",
      },
    });
    const native = prometheusRwRun({ url: "http://p/w", trends: "native-histogram", testId: "x" });
    expect(native.env).toEqual({
      K6_PROMETHEUS_RW_SERVER_URL: "http://p/w",
      K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM: "true",
      K6_PROMETHEUS_RW_STALE_MARKERS: "true",
    });
    expect(() => prometheusRwRun({ url: "http://p/w", trends: "stats", testId: "a,b" })).toThrow(RangeError);
  });

  test("k6 prepare with the output adds its flags and env to the same script, files and outputs", () => {
    const plan = detailPlan("k6-prw", { kind: "open", rateRps: 50 });
    const targets = generateTargets(plan);
    const context = { plan, durationS: 2, toolVersion: "1.8.1", workDir: "/tmp/x", binary: "/bin/k6" };
    const plain = tool.prepare(targets, context);
    const rw = { url: "http://p:9090/api/v1/write", trends: "stats", testId: "t" } as const;
    const sending = tool.prepare(targets, { ...context, prometheusRw: rw });
    const { args, env } = prometheusRwRun(rw);
    expect(sending.argv).toEqual([...plain.argv.slice(0, -1), ...args, "script.js"]);
    expect(sending.env).toEqual(env);
    expect(plain.env).toBeUndefined();
    expect(sending.files).toEqual(plain.files);
    expect(sending.outputs).toEqual(plain.outputs);
  });

  test("remoteWriteProblems quotes k6's failed writes from its captured log, and nothing else", () => {
    expect(remoteWriteProblems(testdata("k6-1.8.1-prometheus-rw-refused.stderr.txt"))).toEqual([
      'HTTP POST request failed: Post "http://127.0.0.1:1/api/v1/write": dial tcp 127.0.0.1:1: connect: connection refused',
      'marking time series as stale failed: HTTP POST request failed: Post "http://127.0.0.1:1/api/v1/write": dial tcp 127.0.0.1:1: connect: connection refused',
    ]);
    expect(remoteWriteProblems(testdata("k6-1.8.1-prometheus-rw-no-native.stderr.txt"))).toEqual([
      "got status code: 500 instead expected a 2xx successful status code",
      "marking time series as stale failed: got status code: 500 instead expected a 2xx successful status code",
    ]);
    expect(remoteWriteProblems("")).toEqual([]);
  });

  test("attack --prometheus-rw picks k6, and refuses another tool, a bare host, an unknown mode", () => {
    const url = ["--prometheus-rw", "http://127.0.0.1:9090/api/v1/write"];
    expect(planFromArgs([...URL_FLAGS, ...url])).toMatchObject({
      tool: "k6",
      prometheusRw: { url: "http://127.0.0.1:9090/api/v1/write", trends: "stats" },
    });
    expect(
      planFromArgs([...URL_FLAGS, ...url, "--prometheus-trends", "native-histogram"]).prometheusRw,
    ).toEqual({
      url: "http://127.0.0.1:9090/api/v1/write",
      trends: "native-histogram",
    });
    expect(planFromArgs(URL_FLAGS).prometheusRw).toBeNull();
    const refusals: [string[], string][] = [
      [[...url, "--tool", "oha"], "Cannot use --prometheus-rw with --tool oha"],
      [["--prometheus-rw", "http://127.0.0.1:9090"], "Cannot parse --prometheus-rw"],
      [["--prometheus-rw", "127.0.0.1:9090/api/v1/write"], "Cannot parse --prometheus-rw"],
      [[...url, "--prometheus-trends", "p99"], "expected stats or native-histogram: received p99"],
      [["--prometheus-trends", "stats"], "Cannot use --prometheus-trends without --prometheus-rw"],
      [[...url, "--export", "k6-operator"], "Cannot use --prometheus-rw with --export or --import"],
    ];
    for (const [flags, message] of refusals) {
      expect(() => planFromArgs([...URL_FLAGS, ...flags])).toThrow(UsageError);
      expect(() => planFromArgs([...URL_FLAGS, ...flags])).toThrow(message);
    }
  });

  test("docs/metrics.md gives every setting the lab sets and both dashboards", () => {
    const docs = readFileSync(join(REPO_ROOT, "docs", "metrics.md"), "utf8");
    const section = docs.slice(docs.indexOf("## k6 into Prometheus")).split(/\n## /)[0] as string;
    for (const trends of PROMETHEUS_TRENDS) {
      const { env } = prometheusRwRun({ url: "http://p/w", trends, testId: "t" });
      for (const [name, value] of Object.entries(env)) {
        expect(section).toContain(`\`${name}\``);
        if (name !== "K6_PROMETHEUS_RW_SERVER_URL") expect(section).toContain(`\`${value}\``);
      }
      expect(section).toContain(`--prometheus-trends ${trends}`);
    }
    expect(section).toContain(PROMETHEUS_TREND_STATS.join(","));
    expect(section).toContain("19665");
    expect(section).toContain("18030");
  });
});
