/**
 * vegeta 12.13.0 (tsenart/vegeta): open model (`-rate=N/1s`, integer N, workers unbounded so the pacer
 * never waits for a free worker, connections at most the plan's maxConnections: unbounded, an overloaded server
 * made vegeta open and close a connection per request, 190% CPU mostly in the kernel, until it sent a tenth of the rate)
 * and closed model (`-rate=0 -workers=N -max-workers=N`: exactly N workers,
 * each sending its next request when the last returns). Mixed methods and bodies: every target is one line
 * of a `-format=json` targets file (base64 body, its own headers), replayed round-robin in file order, so the
 * requests sent are exactly a prefix of the pre-generated list (already a seeded shuffle). No ramping.
 *
 * Pipeline (one `bash -c`, every raw file kept in the run directory):
 *   vegeta attack … -output=results.bin            the tool's own per-request results (gob)
 *   vegeta report -type=json -output=report.json   counts, status codes, t-digest percentiles, duration
 *   vegeta encode -to=json results.bin | sed …     per-request JSON lines, bodies and headers dropped
 * (report and encode read results.bin side by side: the cell waits for both).
 * The report has no p99.9 and lists errors without counts (FACTS pitfall 9): both come from the per-request
 * lines. `-max-body=-1` keeps `bytes_in` the full body size (vegeta counts only the bytes it keeps, so
 * `-max-body=0` would zero it); the bodies then live in results.bin on disk, and sed drops them (and the
 * response headers) from the lines the parser reads, so memory holds ~200 bytes per request, not the bodies.
 * `-redirects=-1` returns a 3xx as is, like oha and wrk (vegeta follows 10 by default).
 *
 * Units: ns → ms; the send window is the report's `duration`, the drain after it `wait`. Percentiles p50…p99, min, mean and max are the
 * report's (over all results, transport errors included); p99.9 is the nearest rank over the same results.
 * The timeline comes from the same pass over the lines: each result in the second of its `timestamp` (when
 * a worker took the tick and started the request, absolute), with its latency and code.
 */
import type { AttackPlan, LatencyMs, NormalizedResult, Target, Timeline } from "../../plan/attack_plan.ts";
import { commandOutput, findBinary, goBinary, goBinDirs, goModuleVersion } from "../../shared/binaries.ts";
import { shellQuote } from "../../shared/shell.ts";
import { nearestRank, TimelineBuilder } from "../request_timeline.ts";
import type { Capabilities, Detection, PreparedRun, RawOutput, RunContext, Tool } from "../tool.ts";
import { notInstalled } from "./_detect.ts";
import { type OutputReader, okCount, outputReader } from "./_parse.ts";

const MODULE = "github.com/tsenart/vegeta/v12";
const INSTALL = `go install ${MODULE}@v12.13.0`;
const TARGETS = "targets.jsonl";
const RESULTS = "results.bin";
const REPORT = "report.json";
const LINES = "results.jsonl";
/**
 * Drops each encoded result's body and response headers (results.bin keeps both). "body" (base64 or null)
 * follows "error", whose quotes are escaped, so `,"body":"` can only be that field; "headers" is the last
 * field of every line, so everything from it on goes. Plain patterns in the C locale: the same lines as
 * `sed -E` with alternations in a UTF-8 locale, about ten times faster (1.5 s → 0.12 s for 20 000 results).
 */
export const STRIP_BODIES = `LC_ALL=C sed -e 's#,"body":"[^"]*"##' -e 's#,"body":null##' -e 's#,"headers":.*$#}#'`;
const TIMELINE_SOURCE =
  "vegeta per-request results (`vegeta encode`): each result's timestamp (when a worker took its tick) " +
  "and latency, transport errors included";
/** Go's url.Error prefix, `Get "http://…": `, which makes every URL's copy of one cause a distinct message. */
export const URL_ERROR_PREFIX = /^[A-Za-z]+ "(?:[^"\\]|\\.)*": /;

const capabilities: Capabilities = {
  models: ["open", "closed"],
  mixedMethods: true,
  percentiles: ["min", "mean", "p50", "p90", "p95", "p99", "p99_9", "max"],
  statusCounts: true,
  sends: "prefix",
  latencyResolutionMs: 1e-6, // nanoseconds
  timeline: true,
  notes:
    "targets replayed round-robin in file order; open model with unbounded workers on at most maxConnections " +
    "connections (late ticks are sent " +
    "late, never dropped); percentiles over all results including transport errors, p50-p99 from " +
    "vegeta's t-digest, p99.9 exact from `vegeta encode`; bytesIn counts bodies only; timeline from the " +
    "per-request results (every result, by its timestamp).",
};

