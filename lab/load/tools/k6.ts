/**
 * k6 (Grafana; AGPL-3.0, so the lab only runs the binary and never imports its packages).
 *
 * A generated script replays the pre-generated targets in order: the iteration numbered
 * `exec.scenario.iterationInTest` sends target `i % n`. A number is taken only when an iteration starts
 * (a dropped one takes none), so the targets sent are exactly 0..http_reqs−1, whatever the VU count.
 * Executors: open → `constant-arrival-rate`; ramping → `ramping-arrival-rate`, except its warm-up run
 * (durationS ≠ plan.durationS), which holds the start rate with `constant-arrival-rate` rather than squeeze
 * the stages; closed → `constant-vus`. An iteration that finds no free VU is not queued: k6 drops it and
 * counts it in `dropped_iterations`, a metric absent when it stayed 0 (pitfall 13).
 *
 * k6 has no status counters (pitfall 13): a `count>=0` threshold per status and per transport `error_code`
 * makes k6 keep the sub-metrics `http_reqs{status:N}` and `http_reqs{error_code:N}`; completed =
 * http_reqs − http_reqs{status:0}. The summary (`handleSummary` → summary.json) always has p(99), p(99.9)
 * and count (pitfall 11). The warm-up is its own k6 process, so global metrics never mix it in (pitfall 14).
 *
 * Latency is k6's http_req_duration over every request, transport errors included (a refused connection
 * counts 0 ms, a timeout ~timeoutS). The duration is `state.testRunDurationMs`: the scenario plus the tail
 * in which the last in-flight requests finish (gracefulStop = timeoutS + 1 s, so none is cut).
 *
 * With `prometheusRw` in the context, k6 also writes its metrics to a Prometheus as it runs (k6_prometheus.ts):
 * one more output of the same samples, so the script, its summary and this parse are unchanged.
 *
 * Timeline: from k6's own summary, one set of sub-metrics per second of the run (see k6_script.ts): each
 * request is counted in the epoch second its iteration started in (setup_data.startS + its `sec` tag), ok =
 * 2xx, errors = the rest (transport errors and non-2xx), p50/p99 = that second's http_req_duration `med`
 * and `p(99)`, which k6 computes exactly but with linear interpolation between ranks, as its global ones.
 *
 *   go install go.k6.io/k6@v1.8.1    # the v2 line (FACTS: 2.2.0) is not on the Go module proxy here
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type {
  AttackPlan,
  LatencyMs,
  NormalizedResult,
  Target,
  Timeline,
  TimelineSecond,
} from "../../plan/attack_plan.ts";
import { findBinary, goBinary, goBinDirs } from "../../shared/binaries.ts";
import type { Capabilities, Detection, PreparedRun, RawOutput, RunContext, Tool } from "../tool.ts";
import { notInstalled } from "./_detect.ts";
import { type OutputReader, okCount, outputReader, sum } from "./_parse.ts";
import { prometheusRwRun } from "./k6_prometheus.ts";
import {
  COUNTED_ERROR_CODES,
  COUNTED_STATUSES,
  ERROR_MESSAGES,
  k6Options,
  SCRIPT_FILE,
  SUMMARY_FILE,
  scenarioFor,
  script,
  TARGETS_FILE,
  TREND_STATS,
  timelineMetrics,
  timelineSeconds,
  warmupRate,
} from "./k6_script.ts";

const PINNED_VERSION = "1.8.1";
const INSTALL = `go install go.k6.io/k6@v${PINNED_VERSION}`;
export const capabilities: Capabilities = {
  models: ["open", "ramping", "closed"],
  mixedMethods: true,
  percentiles: ["min", "mean", "p50", "p90", "p95", "p99", "p99_9", "max"],
  statusCounts: true,
  sends: "prefix",
  latencyResolutionMs: 1e-6, // Go time.Duration (ns), printed as float ms
  timeline: true,
  notes:
    "Targets replayed in order (iteration i sends target i mod n). Latency is http_req_duration " +
    "(sending + waiting + receiving, no connect), over every request including transport errors, exact " +
    "with linear interpolation. Integer rates only. Status counts from http_reqs{status:N} sub-metrics " +
    "for the registered codes (others: statusCounts.other). Timeline from per-second sub-metrics " +
    "(a `sec` tag per request) in k6's own summary; its p50/p99 interpolate, as k6's global ones.",
};

const TIMELINE_SOURCE =
  "k6 summary, per-second sub-metrics http_reqs / http_req_duration{sec:N} (N = seconds after " +
  "setup_data.startS; every request, transport errors included; p50/p99 are k6's med and p(99), " +
  "linearly interpolated, not nearest-rank)";

/**
 * The per-second sub-metrics → timeline, trimmed to the seconds from the first request to the last. Every
 * request must fall in one of them: a count short of http_reqs throws.
 */
