/**
 * oha 1.15.0 (hatoo/oha): open model (`-q N --latency-correction`, `-c` = plan.maxConnections so it can
 * hold the rate) and closed model (`-c N`), one method and one body per run.
 *
 * Targets: the pre-generated list goes to `--urls-from-file`, one URL a line; oha picks a line uniformly
 * at random per request, so the plan's key skew comes from repeated lines. The order of the list is lost,
 * which is why oha refuses plans that mix methods or whose body varies per target (`-Z` would draw bodies
 * independently of the URL). A single constant body is sent faithfully with `-D body.txt`.
 *
 * Flags: `-t` always (oha has no request timeout by default); `-r 0` (never follow redirects, stated
 * rather than left to the version's default); `-w` waits for in-flight requests at the deadline. Without
 * `-w`, oha 1.15 on HTTP/1 cancels every worker task still alive at the deadline and reports each as
 * "aborted due to deadline": in the closed model these are requests the server received but oha does not
 * count (one per connection); in the open model idle workers count too (observed: 15 aborts in a run where
 * the server saw exactly the 500 completed requests). With `-w` nothing is aborted, every request the server
 * saw is counted, and the run lasts at most `-t` longer (`summary.total` includes that wait). What `-w`
 * cannot show: in the open model, ticks still queued for busy workers at the deadline are never sent and
 * never reported; they show only as achieved < offered.
 *
 * Output: `--no-tui --output-format json -o oha.json`; seconds → ms. oha counts a 5xx as a success, so
 * `ok` is computed from `statusCodeDistribution` (2xx only).
 */
import { homedir } from "node:os";
import { join } from "node:path";
import type { AttackPlan, HttpMethod, LatencyMs, NormalizedResult, Target } from "../../plan/plan.ts";
import { detectByVersionFlag } from "./_detect.ts";
import { okCount, outputReader, sum } from "./_parse.ts";
import type { Capabilities, Detection, PreparedRun, RawOutput, RunContext, Tool } from "./_tool.ts";

const INSTALL = "cargo install oha --version 1.15.0 --locked";
const OUTPUT = "oha.json";
const URLS = "urls.txt";
const BODY = "body.txt";
const DEADLINE_ABORT = "aborted due to deadline";
const PLACEHOLDER = /\{[a-zA-Z_][a-zA-Z0-9_]*\}/;

const capabilities: Capabilities = {
  models: ["open", "closed"],
  mixedMethods: false,
  percentiles: ["min", "mean", "p50", "p90", "p95", "p99", "p99_9", "max"],
  statusCounts: true,
  sends: "sampled",
  latencyResolutionMs: 1e-6, // Rust Durations (ns), printed as float seconds
  notes:
    "URLs sampled uniformly at random from the target list (skew from repeated lines); one method and one " +
    "constant body per run; latency over responses only (any status), exact nearest-rank percentiles; " +
    "-w: no deadline aborts; ticks left unsent at the deadline are not reported.",
};

async function detect(): Promise<Detection> {
  return detectByVersionFlag("oha", {
    extraDirs: [join(homedir(), ".cargo", "bin")],
    flag: "--version",
    version: /^oha (\d+\.\d+\.\d+\S*)/m,
    install: INSTALL,
  });
}

/** The one (method, body) pair every target of the plan shares, or why there is none. */
function singleRequestShape(plan: AttackPlan): { method: HttpMethod; body: string | undefined } | string {
  const methods = [...new Set(plan.requests.map((template) => template.method))];
  if (methods.length !== 1) {
    return (
      `oha sends one method per run (-m) and picks URLs at random, so it cannot replay a mix of ` +
      `${methods.join(", ")}; use vegeta, k6 or wrk`
    );
  }
  const bodies = [...new Set(plan.requests.map((template) => template.body))];
  if (bodies.length !== 1) {
    return "oha sends one body per run (-D), so it cannot replay templates with different bodies; use vegeta, k6 or wrk";
  }
  const body = bodies[0];
  if (body !== undefined && PLACEHOLDER.test(body)) {
    return (
      "oha sends one body per run: -Z draws bodies independently of the URL, so a body that varies per " +
      "target cannot be paired with its URL; use vegeta, k6 or wrk"
    );
  }
  return { method: methods[0] as HttpMethod, body };
}

function refusal(plan: AttackPlan): string | null {
  const model = plan.model;
  if (model.kind === "ramping") {
    return "oha has no ramping model (-q is one fixed rate for the whole run); use k6";
  }
  if (model.kind === "open") {
    if (!(Number.isFinite(model.rateRps) && model.rateRps > 0)) {
      return `oha's -q needs a rate > 0: received ${model.rateRps}`;
    }
    if (!(Number.isInteger(plan.maxConnections) && plan.maxConnections > 0)) {
      return `oha's -c needs a positive integer maxConnections: received ${plan.maxConnections}`;
    }
  }
  if (model.kind === "closed" && !(Number.isInteger(model.connections) && model.connections > 0)) {
    return `oha's -c needs a positive integer connections: received ${model.connections}`;
  }
  if (!(plan.timeoutS > 0))
    return `oha needs a request timeout > 0 (it has none by default): received ${plan.timeoutS}`;
  const shape = singleRequestShape(plan);
  return typeof shape === "string" ? shape : null;
}

