/**
 * vegeta 12.13.0 (tsenart/vegeta): open model (`-rate=N/1s`, integer N, workers unbounded so the pacer
 * never waits for a free worker) and closed model (`-rate=0 -workers=N -max-workers=N`: exactly N workers,
 * each sending its next request when the last returns). Mixed methods and bodies: every target is one line
 * of a `-format=json` targets file (base64 body, its own headers), replayed round-robin in file order, so the
 * requests sent are exactly a prefix of the pre-generated list (already a seeded shuffle). No ramping.
 *
 * Pipeline (one `bash -c`, every raw file kept in the run directory):
 *   vegeta attack … -output=results.bin            the tool's own per-request results (gob)
 *   vegeta report -type=json -output=report.json   counts, status codes, t-digest percentiles, duration
 *   vegeta encode -to=json results.bin | sed …     per-request JSON lines, bodies and headers dropped
 * The report has no p99.9 and lists errors without counts (FACTS pitfall 9): both come from the per-request
 * lines. `-max-body=-1` keeps `bytes_in` the full body size (vegeta counts only the bytes it keeps, so
 * `-max-body=0` would zero it); the bodies then live in results.bin on disk, and sed drops them (and the
 * response headers) from the lines the parser reads, so memory holds ~200 bytes per request, not the bodies.
 * `-redirects=-1` returns a 3xx as is, like oha and wrk (vegeta follows 10 by default).
 *
 * Units: ns → ms, duration = report `duration` + `wait`. Percentiles p50…p99, min, mean and max are the
 * report's (over all results, transport errors included); p99.9 is the nearest rank over the same results.
 */
import { homedir } from "node:os";
import { join } from "node:path";
import type { AttackPlan, LatencyMs, NormalizedResult, Target } from "../plan.ts";
import type { Capabilities, Detection, PreparedRun, RawOutput, RunContext, Tool } from "./_tool.ts";

const INSTALL = "go install github.com/tsenart/vegeta/v12@v12.13.0";
const TARGETS = "targets.jsonl";
const RESULTS = "results.bin";
const REPORT = "report.json";
const LINES = "results.jsonl";
/** Go's url.Error prefix, `Get "http://…": `, which makes every URL's copy of one cause a distinct message. */
const URL_ERROR_PREFIX = /^[A-Za-z]+ "(?:[^"\\]|\\.)*": /;

const capabilities: Capabilities = {
  models: ["open", "closed"],
  mixedMethods: true,
  percentiles: ["min", "mean", "p50", "p90", "p95", "p99", "p99_9", "max"],
  statusCounts: true,
  notes:
    "targets replayed round-robin in file order; open model with unbounded workers (late ticks are sent " +
    "late, never dropped); percentiles over all results including transport errors, p50-p99 from " +
    "vegeta's t-digest, p99.9 exact from `vegeta encode`; bytesIn counts bodies only.",
};

function run(argv: string[]): string | null {
  try {
    const proc = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
    return proc.exitCode === 0 ? proc.stdout.toString() : null;
  } catch {
    return null;
  }
}

async function detect(): Promise<Detection> {
  const go = Bun.which("go", { PATH: `${process.env.PATH ?? ""}:/usr/local/go/bin` });
  const dirs = [process.env.PATH ?? ""];
  if (process.env.GOBIN) dirs.push(process.env.GOBIN);
  const gopath = go === null ? null : run([go, "env", "GOPATH"])?.trim();
  if (gopath) dirs.push(...gopath.split(":").map((dir) => join(dir, "bin")));
  dirs.push(join(homedir(), "go", "bin"));
  const path = Bun.which("vegeta", { PATH: dirs.join(":") });
  if (path === null) return { installed: false, version: null, path: null, install: INSTALL };
  // A `go install` build prints nothing for -version; its module version is in the embedded build info.
  const buildInfo = go === null ? null : run([go, "version", "-m", path]);
  const fromBuildInfo = /^\s*mod\s+github\.com\/tsenart\/vegeta\/v12\s+v(\d+\.\d+\.\d+\S*)/m.exec(
    buildInfo ?? "",
  );
  const fromFlag = /^Version:\s*v?(\d+\.\d+\.\d+\S*)/m.exec(run([path, "-version"]) ?? "");
  const version = fromBuildInfo?.[1] ?? fromFlag?.[1];
  if (version === undefined) {
    throw new Error(
      `Cannot read vegeta's version: \`${path} -version\` printed none and ` +
        (go === null
          ? "`go` is not on PATH for `go version -m`"
          : `\`go version -m\` shows no github.com/tsenart/vegeta/v12 module: received ${buildInfo ?? "an error"}`),
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

/** A POSIX shell word that stands for exactly `value`. */
function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./=:+-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
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
      ? [`-rate=${model.rateRps}/1s`]
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
    `${vegeta} report -type=json -output=${REPORT} ${RESULTS}`,
    // "body" (base64 or null) follows "error", whose quotes are escaped, so the first pattern matches only
    // that field; "headers" is the last field of every line. results.bin keeps both.
    `${vegeta} encode -to=json ${RESULTS} | sed -E 's#,"body":("[A-Za-z0-9+/=]*"|null)##; s#,"headers":(null|[{].*[}])[}]$#}#' > ${LINES}`,
  ].join("\n");
  return {
    argv: ["bash", "-c", script],
    files: { [TARGETS]: `${targets.map((target) => targetLine(target, headers)).join("\n")}\n` },
    outputs: [REPORT, LINES],
  };
}

function fail(detail: string, raw: RawOutput): never {
  const stderr = raw.stderr.trim().slice(0, 500);
  throw new Error(
    `Cannot parse vegeta output: ${detail} (exit code ${raw.exitCode}${stderr ? `; stderr: ${stderr}` : ""})`,
  );
}

function record(value: unknown, what: string, raw: RawOutput): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    fail(`${what} is not an object`, raw);
  return value as Record<string, unknown>;
}