function k6Timeline(
  summary: { setup_data?: unknown },
  metrics: Record<string, SummaryMetric>,
  options: { requests: number; ok: number; durationS: number; read: OutputReader },
): Timeline {
  const { read } = options;
  const setup = read.record(summary.setup_data, `${SUMMARY_FILE} setup_data`);
  const startS = read.count(setup.startS, `${SUMMARY_FILE} setup_data.startS`);
  const value = (name: string, stat: string): number => {
    const v = metrics[name]?.values[stat];
    if (typeof v !== "number")
      throw read.failure(`${name} has no ${stat} (timeline thresholds not applied?)`);
    return v;
  };
  const seconds: TimelineSecond[] = [];
  for (let second = 0; second < timelineSeconds(options.durationS); second++) {
    const names = timelineMetrics(second);
    const sent = read.count(value(names.sent, "count"), `${names.sent} count`);
    const ok = read.count(value(names.ok, "count"), `${names.ok} count`);
    const timed = value(names.duration, "count");
    if (timed !== sent || ok > sent) {
      throw read.failure(`second ${second}: ${sent} requests, ${ok} of them 2xx, ${timed} durations`);
    }
    seconds.push({
      epochS: startS + second,
      sent,
      ok,
      errors: sent - ok,
      p50Ms: sent === 0 ? null : value(names.duration, "med"),
      p99Ms: sent === 0 ? null : value(names.duration, "p(99)"),
    });
  }
  const total = sum(seconds.map((second) => second.sent));
  if (total !== options.requests) {
    throw read.failure(
      `the per-second sub-metrics hold ${total} requests but http_reqs ${options.requests}: some started outside seconds 0..${seconds.length - 1}`,
    );
  }
  // expected_response (the response callback) and the status sub-metrics must agree on what a 2xx is.
  const ok = sum(seconds.map((second) => second.ok));
  if (ok !== options.ok) {
    throw read.failure(
      `the per-second sub-metrics hold ${ok} 2xx responses but the status counts ${options.ok}`,
    );
  }
  const first = seconds.findIndex((second) => second.sent > 0);
  const last = seconds.findLastIndex((second) => second.sent > 0);
  return { source: TIMELINE_SOURCE, seconds: first === -1 ? [] : seconds.slice(first, last + 1) };
}

function refusal(plan: AttackPlan): string | null {
  const model = plan.model;
  const rates =
    model.kind === "open"
      ? [model.rateRps]
      : model.kind === "ramping"
        ? [model.startRps, ...model.stages.map((s) => s.targetRps)]
        : [];
  const fractional = rates.find((rate) => !Number.isInteger(rate) || rate < 0);
  if (fractional !== undefined) {
    return `k6 arrival rates are whole iterations per timeUnit: rate ${fractional} rps is not a non-negative integer`;
  }
  if (model.kind === "open" && model.rateRps === 0) return "k6 constant-arrival-rate needs a rate above 0";
  if (model.kind === "ramping") {
    if (model.stages.length === 0) return "k6 ramping-arrival-rate needs at least one stage";
    if (plan.warmupS > 0 && warmupRate(model) === 0) {
      return "the warm-up holds the start rate (or the first stage's target), and both are 0";
    }
  }
  if (model.kind !== "closed" && !(Number.isInteger(plan.maxConnections) && plan.maxConnections >= 1)) {
    return `k6 maxVUs comes from maxConnections, which must be a positive integer: received ${plan.maxConnections}`;
  }
  if (model.kind === "closed" && !(Number.isInteger(model.connections) && model.connections >= 1)) {
    return `k6 constant-vus needs a positive integer of VUs: received ${model.connections}`;
  }
  // k6 rejects constant-* scenarios shorter than 1 s (lib/executor minDuration).
  if (model.kind !== "ramping" && plan.durationS < 1) {
    return `k6 constant-* executors run at least 1 s: durationS ${plan.durationS}`;
  }
  if (plan.warmupS > 0 && plan.warmupS < 1 && plan.warmupS !== plan.durationS) {
    return `k6 constant-* executors run at least 1 s: warmupS ${plan.warmupS}`;
  }
  if (!(plan.timeoutS > 0)) return `k6 needs a request timeout above 0 s: received ${plan.timeoutS}`;
  return null;
}