function hasHeader(headers: Record<string, string>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

function prepare(targets: Target[], context: RunContext & { workDir: string; binary: string }): PreparedRun {
  const { plan, durationS } = context;
  if (targets.length === 0) throw new RangeError("Cannot prepare oha: no targets: received 0");
  const first = targets[0] as Target;
  for (const target of targets) {
    if (target.method !== first.method || target.body !== first.body) {
      throw new RangeError(
        `Cannot prepare oha: every target must share one method and body: received ${target.method} ${target.url}`,
      );
    }
    if (/[\r\n]/.test(target.url)) {
      throw new RangeError(
        `Cannot prepare oha: a URL must fit on one line: received ${JSON.stringify(target.url)}`,
      );
    }
  }
  const model = plan.model;
  const load =
    model.kind === "open"
      ? ["-q", String(model.rateRps), "--latency-correction", "-c", String(plan.maxConnections)]
      : model.kind === "closed"
        ? ["-c", String(model.connections)]
        : [];
  if (load.length === 0) throw new RangeError(`Cannot prepare oha: ${refusal(plan)}`);
  const headers = Object.entries(plan.headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]);
  const body: string[] = [];
  const files: Record<string, string> = { [URLS]: `${targets.map((target) => target.url).join("\n")}\n` };
  if (first.body !== null) {
    // From a file: as `-d <body>`, a body starting with "-" (a bare JSON number) would parse as a flag.
    body.push("-D", BODY);
    files[BODY] = first.body;
    if (!hasHeader(plan.headers, "content-type")) headers.push("-H", "content-type: application/json");
  }
  return {
    argv: [
      context.binary,
      "--no-tui",
      "--output-format",
      "json",
      "-o",
      OUTPUT,
      "-z",
      `${durationS}s`,
      "-w",
      "-t",
      `${plan.timeoutS}s`,
      "-r",
      "0",
      ...load,
      "-m",
      first.method,
      ...headers,
      ...body,
      "--urls-from-file",
      URLS,
    ],
    files,
    outputs: [OUTPUT],
  };
}

function parse(raw: RawOutput, context: RunContext): NormalizedResult {
  const read = outputReader("oha", raw);
  const text = read.file(OUTPUT);
  if (raw.exitCode !== 0) throw read.failure("oha did not exit with 0");
  const json = read.record(read.json(text, OUTPUT), OUTPUT);
  const summary = read.record(json.summary, "summary");
  const percentiles = read.record(json.latencyPercentiles, "latencyPercentiles");
  const statusCounts = read.counts(json.statusCodeDistribution, "statusCodeDistribution");
  const errors = read.counts(json.errorDistribution, "errorDistribution");
  const aborted = errors[DEADLINE_ABORT] ?? 0;
  const errorCounts = Object.fromEntries(
    Object.entries(errors).filter(([message]) => message !== DEADLINE_ABORT),
  );
  const totalS = summary.total;
  if (typeof totalS !== "number" || !(totalS > 0)) {
    throw read.failure(`summary.total is not a duration in seconds: received ${JSON.stringify(totalS)}`);
  }
  // -z ends sending at the deadline; with -w, summary.total also holds the wait for requests in flight.
  const durationS = Math.min(totalS, context.durationS);
  const completed = sum(Object.values(statusCounts));
  const ok = okCount(statusCounts);
  /** Seconds (or null, which oha prints for an empty statistic) → ms. */
  const ms = (value: unknown, what: string): number | null => {
    const seconds = read.numberOrNull(value, what, { unit: "seconds" });
    return seconds === null ? null : seconds * 1_000;
  };
  const percentile = (key: string) => {
    if (!(key in percentiles)) throw read.failure(`latencyPercentiles.${key} is missing`);
    return ms(percentiles[key], `latencyPercentiles.${key}`);
  };
  const latencyMs: LatencyMs = {
    min: ms(summary.fastest, "summary.fastest"),
    mean: ms(summary.average, "summary.average"),
    p50: percentile("p50"),
    p90: percentile("p90"),
    p95: percentile("p95"),
    p99: percentile("p99"),
    p99_9: percentile("p99.9"),
    max: ms(summary.slowest, "summary.slowest"),
  };
  const model = context.plan.model;
  return {
    tool: "oha",
    toolVersion: context.toolVersion,
    model: model.kind,
    offeredRps: model.kind === "open" ? model.rateRps : null,
    requests: completed + sum(Object.values(errors)),
    completed,
    ok,
    statusCounts,
    errorCounts,
    droppedOrAborted: aborted,
    achievedRps: completed / durationS,
    okRps: ok / durationS,
    latencyMs,
    bytesIn: read.count(summary.totalData, "summary.totalData"),
    durationS,
    drainS: totalS - durationS,
    // oha draws each URL uniformly from the file; which lines it drew is not reported.
    sent: { kind: "sampled", count: completed + sum(Object.values(errors)) },
  };
}

export const tool: Tool = { name: "oha", capabilities, detect, refusal, prepare, parse };
