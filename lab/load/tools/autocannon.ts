/**
 * autocannon 9 (npm dependency), closed model only: C connections, each sending its next request when the
 * last one returns. It has no open model: `-R`/`overallRate` is a per-second cap, and with a rate its
 * latency correction invents samples (FACTS pitfalls 16, 17), so open and ramping plans are refused.
 *
 * Its CLI cannot send a list of different requests, so `autocannon_runner.ts` drives the JS API in a
 * subprocess: connection i replays targets i, i+C, i+2C, … cyclically. The global order of the targets is
 * therefore only approximate (it depends on each connection's response times), and which targets were
 * sent is known from the per-connection response counts in the runner's output.
 *
 * Latency: integer-ms HdrHistogram from the moment a request is queued, over every response (non-2xx
 * included, errors and timeouts excluded); p50/p90/p99/p99.9 but no p95. After a socket error or a
 * server-side close, autocannon 9.0.0 times later responses on that connection from older requests'
 * starts; the runner counts those responses and the latency is then null, not a wrong number.
 *
 * Timeline: built by the runner from autocannon's per-request events (see autocannon_runner.ts) and written
 * into its result file; every request written counts in the second it started, so Σ sent is
 * `requests.sent`, Σ ok the 2xx responses and Σ errors the non-2xx, the errors and the lost requests.
 */
import { resolve } from "node:path";
import type {
  AttackPlan,
  NormalizedResult,
  Target,
  Timeline,
  TimelineSecond,
} from "../../plan/attack_plan.ts";
import { timelineProblems, timelineTotals } from "../request_timeline.ts";
import type { Capabilities, Detection, PreparedRun, RawOutput, RunContext, Tool } from "../tool.ts";
import { notInstalled } from "./_detect.ts";
import { type OutputReader, okCount, outputReader, sum } from "./_parse.ts";
import type { RunnerConfig, RunnerOutput } from "./autocannon_runner.ts";

const INSTALL = "bun install";
const RUNNER = resolve(import.meta.dir, "autocannon_runner.ts");
const CONFIG_FILE = "config.json";
const RESULT_FILE = "result.json";
const LOST = "connection closed with the request in flight (autocannon counts no error)";

export const capabilities: Capabilities = {
  models: ["closed"],
  mixedMethods: true,
  percentiles: ["min", "mean", "p50", "p90", "p99", "p99_9", "max"],
  statusCounts: true,
  sends: "stripes",
  latencyResolutionMs: 1, // whole milliseconds (HdrHistogram of integer ms)
  timeline: true,
  notes:
    "Closed model only (its rate option is a cap, not an arrival rate). Connection i replays targets " +
    "i, i+C, … so the global order is approximate. Whole-second durations, timeouts ≥ 1 s. Integer-ms " +
    "latency, no p95, errors and timeouts not in it; null after a lost request (stale timings). Runs " +
    "the JS API through lab/load/tools/autocannon_runner.ts, whose per-request events give the timeline " +
    "(float-ms response times; errors without latency).",
};

/** The runner's timeline, checked: contiguous integer seconds, counts that add up to the run's. */
function readTimeline(
  value: unknown,
  read: OutputReader,
  totals: { sent: number; ok: number; errors: number },
): Timeline {
  const timeline = read.record(value, `${RESULT_FILE} timeline`);
  if (typeof timeline.source !== "string" || !Array.isArray(timeline.seconds)) {
    throw read.failure(`${RESULT_FILE} timeline has no source and seconds`);
  }
  const seconds: TimelineSecond[] = timeline.seconds.map((entry: unknown, i: number) => {
    const what = `${RESULT_FILE} timeline.seconds[${i}]`;
    const second = read.record(entry, what);
    const ms = (key: string) => read.numberOrNull(second[key], `${what}.${key}`, { unit: "ms" });
    return {
      epochS: read.count(second.epochS, `${what}.epochS`),
      sent: read.count(second.sent, `${what}.sent`),
      ok: read.count(second.ok, `${what}.ok`),
      errors: read.count(second.errors, `${what}.errors`),
      p50Ms: ms("p50Ms"),
      p99Ms: ms("p99Ms"),
    };
  });
  const result = { source: timeline.source, seconds };
  const problems = timelineProblems(result, { sent: totals.sent, fromMs: 0, toMs: Number.MAX_SAFE_INTEGER });
  const { ok, errors } = timelineTotals(result);
  if (ok !== totals.ok) problems.push(`Σ ok is ${ok}, the 2xx responses ${totals.ok}`);
  if (errors !== totals.errors) problems.push(`Σ errors is ${errors}, the run's ${totals.errors}`);
  if (problems.length > 0) throw read.failure(`${RESULT_FILE} timeline: ${problems.join("; ")}`);
  return result;
}