function prepare(targets: Target[], context: RunContext & { workDir: string; binary: string }): PreparedRun {
  const { plan } = context;
  if (targets.length === 0) throw new RangeError("Cannot prepare k6: no targets");
  const options = k6Options(plan, context.durationS);
  const segment = context.segment;
  const segmentArgs =
    segment === undefined
      ? []
      : [
          "--execution-segment",
          `${segment.index}/${segment.of}:${segment.index + 1}/${segment.of}`,
          // Always the whole sequence (FACTS §7): without it k6 fills the gaps around the segment itself.
          "--execution-segment-sequence",
          Array.from({ length: segment.of + 1 }, (_, i) =>
            i === 0 ? "0" : i === segment.of ? "1" : `${i}/${segment.of}`,
          ).join(","),
          "--out",
          `csv=fileName=${SAMPLES_FILE},timeFormat=unix_milli`,
        ];
  const prometheus = context.prometheusRw === undefined ? null : prometheusRwRun(context.prometheusRw);
  return {
    argv: [
      context.binary,
      "run",
      "--quiet",
      "--no-color",
      "--no-usage-report",
      // An empty address disables the REST API (default localhost:6565), so parallel runs never clash.
      "--address",
      "",
      "--summary-trend-stats",
      TREND_STATS.join(","),
      ...segmentArgs,
      ...(prometheus?.args ?? []),
      SCRIPT_FILE,
    ],
    files: {
      [SCRIPT_FILE]: script(options, { headers: plan.headers, timeoutMs: Math.round(plan.timeoutS * 1_000) }),
      [TARGETS_FILE]: JSON.stringify(targets),
    },
    ...(prometheus ? { env: prometheus.env } : {}),
    outputs: segment === undefined ? [SUMMARY_FILE] : [SUMMARY_FILE, SAMPLES_FILE],
  };
}

/**
 * A segmented run's every sample (`--out csv=fileName=…,timeFormat=unix_milli`: k6 1.8.1's key is
 * `fileName`, `file` is refused), what several k6 processes merge from.
 */
export const SAMPLES_FILE = "samples.csv";

interface SummaryMetric {
  type: string;
  values: Record<string, number>;
}

