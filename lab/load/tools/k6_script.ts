/**
 * The k6 script cachelab generates: one scenario named `main` per run (constant-arrival-rate,
 * ramping-arrival-rate or constant-vus), iteration n sending target n (of the targets file, wrapping; an export
 * generates the plan's stream in the script instead: lab/load/k6_stream.ts), counting thresholds that make k6
 * keep status and error-code sub-metrics, per-second sub-metrics for the timeline, and a JSON summary
 * (lab/load/tools/k6.ts runs and parses it).
 *
 * Timeline: `setup()` fixes the epoch second the run starts in (`startS`, returned to every iteration and
 * kept by k6 as the summary's `setup_data`); each request is tagged `sec` = its start's epoch second −
 * startS. A threshold per second on `http_reqs{sec:N}`, `http_reqs{sec:N,expected_response:true}` and
 * `http_req_duration{sec:N}` makes k6's own summary hold each second's count, 2xx count (the response
 * callback makes exactly 2xx "expected") and duration stats: nothing per request leaves k6. (`--out csv`
 * would write 13 rows per request, stamped with the request's end.) Measured at 2 000 rps for 5 s against
 * the lab's server: k6 CPU per request 193–198 µs with these sub-metrics, 192–211 µs without, 203–222 µs
 * with `--out csv=….gz`. k6 checks each sample against every sub-metric of its metric, so the cost grows
 * with the run: 3 × (seconds + 2) more checks per request (two sets on http_reqs, one on
 * http_req_duration); from the ~30 µs per 500 status sub-metrics measured above, a 30 s run adds ~6 µs
 * per request, a 10-minute run ~110.
 */
import type { AttackPlan, LoadModel } from "../../plan/attack_plan.ts";

export const SCRIPT_FILE = "script.js";
export const TARGETS_FILE = "targets.json";
export const SUMMARY_FILE = "summary.json";
export const TREND_STATS = ["min", "avg", "med", "p(90)", "p(95)", "p(99)", "p(99.9)", "max", "count"];

/**
 * k6 `error_code` → its message, from k6 v1.8.1 `lib/netext/httpext/error_codes.go`; the TLS (13xx) and
 * HTTP/2 (16xx) codes are left out, since the lab speaks plain HTTP/1.1, and would count as "other".
 */
export const ERROR_MESSAGES: Record<number, string> = {
  1000: "generic error",
  1010: "non-TCP network error",
  1020: "invalid URL",
  1050: "request timeout",
  1100: "generic DNS error",
  1101: "lookup: no such host",
  1110: "ip is blacklisted",
  1111: "hostname is blocked",
  1200: "generic TCP error",
  1201: "broken pipe",
  1202: "unknown errno",
  1210: "dial error",
  1211: "dial: i/o timeout",
  1212: "dial: connection refused",
  1213: "dial: unknown errno",
  1220: "connection reset by peer",
  1701: "response decompression error",
};
/**
 * The statuses counted one by one: the IANA-registered codes (plus 418). Each is a threshold-made
 * sub-metric `http_reqs{status:N}`, and k6 checks every request against every sub-metric: all 500 codes
 * of 100–599 cost ~30 µs of k6 CPU per request (measured), this list almost nothing. Any other status
 * lands in `statusCounts.other`.
 */
export const COUNTED_STATUSES = [
  100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 307,
  308, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 421,
  422, 423, 424, 425, 426, 428, 429, 431, 451, 500, 501, 502, 503, 504, 505, 506, 507, 508, 510, 511,
];
/** Transport errors have status 0; each code in ERROR_MESSAGES gets its own `http_reqs{error_code:N}`. */
export const COUNTED_ERROR_CODES = Object.keys(ERROR_MESSAGES).map(Number);

export function durationMs(seconds: number): string {
  return `${Math.round(seconds * 1_000)}ms`;
}

export type Scenario =
  | { executor: "constant-arrival-rate"; rate: number; duration: string }
  | { executor: "ramping-arrival-rate"; startRate: number; stages: { target: number; duration: string }[] }
  | { executor: "constant-vus"; vus: number; duration: string };

/** The scenario a run of `durationS` executes, and the arrival rate it offers (null for closed). */
export function scenarioFor(
  plan: AttackPlan,
  durationS: number,
): { scenario: Scenario; offeredRps: number | null } {
  const model = plan.model;
  if (model.kind === "closed") {
    return {
      scenario: { executor: "constant-vus", vus: model.connections, duration: durationMs(durationS) },
      offeredRps: null,
    };
  }
  if (model.kind === "open") {
    return {
      scenario: { executor: "constant-arrival-rate", rate: model.rateRps, duration: durationMs(durationS) },
      offeredRps: model.rateRps,
    };
  }
  if (durationS !== plan.durationS) {
    // The warm-up is shorter (or longer) than the stages: hold the start rate instead of squeezing them.
    const rate = warmupRate(model);
    return {
      scenario: { executor: "constant-arrival-rate", rate, duration: durationMs(durationS) },
      offeredRps: rate,
    };
  }
  return {
    scenario: {
      executor: "ramping-arrival-rate",
      startRate: model.startRps,
      stages: model.stages.map((stage) => ({
        target: stage.targetRps,
        duration: durationMs(stage.durationS),
      })),
    },
    offeredRps: meanRampingRate(model),
  };
}

/** The ramping warm-up rate: the start rate, or the first stage's target when the ramp starts at 0. */
export function warmupRate(model: Extract<LoadModel, { kind: "ramping" }>): number {
  return model.startRps > 0 ? model.startRps : (model.stages[0]?.targetRps ?? 0);
}

