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
 * k6 (the mechanism the k6 operator uses): every generator runs the whole plan and the whole target list
 * with `--execution-segment g/G:(g+1)/G` and the full `--execution-segment-sequence`; k6 stripes the
 * iterations over the segments, and since the script sends target `iterationInTest % n` (a number unique
 * across segments), the generators together send exactly the single-process schedule: a `prefix` of the
 * list. Each generator's summary counts only its own requests, so counts add up; the percentiles and the
 * timeline come from the union of every generator's samples (`--out csv`, ms timestamps), never from the
 * summaries' quantiles.
 *
 * Each generator runs as its own process (`runTool`) in its own directory (`<label>/gen-<g>`); all start
 * together.
 */
import { parse as parseCsv } from "csv-parse/sync";
import type { Host } from "../isolation/netns.ts";
import type { AttackPlan, NormalizedResult, Target } from "../plan/attack_plan.ts";
import { RequestUnion } from "./request_timeline.ts";
import { type RunToolOptions, runTool, type ToolRun } from "./run_attack.ts";
import type { Tool } from "./tool.ts";
import { okCount, outputReader } from "./tools/_parse.ts";
import { SAMPLES_FILE } from "./tools/k6.ts";
import { URL_ERROR_PREFIX } from "./tools/vegeta.ts";

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

/** vegeta generators' runs as one result, from the union of their per-request lines. */
export function mergeVegeta(runs: ToolRun[], plan: AttackPlan, toolVersion: string): NormalizedResult {
  const union = new RequestUnion();
  const statusCounts: Record<string, number> = {};
  const errorCounts: Record<string, number> = {};
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
      earliestMs = Math.min(earliestMs, startMs);
      latestMs = Math.max(latestMs, startMs);
      lastEndMs = Math.max(lastEndMs, startMs + latencyNs / 1e6);
      union.add({ startMs, latencyMs: latencyNs / 1e6, ok: code >= 200 && code < 300 });
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
  const requests = union.count;
  const completed = requests - transportErrors;
  const ok = okCount(statusCounts);
  const durationS = requests > 1 ? (latestMs - earliestMs) / 1_000 : null;
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
    latencyMs: union.latencyMs(),
    bytesIn,
    durationS,
    drainS: requests === 0 ? null : Math.max(0, (lastEndMs - latestMs) / 1_000),
    // Generator g walked stripe g from its start: the union is the stream's stripes.
    sent: { kind: "stripes", counts },
    timeline: union.timeline(
      `vegeta per-request results of ${runs.length} generators (\`vegeta encode\`), merged`,
    ),
    okLatencyMs: union.okLatencyMs(),
  };
}

/** Adds up the generators' own counts (each counted only its requests); a count any lacks stays null. */
function addedCounts(runs: ToolRun[]) {
  const total = (pick: (result: NormalizedResult) => number | null) => {
    const values = runs.map((run) => pick(run.result));
    return values.some((value) => value === null) ? null : (values as number[]).reduce((a, b) => a + b, 0);
  };
  const tally = (pick: (result: NormalizedResult) => Record<string, number> | null) => {
    const sum: Record<string, number> = {};
    for (const run of runs) {
      for (const [key, n] of Object.entries(pick(run.result) ?? {})) sum[key] = (sum[key] ?? 0) + n;
    }
    return sum;
  };
  return {
    requests: total((result) => result.requests),
    completed: total((result) => result.completed),
    ok: total((result) => result.ok),
    dropped: total((result) => result.droppedOrAborted),
    bytesIn: total((result) => result.bytesIn),
    statusCounts: tally((result) => result.statusCounts),
    errorCounts: tally((result) => result.errorCounts),
  };
}