function refusal(plan: AttackPlan): string | null {
  const model = plan.model;
  if (model.kind !== "closed") {
    return (
      `autocannon has no ${model.kind} model: its rate option (-R/overallRate) only caps each second's ` +
      "requests while connections wait on responses, and with a rate its default latency correction " +
      "back-fills synthetic samples; use k6, vegeta or oha for arrival-rate plans"
    );
  }
  if ((plan.instanceUrls?.length ?? 1) > 1) {
    return `autocannon sends to one origin (its url), not to ${plan.instanceUrls?.length} instances; use vegeta, k6 or oha`;
  }
  if (!(Number.isInteger(model.connections) && model.connections >= 1)) {
    return `autocannon needs a positive integer of connections: received ${model.connections}`;
  }
  if (plan.targetCount < model.connections) {
    return `each autocannon connection replays its own share of the targets: targetCount ${plan.targetCount} < ${model.connections} connections`;
  }
  // lib/validate.js: "timeout must be greater than 0", checked as `timeout < 1`.
  if (!(plan.timeoutS >= 1))
    return `autocannon timeouts are at least 1 s: received timeoutS ${plan.timeoutS}`;
  // run.js ends a run on its first 1 s sampling tick after the duration: 2.5 s would run 3 s.
  for (const [name, seconds] of [
    ["durationS", plan.durationS],
    ["warmupS", plan.warmupS],
  ] as const) {
    if (!(Number.isInteger(seconds) && seconds >= (name === "durationS" ? 1 : 0))) {
      return `autocannon stops on its 1 s sampling tick, so it runs whole seconds only: received ${name} ${seconds}`;
    }
  }
  return null;
}

function prepare(targets: Target[], context: RunContext & { workDir: string; binary: string }): PreparedRun {
  const { plan } = context;
  if (plan.model.kind !== "closed") throw new RangeError(`Cannot prepare autocannon: ${refusal(plan)}`);
  const origin = new URL(plan.baseUrl).origin;
  const config: RunnerConfig = {
    url: origin,
    connections: plan.model.connections,
    durationS: context.durationS,
    timeoutS: plan.timeoutS,
    headers: plan.headers,
    requests: targets.map((target) => {
      const url = new URL(target.url);
      if (url.origin !== origin) {
        throw new RangeError(`Cannot prepare autocannon: a target leaves ${origin}: received ${target.url}`);
      }
      return { method: target.method, path: url.pathname + url.search, body: target.body };
    }),
  };
  return {
    argv: [process.execPath, context.binary, CONFIG_FILE, RESULT_FILE],
    files: { [CONFIG_FILE]: JSON.stringify(config) },
    outputs: [RESULT_FILE],
  };
}

function numberAt(value: unknown, path: string, read: OutputReader): number {
  let node = value;
  for (const key of path.split(".")) node = (node as Record<string, unknown> | undefined)?.[key];
  if (typeof node !== "number" || !Number.isFinite(node)) {
    throw read.failure(`${RESULT_FILE} has no number at result.${path}: received ${JSON.stringify(node)}`);
  }
  return node;
}

