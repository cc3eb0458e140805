/**
 * k6's own metrics into a Prometheus as a run goes: k6's built-in `experimental-prometheus-rw` output, set up
 * by its environment variables (FACTS §15, docs/metrics.md#k6-into-prometheus). Only the measured run writes:
 * the warm-up is thrown away, so Prometheus' totals are the lab's. The output is one more sink of the same
 * samples: the script, its thresholds and the summary the lab parses do not change.
 *
 * Trends (http_req_duration, …) become gauges of `K6_PROMETHEUS_RW_TREND_STATS`, whose default is p(99)
 * alone, hence the lab sets p50, p95, p99 and max; or native histograms, which Prometheus only ingests with
 * `--enable-feature=native-histograms` (without it 2.42 answers the whole write with 500, counters included).
 * Every series also carries the script's `sec` tag (k6_script.ts), so each holds one second of the run.
 */

/** How k6 writes its trends: `stats` as gauges (Grafana dashboard 19665), or native histograms (18030). */
export const PROMETHEUS_TRENDS = ["stats", "native-histogram"] as const;
export type PrometheusTrends = (typeof PROMETHEUS_TRENDS)[number];

/** The stats of each trend in `stats` mode: k6's own default would keep p(99) alone. */
export const PROMETHEUS_TREND_STATS = ["p(50)", "p(95)", "p(99)", "max"];

/** Where k6 sends its metrics, how, and the `testid` tag that names the run (the dashboards' filter). */
export interface PrometheusRw {
  /** The remote-write endpoint, e.g. http://HOST:9090/api/v1/write. */
  url: string;
  trends: PrometheusTrends;
  testId: string;
}

/** k6's argv additions and environment for the output; a testid k6's `--tag` would misread throws. */
export function prometheusRwRun(rw: PrometheusRw): { args: string[]; env: Record<string, string> } {
  if (!/^[\w.-]+$/.test(rw.testId)) {
    throw new RangeError(
      `Cannot tag k6's metrics: a testid is letters, digits, _ . -: received ${rw.testId}`,
    );
  }
  const native = rw.trends === "native-histogram";
  return {
    args: ["--out", "experimental-prometheus-rw", "--tag", `testid=${rw.testId}`],
    // Every setting explicit, so a K6_PROMETHEUS_RW_* left in the user's environment cannot switch the mode.
    env: {
      K6_PROMETHEUS_RW_SERVER_URL: rw.url,
      K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM: String(native),
      ...(native ? {} : { K6_PROMETHEUS_RW_TREND_STATS: PROMETHEUS_TREND_STATS.join(",") }),
      // The run's series end with it instead of lingering 5 minutes (Prometheus' lookback) after it.
      K6_PROMETHEUS_RW_STALE_MARKERS: "true",
    },
  };
}

/**
 * Why `url` would not take k6's writes, or null when it accepts an empty one: a snappy-compressed empty
 * WriteRequest (one zero byte) writes nothing, and Prometheus answers 204, or 404 with the receiver off.
 */
export async function remoteWriteRefusal(url: string, timeoutMs = 5_000): Promise<string | null> {
  try {
    const response = await fetch(url, {
      method: "POST",
      body: new Uint8Array([0]),
      headers: {
        "content-type": "application/x-protobuf",
        "content-encoding": "snappy",
        "x-prometheus-remote-write-version": "0.1.0",
      },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (response.ok) return null;
    const body = (await response.text()).trim().slice(0, 300);
    return `it answered an empty remote write with HTTP ${response.status}${body ? `: ${body}` : ""}`;
  } catch (error) {
    return `no answer to an empty remote write: ${(error as Error).message}`;
  }
}

/** What k6 logged about writes that failed (k6 still exits 0 then): one line per complaint, its error. */
export function remoteWriteProblems(stderr: string): string[] {
  return stderr
    .split("\n")
    .filter(
      (line) =>
        /level=(error|warning)/.test(line) &&
        (line.includes('output="Prometheus remote write"') || line.includes("marking time series as stale")),
    )
    .map((line) => /error="((?:[^"\\]|\\.)*)"/.exec(line)?.[1]?.replaceAll('\\"', '"') ?? line);
}
