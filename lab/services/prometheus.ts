/**
 * Prometheus, as the lab talks to it: instant queries over the HTTP API (a user's server, or one the tests
 * start), and `startPrometheus`, a throwaway Debian `prometheus` on a free port with its own data directory,
 * scraping what it is told every second (the tests' real Prometheus; docs/metrics.md).
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { findBinary } from "../shared/binaries.ts";
import { freePort } from "../shared/ports.ts";
import { stopGroup } from "../shared/process.ts";

/** One series of an instant vector: its labels and its value (NaN and ±Inf kept as Prometheus writes them). */
export interface PromSample {
  metric: Record<string, string>;
  value: number;
  timestampS: number;
}

/** Runs a PromQL instant query (at `timeS`, else now); a failed query or a non-vector result throws with Prometheus's own error. */
export async function promQuery(baseUrl: string, expr: string, timeS?: number): Promise<PromSample[]> {
  const params = new URLSearchParams({ query: expr });
  if (timeS !== undefined) params.set("time", String(timeS));
  const response = await fetch(`${baseUrl}/api/v1/query?${params}`, { signal: AbortSignal.timeout(10_000) });
  const body = (await response.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] };
  };
  if (body.status !== "success" || body.data === undefined) {
    throw new Error(`Prometheus at ${baseUrl} refused ${expr}: ${body.error ?? response.status}`);
  }
  if (body.data.resultType !== "vector") {
    throw new Error(`${expr} is a ${body.data.resultType}, not an instant vector`);
  }
  return body.data.result.map(({ metric, value: [timestampS, text] }) => ({
    metric,
    value: Number(text),
    timestampS,
  }));
}

export interface TestPrometheus {
  url: string;
  /** Where file_sd targets files may be written: the config watches `targets/*.json` in it. */
  targetsDir: string;
  query(expr: string, timeS?: number): Promise<PromSample[]>;
  /** Static targets (host:port) added to the `cachelab` job by rewriting its targets file. */
  scrape(targets: string[], labels?: Record<string, string>): void;
  stop(): Promise<void>;
}

/** What a test Prometheus runs with beside its defaults. */
export interface TestPrometheusOptions {
  /** `--enable-feature=native-histograms` (2.40+): ingest native histograms, as k6 sends its trends with K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM. */
  nativeHistograms?: boolean;
}

/**
 * Starts Debian's `prometheus` on a free loopback port: scrapes every second the targets of file_sd files
 * in `targetsDir` (job `cachelab`), with the remote-write receiver on (k6's output writes to `/api/v1/write`).
 * Throws when the binary is missing: in CI a missing tool is a failure, not a skip.
 */
export async function startPrometheus(options: TestPrometheusOptions = {}): Promise<TestPrometheus> {
  const binary = findBinary("prometheus", ["/usr/bin"]);
  if (binary === null)
    throw new Error("prometheus not found: bash scripts/install-deps.sh installs Debian's");
  const dir = mkdtempSync(join(tmpdir(), "cachelab-prometheus-"));
  const targetsDir = join(dir, "targets");
  const port = await freePort();
  // JSON is YAML: the config needs no YAML writer.
  const config = {
    global: { scrape_interval: "1s", scrape_timeout: "900ms", evaluation_interval: "1s" },
    scrape_configs: [
      {
        job_name: "cachelab",
        file_sd_configs: [{ files: [join(targetsDir, "*.json")], refresh_interval: "1s" }],
      },
    ],
  };
  writeFileSync(join(dir, "prometheus.yml"), JSON.stringify(config));
  mkdirSync(targetsDir);
  const proc: Subprocess = Bun.spawn(
    [
      binary,
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--web.enable-remote-write-receiver",
      "--storage.tsdb.retention.time=1h",
      ...(options.nativeHistograms ? ["--enable-feature=native-histograms"] : []),
    ],
    { stdout: "ignore", stderr: Bun.file(join(dir, "prometheus.log")), detached: true },
  );
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopGroup(proc, 5_000);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = performance.now() + 30_000;
  for (;;) {
    const ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1_000) }).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) break;
    if (proc.exitCode !== null || performance.now() > deadline) {
      const log = await Bun.file(join(dir, "prometheus.log")).text();
      await stop();
      throw new Error(`prometheus did not become ready on ${url}:\n${log.slice(-2_000)}`);
    }
    await Bun.sleep(100);
  }
  return {
    url,
    targetsDir,
    query: (expr, timeS) => promQuery(url, expr, timeS),
    scrape(targets, labels = {}) {
      const file = join(targetsDir, "static.json");
      writeFileSync(`${file}.tmp`, JSON.stringify([{ targets, labels }]));
      renameSync(`${file}.tmp`, file); // whole or not at all: Prometheus may read it any time
    },
    stop,
  };
}