/** Each stage ramps linearly from the previous rate to its target: the mean is the area over the time. */
export function meanRampingRate(model: Extract<LoadModel, { kind: "ramping" }>): number {
  let from = model.startRps;
  let requests = 0;
  let seconds = 0;
  for (const stage of model.stages) {
    requests += ((from + stage.targetRps) / 2) * stage.durationS;
    seconds += stage.durationS;
    from = stage.targetRps;
  }
  return requests / seconds;
}

/** Where the script finds iteration n's target: what its first line says, and init code defining `targetAt`. */
export interface TargetSource {
  says: string;
  init: string;
}

/** The targets file, replayed in order from its start, wrapping at its end. */
export const REPLAY_SOURCE: TargetSource = {
  says: `replays ${TARGETS_FILE} in order`,
  init: `import { SharedArray } from "k6/data";

const targets = new SharedArray("targets", () => JSON.parse(open("./${TARGETS_FILE}")));
export function targetAt(position) {
  return targets[position % targets.length];
}`,
};

/** The generated script: one request per iteration, its target from `source` (default: the targets file), JSON summary. */
export function script(
  options: object,
  params: { headers: Record<string, string>; timeoutMs: number },
  source: TargetSource = REPLAY_SOURCE,
): string {
  return `// Generated by cachelab lab/load/tools/k6_script.ts: ${source.says}, one request per iteration.
import http from "k6/http";
import exec from "k6/execution";

${source.init}
const headers = ${JSON.stringify(params.headers)};
const jsonHeaders = Object.assign({ "content-type": "application/json" }, headers);
const timeout = "${params.timeoutMs}ms";

// expected_response:true then means exactly 2xx (k6's default is 200-399): the timeline's ok.
http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }));

export const options = ${JSON.stringify(options, null, 2)};

// The epoch second the run starts in; the summary keeps it as setup_data.
export function setup() {
  return { startS: Math.floor(Date.now() / 1000) };
}

export default function (data) {
  // Counted only when an iteration starts (a dropped one takes no number), so targets 0..n-1 are sent.
  const target = targetAt(exec.scenario.iterationInTest);
  http.request(target.method, target.url, target.body, {
    headers: target.body === null ? headers : jsonHeaders,
    timeout,
    tags: { name: target.template, ${SECOND_TAG}: String(Math.floor(Date.now() / 1000) - data.startS) },
  });
}

export function handleSummary(data) {
  return { "${SUMMARY_FILE}": JSON.stringify(data, null, 1) };
}
`;
}

/** A threshold on a sub-metric makes k6 track it and report it, with count 0 when nothing matched. */
export function countingThresholds(): Record<string, string[]> {
  const thresholds: Record<string, string[]> = { "http_reqs{status:0}": ["count>=0"] };
  for (const status of COUNTED_STATUSES) thresholds[`http_reqs{status:${status}}`] = ["count>=0"];
  for (const code of COUNTED_ERROR_CODES) thresholds[`http_reqs{error_code:${code}}`] = ["count>=0"];
  return thresholds;
}

/** The tag holding a request's start second, relative to setup_data.startS. */
export const SECOND_TAG = "sec";

/**
 * How many seconds (0..n−1 after startS) get their own sub-metrics: iterations start only within the
 * scenario's duration, which begins after setup() inside second 0 or, rarely, the next one.
 */
export function timelineSeconds(durationS: number): number {
  return Math.ceil(durationS) + 2;
}

/** The per-second sub-metrics of the timeline, each kept by a threshold that always passes. */
export function timelineMetrics(second: number): { sent: string; ok: string; duration: string } {
  return {
    sent: `http_reqs{${SECOND_TAG}:${second}}`,
    ok: `http_reqs{${SECOND_TAG}:${second},expected_response:true}`,
    duration: `http_req_duration{${SECOND_TAG}:${second}}`,
  };
}

export function timelineThresholds(durationS: number): Record<string, string[]> {
  const thresholds: Record<string, string[]> = {};
  for (let second = 0; second < timelineSeconds(durationS); second++) {
    const metrics = timelineMetrics(second);
    thresholds[metrics.sent] = ["count>=0"];
    thresholds[metrics.ok] = ["count>=0"];
    // Trends take no count threshold; every duration is ≥ 0.
    thresholds[metrics.duration] = ["max>=0"];
  }
  return thresholds;
}

/** The script's `options`: one scenario named `main`, counting and timeline thresholds, trend stats. */
export function k6Options(plan: AttackPlan, durationS: number): Record<string, unknown> {
  const { scenario } = scenarioFor(plan, durationS);
  // Every VU up front: a VU started mid-run costs time exactly when the server is slow, and k6 drops the
  // iterations that find no free VU (observed). An idle VU costs ~0.1 MB and ~1 ms of CPU to start.
  const arrival =
    plan.model.kind === "closed"
      ? {}
      : { timeUnit: "1s", preAllocatedVUs: plan.maxConnections, maxVUs: plan.maxConnections };
  return {
    scenarios: {
      main: {
        ...scenario,
        ...arrival,
        // In-flight requests end by their timeout, so they finish (and are counted) instead of being cut.
        gracefulStop: durationMs(plan.timeoutS + 1),
      },
    },
    thresholds: { ...countingThresholds(), ...timelineThresholds(durationS) },
    summaryTrendStats: TREND_STATS,
    discardResponseBodies: true,
    // One target, one request: k6 follows 10 redirects by default, each its own http_reqs sample.
    maxRedirects: 0,
    // No `url` or `error` tags: one time series per template, not per distinct URL or message.
    systemTags: [
      "proto",
      "status",
      "method",
      "name",
      "group",
      "check",
      "error_code",
      "scenario",
      "expected_response",
    ],
  };
}
