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
 *
 * Timeline: `--db-url oha.db` makes oha store one row per answered request (any status) after the run;
 * `oha_runner.ts` runs oha, dumps those rows to oha-requests.csv and records the absolute instant their
 * relative times count from (oha-start.json; see the runner for the schema and why not the spawn time). A
 * request belongs to the second of the instant its latency counts from: the scheduled tick under
 * `--latency-correction` (`start_latency_correction`), else its start. Transport errors are not in the db,
 * so `sent` counts answered requests and `errors` is null. Storing and dumping cost time after the run, not
 * during it (measured: 0.35 s of wall time for 105 000 rows; 5 MB of db and 3 MB of text in the run
 * directory), and the tool's CPU seconds include them.
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import type {
  AttackPlan,
  HttpMethod,
  LatencyMs,
  NormalizedResult,
  Target,
  Timeline,
} from "../../plan/attack_plan.ts";
import { nearestRank, TimelineBuilder } from "../request_timeline.ts";
import type { Capabilities, Detection, PreparedRun, RawOutput, RunContext, Tool } from "../tool.ts";
import { detectByVersionFlag } from "./_detect.ts";
import { type OutputReader, okCount, outputReader, sum } from "./_parse.ts";
import { OHA_DB, OHA_OUTPUT, OHA_REQUESTS, OHA_REQUESTS_HEADER, OHA_START } from "./oha_runner.ts";

const INSTALL = "cargo install oha --version 1.15.0 --locked";
const OUTPUT = OHA_OUTPUT;
const RUNNER = resolve(import.meta.dir, "oha_runner.ts");
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
  timeline: true,
  notes:
    "URLs sampled uniformly at random from the target list (skew from repeated lines); one method and one " +
    "constant body per run; latency over responses only (any status), exact nearest-rank percentiles; " +
    "-w: no deadline aborts; ticks left unsent at the deadline are not reported; timeline from --db-url: " +
    "answered requests only (errors per second null), by scheduled tick under --latency-correction.",
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
      process.execPath,
      RUNNER,
      context.binary,
      "--no-tui",
      "--output-format",
      "json",
      "-o",
      OUTPUT,
      "--db-url",
      OHA_DB,
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
    outputs: [OUTPUT, OHA_REQUESTS, OHA_START],
  };
}

/** How far the start mark may sit outside oha's own `run` second: the watch's delay, with room. */
const RUN_SECOND_SLACK_MS = 100;

/** oha-requests.csv and oha-start.json → the timeline of the answered requests; rows must equal `completed`. */
/** oha's per-request rows: the run's timeline, and the 2xx responses' p50 and p99. */
function ohaTimeline(
  read: OutputReader,
  completed: number,
): { timeline: Timeline; okLatencyMs: { p50: number | null; p99: number | null } } {
  const start = read.record(read.json(read.file(OHA_START), OHA_START), OHA_START);
  const startedAtMs = read.numberOrNull(start.startedAtMs, `${OHA_START} startedAtMs`, { unit: "ms" });
  if (startedAtMs === null) throw read.failure(`${OHA_START} has no startedAtMs`);
  const run = start.run === null ? null : read.count(start.run, `${OHA_START} run`);
  // oha's own (truncated) start second must hold the mark, or the mark is something else.
  if (
    run !== null &&
    !(
      startedAtMs >= run * 1_000 - RUN_SECOND_SLACK_MS &&
      startedAtMs < (run + 1) * 1_000 + RUN_SECOND_SLACK_MS
    )
  ) {
    throw read.failure(
      `${OHA_START} startedAtMs ${startedAtMs} is not in oha's own start second (run ${run})`,
    );
  }
  const lines = read.file(OHA_REQUESTS).split("\n");
  if (lines[0] !== OHA_REQUESTS_HEADER) {
    throw read.failure(`${OHA_REQUESTS} does not start with ${OHA_REQUESTS_HEADER}: received ${lines[0]}`);
  }
  const builder = new TimelineBuilder();
  const okLatencies: number[] = [];
  let rows = 0;
  let corrected = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === "") continue;
    const [startS, scheduledS, durationS, status] = line
      .split(",")
      .map((field) => (field === "" ? null : Number(field)));
    if (
      !Number.isFinite(startS) ||
      (scheduledS !== null && !Number.isFinite(scheduledS)) ||
      !Number.isFinite(durationS) ||
      !Number.isInteger(status)
    ) {
      throw read.failure(
        `${OHA_REQUESTS} line ${i + 1} is not start,scheduled,duration,status: received ${line}`,
      );
    }
    corrected ||= scheduledS !== null;
    const ok = (status as number) >= 200 && (status as number) < 300;
    if (ok) okLatencies.push((durationS as number) * 1_000);
    builder.add({
      startMs: startedAtMs + ((scheduledS ?? startS) as number) * 1_000,
      latencyMs: (durationS as number) * 1_000,
      ok,
      error: !ok,
    });
    rows++;
  }
  if (rows !== completed) {
    throw read.failure(`${OHA_REQUESTS} holds ${rows} requests but ${OUTPUT} counts ${completed} responses`);
  }
  okLatencies.sort((a, b) => a - b);
  const timeline = builder.build({
    source:
      "oha --db-url (answered requests only: transport errors are not stored, so errors are null; " +
      (corrected ? "by scheduled tick, as --latency-correction times them" : "by request start") +
      "; epoch from the creation of oha's -o file, just before its start)",
    errors: false,
  });
  // The answered requests alone (2xx), nearest rank: with load shedding, fast 503s pull p99 down.
  return { timeline, okLatencyMs: { p50: nearestRank(okLatencies, 50), p99: nearestRank(okLatencies, 99) } };
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
    ...ohaTimeline(read, completed),
  };
}

export const tool: Tool = { name: "oha", capabilities, detect, refusal, prepare, parse };
