/**
 * One plan from several load generators, merged exactly (issue 14). The plan is split the way the tools'
 * own distribution features split it, and the result is merged from every request each generator recorded,
 * never from their summaries (percentiles do not average).
 *
 * vegeta (its README's "distributed attacks": divide the rate by the host count, report the result files
 * together): generator g of G attacks at its share of the rate (integer rates: shares differ by at most 1
 * rps) and walks stripe g of the stream, positions g, g + G, g + 2G, …, so the generators together send the
 * stream's positions as a `stripes` account, which the runner's stream checks read like wrk's. The merge
 * reads every generator's per-request lines (`vegeta encode`): counts, status codes, transport errors and
 * the send window (first to last request started, as `vegeta report` computes it, then the drain to the last
 * response), and every percentile as the nearest rank over the union of the latencies.
 *
 * Each generator runs as its own process (`runTool`) in its own directory (`<label>/gen-<g>`), optionally
 * inside a host (`prefix`, e.g. `ip netns exec …`); all start together.
 */
import type { AttackPlan, LatencyMs, NormalizedResult, Target } from "../plan/plan.ts";
import { runTool, type ToolRun } from "./attack.ts";
import { outputReader } from "./tools/_parse.ts";
import { nearestRank, TimelineBuilder } from "./tools/_timeline.ts";
import type { Detection, Tool } from "./tools/_tool.ts";

/** One generator's share of a plan: its rate or connections, and its stripe of the targets. */
export interface GeneratorShare {
  index: number;
  plan: AttackPlan;
  targets: Target[];
}

/** Splits `total` into `parts` integers differing by at most 1, larger first. */
export function splitInteger(total: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, i) => Math.floor(total / parts) + (i < total % parts ? 1 : 0));
}

/** The plan as `generators` vegeta processes run it: the rate (or connections) split, stripe g to generator g. */
export function splitPlan(plan: AttackPlan, targets: Target[], generators: number): GeneratorShare[] {
  if (!(Number.isInteger(generators) && generators >= 1)) {
    throw new RangeError(
      `Cannot split the plan: generators must be a positive integer: received ${generators}`,
    );
  }
  const model = plan.model;
  if (model.kind === "ramping") throw new RangeError("Cannot split a ramping plan over vegeta generators");
  const total = model.kind === "open" ? model.rateRps : model.connections;
  if (total < generators) {
    throw new RangeError(
      `Cannot split the plan: ${generators} generators need at least ${generators} ${model.kind === "open" ? "rps" : "connections"}: received ${total}`,
    );
  }
  if (targets.length < generators) {
    throw new RangeError(
      `Cannot split the plan: fewer targets (${targets.length}) than generators (${generators})`,
    );
  }
  return splitInteger(total, generators).map((share, index) => ({
    index,
    plan: {
      ...plan,
      model:
        model.kind === "open" ? { kind: "open", rateRps: share } : { kind: "closed", connections: share },
    },
    targets: targets.filter((_, position) => position % generators === index),
  }));
}

const LINES = "results.jsonl";
const REPORT = "report.json";
/** Go's url.Error prefix, as vegeta.ts strips it. */
const URL_ERROR_PREFIX = /^[A-Za-z]+ "(?:[^"\\]|\\.)*": /;