function parse(raw: RawOutput, context: RunContext): NormalizedResult {
  const read = outputReader("autocannon", raw, { stderr: "tail" });
  const text = raw.outputs[RESULT_FILE];
  if (text === undefined) throw read.failure(`${RESULT_FILE} was not written`);
  if (raw.exitCode !== 0) throw read.failure("the autocannon runner did not exit with 0");
  const output = read.json(text, RESULT_FILE) as RunnerOutput;
  const result = output.result;
  if (typeof result !== "object" || result === null) throw read.failure(`${RESULT_FILE} has no result`);
  const stats = result.statusCodeStats as Record<string, { count?: unknown }> | undefined;
  if (typeof stats !== "object" || stats === null)
    throw read.failure(`${RESULT_FILE} has no statusCodeStats`);
  const statusCounts: Record<string, number> = {};
  for (const [status, entry] of Object.entries(stats)) {
    if (typeof entry?.count !== "number") throw read.failure(`statusCodeStats.${status} has no count`);
    statusCounts[status] = entry.count;
  }
  const completed = numberAt(result, "requests.total", read);
  if (sum(Object.values(statusCounts)) !== completed) {
    throw read.failure(
      `statusCodeStats sum to ${sum(Object.values(statusCounts))} but requests.total is ${completed}`,
    );
  }
  const errors = numberAt(result, "errors", read);
  const errorCounts = output.errorCounts;
  if (typeof errorCounts !== "object" || errorCounts === null || sum(Object.values(errorCounts)) !== errors) {
    throw read.failure(`the runner's errorCounts do not sum to result.errors (${errors})`);
  }
  if (!Array.isArray(output.connections) || output.connections.length === 0) {
    throw read.failure(`${RESULT_FILE} has no per-connection counts`);
  }
  const lost = sum(output.connections.map((connection) => connection.lost));
  // After a socket error or a lost request, autocannon times responses from older requests' starts.
  const staleResponses = sum(output.connections.map((connection) => connection.staleResponses));
  const ok = okCount(statusCounts);
  const durationS = numberAt(result, "duration", read);
  if (!(durationS > 0)) throw read.failure(`result.duration is ${durationS}`);
  // An empty histogram reads as 0 (aggregateResult.js): no sample means no latency, not 0 ms. Stale
  // timings (see ConnectionCounts in the runner) are not the server's latency either.
  const sampled = numberAt(result, "latency.totalCount", read) > 0 && staleResponses === 0;
  const latency = (field: string): number | null =>
    sampled ? numberAt(result, `latency.${field}`, read) : null;
  const requests = numberAt(result, "requests.sent", read);
  return {
    tool: "autocannon",
    toolVersion: context.toolVersion,
    model: "closed",
    offeredRps: null,
    requests,
    completed,
    ok,
    statusCounts,
    errorCounts: lost > 0 ? { ...errorCounts, [LOST]: lost } : { ...errorCounts },
    droppedOrAborted: null,
    achievedRps: completed / durationS,
    okRps: ok / durationS,
    latencyMs: {
      // latency.min is HdrHistogram's minNonZeroValue: with sub-ms (0 ms) samples it reads 1 > p50 = 0.
      min: sampled ? Math.min(latency("min") as number, latency("p0_001") as number) : null,
      mean: latency("mean"),
      p50: latency("p50"),
      p90: latency("p90"),
      p95: null,
      p99: latency("p99"),
      p99_9: latency("p99_9"),
      max: latency("max"),
    },
    bytesIn: numberAt(result, "throughput.total", read),
    durationS,
    drainS: null,
    // Connection i replays stripe i (targets i, i+C, …) and counts the requests it sent.
    sent: { kind: "stripes", counts: output.connections.map((connection) => connection.requests) },
    timeline: readTimeline(output.timeline, read, {
      sent: requests,
      ok,
      errors: completed - ok + errors + lost,
    }),
  };
}

/** autocannon is an npm dependency: installed when `bun install` has put it in node_modules. */
async function detect(): Promise<Detection> {
  try {
    const manifest = Bun.resolveSync("autocannon/package.json", import.meta.dir);
    const { version } = (await Bun.file(manifest).json()) as { version?: unknown };
    if (typeof version !== "string") throw new TypeError(`no version in ${manifest}`);
    return { installed: true, version, path: RUNNER, install: INSTALL };
  } catch {
    return notInstalled(INSTALL);
  }
}

export const tool: Tool = { name: "autocannon", capabilities, detect, refusal, prepare, parse };