/** k6 segments' runs as one result: counts added up, latencies from the union of their samples. */
export function mergeK6(runs: ToolRun[], plan: AttackPlan, toolVersion: string): NormalizedResult {
  const counts = addedCounts(runs);
  const union = new RequestUnion();
  for (const run of runs) {
    const read = outputReader("k6", run.raw);
    const rows = parseCsv(read.file(SAMPLES_FILE), { columns: true, skip_empty_lines: true }) as Record<
      string,
      string
    >[];
    for (const [i, row] of rows.entries()) {
      if (row.metric_name !== "http_req_duration") continue;
      const latencyMs = Number(row.metric_value);
      const endMs = Number(row.timestamp);
      if (!Number.isFinite(latencyMs) || !Number.isFinite(endMs)) {
        throw read.failure(`${SAMPLES_FILE} row ${i + 2} has no number: received ${JSON.stringify(row)}`);
      }
      const status = Number(row.status);
      // The sample is written when the response ends; its request started its duration earlier.
      union.add({ startMs: endMs - latencyMs, latencyMs, ok: status >= 200 && status < 300 });
    }
  }
  if (counts.requests !== union.count) {
    throw new Error(
      `Cannot merge k6 segments: their summaries count ${counts.requests} requests, their samples ${union.count}`,
    );
  }
  const durationS = Math.max(...runs.map((run) => run.result.durationS ?? 0)) || null;
  const completed = counts.completed;
  const model = plan.model;
  return {
    tool: "k6",
    toolVersion,
    model: model.kind,
    offeredRps: model.kind === "open" ? model.rateRps : (runs[0]?.result.offeredRps ?? null),
    requests: counts.requests,
    completed,
    ok: counts.ok,
    statusCounts: counts.statusCounts,
    errorCounts: counts.errorCounts,
    droppedOrAborted: counts.dropped,
    achievedRps: durationS && completed !== null ? completed / durationS : null,
    okRps: durationS && counts.ok !== null ? counts.ok / durationS : null,
    latencyMs: union.latencyMs(),
    bytesIn: counts.bytesIn,
    durationS,
    drainS: null,
    // iterationInTest is unique across segments: together they sent the list's first `requests` targets.
    sent: counts.requests === null ? null : { kind: "prefix", count: counts.requests },
    timeline: union.timeline(`k6 samples of ${runs.length} execution segments (--out csv), merged`),
    okLatencyMs: union.okLatencyMs(),
  };
}

/**
 * Runs `plan` from `generators` vegeta processes at once and merges them. `prefix(g)` is put before
 * generator g's command (a host: `ip netns exec <ns>`; none on this machine).
 */
export async function runGenerators(
  tool: Tool,
  plan: AttackPlan,
  options: RunToolOptions & {
    generators: number;
    /** Generator g's command prefix: the host it runs in (`ip netns exec …`); none by default. */
    prefix?: (generator: number) => string[];
  },
): Promise<{ result: NormalizedResult; runs: ToolRun[] }> {
  if (tool.name === "k6") {
    const { generators } = options;
    if (plan.model.kind !== "closed" && plan.maxConnections < generators) {
      // The rate splits by each segment's share of maxVUs: a segment without a VU would send nothing.
      throw new RangeError(
        `Cannot split k6 over ${generators} segments: maxVUs (maxConnections ${plan.maxConnections}) must be at least that`,
      );
    }
    const runs = await Promise.all(
      Array.from({ length: generators }, (_, index) =>
        runTool(tool, plan, {
          targets: options.targets,
          durationS: options.durationS,
          workDir: options.workDir,
          label: `${options.label}/gen-${index}`,
          detection: options.detection,
          signal: options.signal,
          segment: { index, of: generators },
          prefix: options.prefix?.(index),
        }),
      ),
    );
    return { result: mergeK6(runs, plan, options.detection.version ?? ""), runs };
  }
  if (tool.name !== "vegeta") {
    throw new RangeError(`Cannot run several ${tool.name} generators: only vegeta's and k6's splits merge`);
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
        prefix: options.prefix?.(share.index),
      }),
    ),
  );
  return { result: mergeVegeta(runs, plan, options.detection.version ?? ""), runs };
}

/**
 * The attack's load: one tool process beside the server, or one generator in each load-generator host,
 * its plan split by the tool's own mechanism and merged exactly (runGenerators above).
 */
export async function runLoad(
  tool: Tool,
  plan: AttackPlan,
  hosts: Host[],
  options: RunToolOptions,
): Promise<ToolRun> {
  if (hosts.length === 0) return runTool(tool, plan, options);
  const { result, runs } = await runGenerators(tool, plan, {
    ...options,
    generators: hosts.length,
    prefix: (generator) => (hosts[generator] as Host).command([]),
  });
  const first = runs[0] as ToolRun;
  return {
    result,
    raw: first.raw,
    argv: first.argv,
    dir: first.dir,
    ...(first.env ? { env: first.env } : {}),
    cpuS: runs.reduce((sum, part) => sum + part.cpuS, 0),
    wallS: Math.max(...runs.map((part) => part.wallS)),
  };
}