/** vegeta generators' runs as one result, from the union of their per-request lines. */
export function mergeVegeta(runs: ToolRun[], plan: AttackPlan, toolVersion: string): NormalizedResult {
  const latencies: number[] = [];
  const okLatencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  const errorCounts: Record<string, number> = {};
  const timeline = new TimelineBuilder();
  let earliestMs = Number.POSITIVE_INFINITY;
  let latestMs = Number.NEGATIVE_INFINITY;
  let lastEndMs = Number.NEGATIVE_INFINITY;
  let bytesIn = 0;
  let transportErrors = 0;
  const counts: number[] = [];
  for (const run of runs) {
    const read = outputReader("vegeta", run.raw);
    const report = read.record(read.json(read.file(REPORT), REPORT), REPORT);
    bytesIn += read.count(read.record(report.bytes_in, "bytes_in").total, "bytes_in.total");
    const text = run.raw.outputs[LINES];
    if (text === undefined) throw read.failure(`${LINES} is missing`);
    let lines = 0;
    for (const line of text.split("\n")) {
      if (line === "") continue;
      lines++;
      const what = `${LINES} line ${lines}`;
      const result = read.record(read.json(line, what), what);
      const code = read.count(result.code, `${what} code`);
      const latencyNs = read.count(result.latency, `${what} latency`);
      // Date.parse keeps ms; the ns in the timestamp's fraction would only refine the window by < 1 ms.
      const startMs = typeof result.timestamp === "string" ? Date.parse(result.timestamp) : Number.NaN;
      if (Number.isNaN(startMs)) throw read.failure(`${what} timestamp is not a time`);
      latencies.push(latencyNs);
      earliestMs = Math.min(earliestMs, startMs);
      latestMs = Math.max(latestMs, startMs);
      lastEndMs = Math.max(lastEndMs, startMs + latencyNs / 1e6);
      const ok = code >= 200 && code < 300;
      if (ok) okLatencies.push(latencyNs);
      timeline.add({ startMs, latencyMs: latencyNs / 1e6, ok, error: !ok });
      if (code === 0) {
        transportErrors++;
        const message =
          typeof result.error === "string" && result.error !== "" ? result.error : "unknown error";
        const cause = message.replace(URL_ERROR_PREFIX, "");
        errorCounts[cause] = (errorCounts[cause] ?? 0) + 1;
      } else {
        statusCounts[String(code)] = (statusCounts[String(code)] ?? 0) + 1;
      }
    }
    const reported = read.count(report.requests, "requests");
    if (lines !== reported)
      throw read.failure(`${LINES} holds ${lines} results but ${REPORT} counts ${reported}`);
    counts.push(lines);
  }
  latencies.sort((a, b) => a - b);
  okLatencies.sort((a, b) => a - b);
  const requests = latencies.length;
  const completed = requests - transportErrors;
  const ok = Object.entries(statusCounts).reduce(
    (sum, [code, n]) => (code.startsWith("2") ? sum + n : sum),
    0,
  );
  const ms = (ns: number | null | undefined) => (ns === null || ns === undefined ? null : ns / 1e6);
  const rank = (list: number[], p: number) => ms(nearestRank(list, p));
  const durationS = requests > 1 ? (latestMs - earliestMs) / 1_000 : null;
  const latencyMs: LatencyMs = {
    min: ms(latencies[0]),
    mean: requests === 0 ? null : latencies.reduce((a, b) => a + b, 0) / requests / 1e6,
    p50: rank(latencies, 50),
    p90: rank(latencies, 90),
    p95: rank(latencies, 95),
    p99: rank(latencies, 99),
    p99_9: rank(latencies, 99.9),
    max: ms(latencies.at(-1)),
  };
  const model = plan.model;
  return {
    tool: "vegeta",
    toolVersion,
    model: model.kind,
    offeredRps: model.kind === "open" ? model.rateRps : null,
    requests,
    completed,
    ok,
    statusCounts,
    errorCounts,
    droppedOrAborted: null,
    achievedRps: durationS ? completed / durationS : null,
    okRps: durationS ? ok / durationS : null,
    latencyMs,
    bytesIn,
    durationS,
    drainS: requests === 0 ? null : Math.max(0, (lastEndMs - latestMs) / 1_000),
    // Generator g walked stripe g from its start: the union is the stream's stripes.
    sent: { kind: "stripes", counts },
    timeline: timeline.build({
      source: `vegeta per-request results of ${runs.length} generators (\`vegeta encode\`), merged`,
      errors: true,
    }),
    okLatencyMs: { p50: rank(okLatencies, 50), p99: rank(okLatencies, 99) },
  };
}

/**
 * Runs `plan` from `generators` vegeta processes at once and merges them. `prefix(g)` is put before
 * generator g's command (a host: `ip netns exec <ns>`; none on this machine).
 */
export async function runGenerators(
  tool: Tool,
  plan: AttackPlan,
  options: {
    targets: Target[];
    durationS: number;
    workDir: string;
    label: string;
    detection: Detection;
    generators: number;
    signal?: AbortSignal;
  },
): Promise<{ result: NormalizedResult; runs: ToolRun[] }> {
  if (tool.name !== "vegeta") {
    throw new RangeError(
      `Cannot run several ${tool.name} generators yet: only vegeta's rate split is merged`,
    );
  }
  const shares = splitPlan(plan, options.targets, options.generators);
  const runs = await Promise.all(
    shares.map((share) =>
      runTool(tool, share.plan, {
        targets: share.targets,
        durationS: options.durationS,
        workDir: options.workDir,
        label: `${options.label}/gen-${share.index}`,
        detection: options.detection,
        signal: options.signal,
      }),
    ),
  );
  return { result: mergeVegeta(runs, plan, options.detection.version ?? ""), runs };
}