function count(value: unknown, what: string, raw: RawOutput): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    fail(`${what} is not a count: received ${JSON.stringify(value)}`, raw);
  }
  return value;
}

function jsonFile(name: string, raw: RawOutput): string {
  const text = raw.outputs[name];
  if (text === undefined || text.trim() === "") fail(`${name} is missing or empty`, raw);
  return text;
}

/** Per-request lines → transport error counts (code 0) and the exact nearest-rank p99.9 in ns. */
function aggregateLines(
  text: string,
  raw: RawOutput,
): { lines: number; errors: Record<string, number>; p99_9Ns: number | null } {
  const latencies: number[] = [];
  const errors: Record<string, number> = {};
  let lineNumber = 0;
  for (const line of text.split("\n")) {
    lineNumber++;
    if (line === "") continue;
    let result: Record<string, unknown>;
    try {
      result = record(JSON.parse(line), `${LINES} line ${lineNumber}`, raw);
    } catch (error) {
      if (error instanceof SyntaxError)
        fail(`${LINES} line ${lineNumber} is not JSON: ${error.message}`, raw);
      throw error;
    }
    const code = count(result.code, `${LINES} line ${lineNumber} code`, raw);
    latencies.push(count(result.latency, `${LINES} line ${lineNumber} latency`, raw));
    if (code === 0) {
      const message =
        typeof result.error === "string" && result.error !== "" ? result.error : "unknown error";
      const cause = message.replace(URL_ERROR_PREFIX, "");
      errors[cause] = (errors[cause] ?? 0) + 1;
    }
  }
  latencies.sort((a, b) => a - b);
  const rank = Math.ceil(0.999 * latencies.length);
  return { lines: latencies.length, errors, p99_9Ns: rank === 0 ? null : (latencies[rank - 1] as number) };
}

function parse(raw: RawOutput, context: RunContext): NormalizedResult {
  if (raw.exitCode !== 0) fail("the attack/report/encode pipeline did not exit with 0", raw);
  let report: Record<string, unknown>;
  try {
    report = record(JSON.parse(jsonFile(REPORT, raw)), REPORT, raw);
  } catch (error) {
    if (error instanceof SyntaxError) fail(`${REPORT} is not JSON: ${error.message}`, raw);
    throw error;
  }
  const requests = count(report.requests, "requests", raw);
  const codes: Record<string, number> = {};
  for (const [code, n] of Object.entries(record(report.status_codes, "status_codes", raw))) {
    codes[code] = count(n, `status_codes.${code}`, raw);
  }
  const lines = aggregateLines(raw.outputs[LINES] ?? fail(`${LINES} is missing`, raw), raw);
  if (lines.lines !== requests) {
    fail(`${LINES} holds ${lines.lines} results but ${REPORT} counts ${requests} requests`, raw);
  }
  const statusCounts = Object.fromEntries(Object.entries(codes).filter(([code]) => code !== "0"));
  const completed = requests - (codes["0"] ?? 0);
  const ok = Object.entries(statusCounts)
    .filter(([code]) => /^2\d\d$/.test(code))
    .reduce((total, [, n]) => total + n, 0);
  const durationNs = count(report.duration, "duration", raw) + count(report.wait, "wait", raw);
  const durationS = durationNs / 1e9;
  const latencies = record(report.latencies, "latencies", raw);
  // With no requests vegeta leaves every latency at 0: that is no sample, not a 0 ms latency.
  const ms = (key: string) => (requests === 0 ? null : count(latencies[key], `latencies.${key}`, raw) / 1e6);
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
    bytesIn: count(record(report.bytes_in, "bytes_in", raw).total, "bytes_in.total", raw),
    durationS: requests === 0 ? null : durationS,
  };
}

export const tool: Tool = { name: "vegeta", capabilities, detect, refusal, prepare, parse };