async function detect(): Promise<Detection> {
  const go = goBinary();
  const path = findBinary("vegeta", goBinDirs(go));
  if (path === null) return notInstalled(INSTALL);
  // A `go install` build prints nothing for -version; its module version is in the embedded build info.
  const buildInfo = go === null ? null : commandOutput([go, "version", "-m", path]);
  const fromFlag = /^Version:\s*v?(\d+\.\d+\.\d+\S*)/m.exec(commandOutput([path, "-version"]) ?? "");
  const version = goModuleVersion(buildInfo ?? "", MODULE) ?? fromFlag?.[1];
  if (version === undefined) {
    throw new Error(
      `Cannot read vegeta's version: \`${path} -version\` printed none and ` +
        (go === null
          ? "`go` is not on PATH for `go version -m`"
          : `\`go version -m\` shows no ${MODULE} module: received ${buildInfo ?? "an error"}`),
    );
  }
  return { installed: true, version, path, install: INSTALL };
}

function refusal(plan: AttackPlan): string | null {
  const model = plan.model;
  if (model.kind === "ramping") {
    return "vegeta has no ramping model (its -rate is one constant rate for the whole run); use k6";
  }
  if (model.kind === "open" && !(Number.isInteger(model.rateRps) && model.rateRps > 0)) {
    return `vegeta's -rate takes a positive integer count per second (0 means unlimited): received ${model.rateRps}`;
  }
  if (model.kind === "closed" && !(Number.isInteger(model.connections) && model.connections > 0)) {
    return `vegeta's -max-workers needs a positive integer connections: received ${model.connections}`;
  }
  if (!(plan.timeoutS > 0)) return `vegeta's -timeout must be > 0 (0 means none): received ${plan.timeoutS}`;
  return null;
}

function targetLine(target: Target, headers: Record<string, string[]>): string {
  const line: { method: string; url: string; header: Record<string, string[]>; body?: string } = {
    method: target.method,
    url: target.url,
    header: headers,
  };
  if (target.body !== null) {
    line.body = Buffer.from(target.body, "utf8").toString("base64");
    if (!Object.keys(headers).some((name) => name.toLowerCase() === "content-type")) {
      line.header = { ...headers, "Content-Type": ["application/json"] };
    }
  }
  return JSON.stringify(line);
}

function prepare(targets: Target[], context: RunContext & { workDir: string; binary: string }): PreparedRun {
  const { plan, durationS } = context;
  if (targets.length === 0) throw new RangeError("Cannot prepare vegeta: no targets: received 0");
  const model = plan.model;
  if (model.kind === "ramping") throw new RangeError(`Cannot prepare vegeta: ${refusal(plan)}`);
  const headers = Object.fromEntries(Object.entries(plan.headers).map(([name, value]) => [name, [value]]));
  const load =
    model.kind === "open"
      ? [`-rate=${model.rateRps}/1s`, `-max-connections=${plan.maxConnections}`]
      : ["-rate=0", `-workers=${model.connections}`, `-max-workers=${model.connections}`];
  const vegeta = shellQuote(context.binary);
  const attack = [
    vegeta,
    "attack",
    "-format=json",
    `-targets=${TARGETS}`,
    ...load,
    `-duration=${durationS}s`,
    `-timeout=${plan.timeoutS}s`,
    "-redirects=-1",
    "-max-body=-1",
    `-output=${RESULTS}`,
  ];
  const script = [
    "set -euo pipefail",
    attack.join(" "),
    `${vegeta} report -type=json -output=${REPORT} ${RESULTS} &`,
    "report=$!",
    `${vegeta} encode -to=json ${RESULTS} | ${STRIP_BODIES} > ${LINES}`,
    'wait "$report"',
  ].join("\n");
  return {
    argv: ["bash", "-c", script],
    files: { [TARGETS]: `${targets.map((target) => targetLine(target, headers)).join("\n")}\n` },
    outputs: [REPORT, LINES],
  };
}

/**
 * Per-request lines → transport error counts (code 0), the exact nearest-rank p99.9 in ns, and the
 * timeline, all in one pass.
 */