function parse(raw: RawOutput, context: RunContext): NormalizedResult {
  const read = outputReader("k6", raw, { stderr: "tail" });
  const text = raw.outputs[SUMMARY_FILE];
  if (text === undefined) throw read.failure(`${SUMMARY_FILE} was not written`);
  if (raw.exitCode !== 0) throw read.failure("k6 did not exit with 0");
  const summary = read.json(text, SUMMARY_FILE) as {
    state?: { testRunDurationMs?: unknown };
    metrics?: Record<string, SummaryMetric>;
    setup_data?: unknown;
  };
  const metrics = summary.metrics;
  if (typeof metrics !== "object" || metrics === null) throw read.failure(`${SUMMARY_FILE} has no metrics`);
  const runMs = summary.state?.testRunDurationMs;
  if (typeof runMs !== "number" || !(runMs > 0)) {
    throw read.failure(`${SUMMARY_FILE} has no state.testRunDurationMs: received ${runMs}`);
  }
  const requests = metrics.http_reqs?.values.count;
  if (typeof requests !== "number") throw read.failure(`${SUMMARY_FILE} has no http_reqs (no request sent)`);
  const trend = metrics.http_req_duration?.values;
  if (trend === undefined) throw read.failure(`${SUMMARY_FILE} has no http_req_duration`);
  for (const stat of TREND_STATS) {
    if (typeof trend[stat] !== "number") {
      throw read.failure(`http_req_duration has no ${stat} (summaryTrendStats not applied)`);
    }
  }

  const count = (name: string): number => {
    const value = metrics[name]?.values.count;
    if (typeof value !== "number") throw read.failure(`${name} is missing (thresholds not applied?)`);
    return value;
  };
  const transportErrors = count("http_reqs{status:0}");
  const completed = requests - transportErrors;
  const statusCounts: Record<string, number> = {};
  for (const status of COUNTED_STATUSES) {
    const n = count(`http_reqs{status:${status}}`);
    if (n > 0) statusCounts[status] = n;
  }
  const errorCounts: Record<string, number> = {};
  for (const code of COUNTED_ERROR_CODES) {
    const n = count(`http_reqs{error_code:${code}}`);
    if (n > 0) errorCounts[`${code} ${ERROR_MESSAGES[code]}`] = n;
  }
  const otherStatuses = completed - sum(Object.values(statusCounts));
  if (otherStatuses > 0) statusCounts.other = otherStatuses;
  const otherErrors = transportErrors - sum(Object.values(errorCounts));
  if (otherErrors > 0) errorCounts["other k6 error_code"] = otherErrors;
  if (otherStatuses < 0 || otherErrors < 0) {
    throw read.failure(
      `status sub-metrics exceed http_reqs (${requests}) or its status 0 (${transportErrors})`,
    );
  }
  const ok = okCount(statusCounts);

  const { offeredRps } = scenarioFor(context.plan, context.durationS);
  const arrivalRate = offeredRps !== null;
  // The scenario is the send window; what runs past it is gracefulStop letting the last requests finish.
  const runS = runMs / 1_000;
  const durationS = Math.min(runS, context.durationS);
  const latencyMs: LatencyMs = {
    min: trend.min as number,
    mean: trend.avg as number,
    p50: trend.med as number,
    p90: trend["p(90)"] as number,
    p95: trend["p(95)"] as number,
    p99: trend["p(99)"] as number,
    p99_9: trend["p(99.9)"] as number,
    max: trend.max as number,
  };
  const rampingWarmup = context.plan.model.kind === "ramping" && context.durationS !== context.plan.durationS;
  return {
    tool: "k6",
    toolVersion: context.toolVersion,
    model: rampingWarmup ? "open" : context.plan.model.kind,
    offeredRps,
    requests,
    completed,
    ok,
    statusCounts,
    errorCounts,
    // An arrival-rate run that dropped nothing has no dropped_iterations metric at all (pitfall 13).
    droppedOrAborted: arrivalRate ? (metrics.dropped_iterations?.values.count ?? 0) : null,
    achievedRps: completed / durationS,
    okRps: ok / durationS,
    latencyMs,
    bytesIn: metrics.data_received?.values.count ?? null,
    durationS,
    drainS: Math.max(0, runS - context.durationS),
    // Iteration i sends target i mod n, and a dropped iteration takes no number.
    sent: { kind: "prefix", count: requests },
    timeline: k6Timeline(summary, metrics, { requests, ok, durationS: context.durationS, read }),
  };
}

async function versionOf(binary: string): Promise<string | null> {
  try {
    const proc = Bun.spawn([binary, "version"], { stdout: "pipe", stderr: "pipe" });
    const [stdout] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    return /^k6 v(\S+)/m.exec(stdout)?.[1] ?? null;
  } catch {
    return null;
  }
}

/** Looks on PATH and in the Go install directories; prefers a binary of the pinned version. */
async function detect(): Promise<Detection> {
  const candidates = [findBinary("k6", []), ...goBinDirs(goBinary()).map((dir) => join(dir, "k6"))].filter(
    (path): path is string => path !== null && existsSync(path),
  );
  let found: Detection | null = null;
  for (const path of new Set(candidates)) {
    const version = await versionOf(path);
    if (version === null) continue;
    if (version === PINNED_VERSION) return { installed: true, version, path, install: INSTALL };
    found ??= { installed: true, version, path, install: INSTALL };
  }
  return found ?? notInstalled(INSTALL);
}

export const tool: Tool = { name: "k6", capabilities, detect, refusal, prepare, parse };