function aggregateLines(
  text: string,
  read: OutputReader,
): {
  lines: number;
  errors: Record<string, number>;
  p99_9Ns: number | null;
  okNs: { p50: number | null; p99: number | null };
  timeline: Timeline;
} {
  const latencies: number[] = [];
  const okLatencies: number[] = [];
  const errors: Record<string, number> = {};
  const timeline = new TimelineBuilder();
  let lineNumber = 0;
  for (const line of text.split("\n")) {
    lineNumber++;
    if (line === "") continue;
    const what = `${LINES} line ${lineNumber}`;
    const result = read.record(read.json(line, what), what);
    const code = read.count(result.code, `${what} code`);
    const latencyNs = read.count(result.latency, `${what} latency`);
    latencies.push(latencyNs);
    // RFC 3339 with ns and the zone vegeta printed; ms is all a second's bucket needs.
    const startMs = typeof result.timestamp === "string" ? Date.parse(result.timestamp) : Number.NaN;
    if (Number.isNaN(startMs)) {
      throw read.failure(`${what} timestamp is not a time: received ${JSON.stringify(result.timestamp)}`);
    }
    const ok = code >= 200 && code < 300;
    if (ok) okLatencies.push(latencyNs);
    timeline.add({ startMs, latencyMs: latencyNs / 1e6, ok, error: !ok });
    if (code === 0) {
      const message =
        typeof result.error === "string" && result.error !== "" ? result.error : "unknown error";
      const cause = message.replace(URL_ERROR_PREFIX, "");
      errors[cause] = (errors[cause] ?? 0) + 1;
    }
  }
  latencies.sort((a, b) => a - b);
  okLatencies.sort((a, b) => a - b);
  const rank = Math.ceil(0.999 * latencies.length);
  return {
    lines: latencies.length,
    errors,
    p99_9Ns: rank === 0 ? null : (latencies[rank - 1] as number),
    okNs: { p50: nearestRank(okLatencies, 50), p99: nearestRank(okLatencies, 99) },
    timeline: timeline.build({ source: TIMELINE_SOURCE, errors: true }),
  };
}

function parse(raw: RawOutput, context: RunContext): NormalizedResult {
  const read = outputReader("vegeta", raw);
  if (raw.exitCode !== 0) throw read.failure("the attack/report/encode pipeline did not exit with 0");
  const report = read.record(read.json(read.file(REPORT), REPORT), REPORT);
  const requests = read.count(report.requests, "requests");
  const codes = read.counts(report.status_codes, "status_codes");
  const linesText = raw.outputs[LINES];
  if (linesText === undefined) throw read.failure(`${LINES} is missing`);
  const lines = aggregateLines(linesText, read);
  if (lines.lines !== requests) {
    throw read.failure(`${LINES} holds ${lines.lines} results but ${REPORT} counts ${requests} requests`);
  }
  const statusCounts = Object.fromEntries(Object.entries(codes).filter(([code]) => code !== "0"));
  const completed = requests - (codes["0"] ?? 0);
  const ok = okCount(statusCounts);
  // `duration` is the send window (first to last request sent), `wait` the drain after it.
  const durationS = read.count(report.duration, "duration") / 1e9;
  const drainS = read.count(report.wait, "wait") / 1e9;
  const latencies = read.record(report.latencies, "latencies");
  // With no requests vegeta leaves every latency at 0: that is no sample, not a 0 ms latency.
  const ms = (key: string) => (requests === 0 ? null : read.count(latencies[key], `latencies.${key}`) / 1e6);
  const latencyMs: LatencyMs = {
    min: ms("min"),
    mean: ms("mean"),
    p50: ms("50th"),
    p90: ms("90th"),
    p95: ms("95th"),
    p99: ms("99th"),
    p99_9: lines.p99_9Ns === null ? null : lines.p99_9Ns / 1e6,
    max: ms("max"),
  };
  const model = context.plan.model;
  return {
    tool: "vegeta",
    toolVersion: context.toolVersion,
    model: model.kind,
    offeredRps: model.kind === "open" ? model.rateRps : null,
    requests,
    completed,
    ok,
    statusCounts,
    errorCounts: lines.errors,
    // vegeta never reports dropped ticks: with unbounded workers it sends late rather than drops.
    droppedOrAborted: null,
    achievedRps: durationS > 0 ? completed / durationS : null,
    okRps: durationS > 0 ? ok / durationS : null,
    latencyMs,
    bytesIn: read.count(read.record(report.bytes_in, "bytes_in").total, "bytes_in.total"),
    durationS: requests === 0 ? null : durationS,
    drainS: requests === 0 ? null : drainS,
    sent: { kind: "prefix", count: requests },
    timeline: lines.timeline,
    // The answered requests alone (2xx): with load shedding, fast 503s would otherwise pull p99 down.
    okLatencyMs: {
      p50: lines.okNs.p50 === null ? null : lines.okNs.p50 / 1e6,
      p99: lines.okNs.p99 === null ? null : lines.okNs.p99 / 1e6,
    },
  };
}

export const tool: Tool = { name: "vegeta", capabilities, detect, refusal, prepare, parse };
