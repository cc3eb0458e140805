/**
 * The same plan at cluster scale with the k6 operator (grafana/k6-operator, `TestRun` v1alpha1): the export
 * writes the script cachelab runs locally, its targets, a ConfigMap holding both and a `TestRun` that runs
 * them on `parallelism` pods. The operator gives runner i of N `--execution-segment=(i-1)/N:i/N` with the full
 * `--execution-segment-sequence` (FACTS §7), the same split lab/load/distributed.ts uses locally, so the pods
 * together send exactly one process's schedule (the script sends target `iterationInTest % n`). Each runner
 * writes every sample as JSON lines (`--out json=…`); `importK6Json` merges those files into the normalized
 * result: counts from the `http_reqs` points, percentiles (nearest rank) and the timeline from the union of
 * the `http_req_duration` points, never from per-pod summaries.
 *
 *   bun run attack --export k6-operator --parallelism 4 --url … --rate 20000 --out deploy/
 *   kubectl apply -f deploy/configmap.yaml -f deploy/testrun.yaml
 *   kubectl cp <runner pod>:/home/k6/cachelab-samples.json …   # one file per runner, then:
 *   bun run attack --import k6-json run-1.json run-2.json … --url … --rate 20000 [--json]
 */
import type { AttackPlan, NormalizedResult, Target } from "../plan/attack_plan.ts";
import { RequestUnion } from "./request_timeline.ts";
import { okCount } from "./tools/_parse.ts";
import { k6Options, SCRIPT_FILE, script, TARGETS_FILE } from "./tools/k6_script.ts";

/** The operator version whose published CRD the export is validated against (lab/load/testdata). */
export const K6_OPERATOR_VERSION = "v1.6.0";
/** Where each runner pod writes its samples (the k6 image's home directory is writable). */
export const SAMPLES_PATH = "/home/k6/cachelab-samples.json";
/** A ConfigMap holds at most 1 MiB; the script and the targets must fit with room for the manifest. */
const CONFIG_MAP_LIMIT_BYTES = 1_000_000;

export interface K6OperatorExport {
  /** File name → content: script.js, targets.json, configmap.yaml, testrun.yaml. */
  files: Record<string, string>;
  testRun: Record<string, unknown>;
}

/**
 * The plan as k6-operator manifests. `name` names the TestRun and its ConfigMap (a DNS label). Throws when
 * the targets do not fit a ConfigMap (use fewer targets: the list is replayed from its start in order).
 */
export function exportK6Operator(
  plan: AttackPlan,
  targets: Target[],
  options: {
    parallelism: number;
    name: string;
    namespace?: string;
    /** The k6 version the runner pods run (grafana/k6:VERSION), so the import's rows name it; else the operator's default image. */
    k6Version?: string | null;
  },
): K6OperatorExport {
  const { parallelism, name } = options;
  if (!(Number.isInteger(parallelism) && parallelism >= 1)) {
    throw new RangeError(
      `Cannot export for the k6 operator: parallelism must be a positive integer: received ${parallelism}`,
    );
  }
  if (!/^[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?$/.test(name)) {
    throw new RangeError(`Cannot export for the k6 operator: the name must be a DNS label: received ${name}`);
  }
  if (plan.model.kind !== "closed" && plan.maxConnections < parallelism) {
    // The rate splits by each segment's share of maxVUs: a runner without a VU would send nothing.
    throw new RangeError(
      `Cannot export for the k6 operator: maxConnections (maxVUs, ${plan.maxConnections}) must be at least parallelism (${parallelism})`,
    );
  }
  const k6Script = script(k6Options(plan, plan.durationS), {
    headers: plan.headers,
    timeoutMs: Math.round(plan.timeoutS * 1_000),
  });
  const targetsJson = JSON.stringify(targets);
  const size = Buffer.byteLength(k6Script) + Buffer.byteLength(targetsJson);
  if (size > CONFIG_MAP_LIMIT_BYTES) {
    throw new RangeError(
      `Cannot export for the k6 operator: the script and ${targets.length} targets take ${size} bytes, more than a ConfigMap holds (1 MiB); export fewer targets`,
    );
  }
  const metadata = { name, ...(options.namespace ? { namespace: options.namespace } : {}) };
  const configMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata,
    data: { [SCRIPT_FILE]: k6Script, [TARGETS_FILE]: targetsJson },
  };
  const testRun = {
    apiVersion: "k6.io/v1alpha1",
    kind: "TestRun",
    metadata,
    spec: {
      parallelism,
      // Runners on separate nodes, so one node's network or CPU does not hold back the others.
      separate: true,
      script: { configMap: { name, file: SCRIPT_FILE } },
      arguments: `--out json=${SAMPLES_PATH} --no-usage-report`,
      ...(options.k6Version ? { runner: { image: `grafana/k6:${options.k6Version}` } } : {}),
      cleanup: "post",
    },
  };
  return {
    files: {
      [SCRIPT_FILE]: k6Script,
      [TARGETS_FILE]: targetsJson,
      "configmap.yaml": `${Bun.YAML.stringify(configMap, null, 2)}\n`,
      "testrun.yaml": `${Bun.YAML.stringify(testRun, null, 2)}\n`,
    },
    testRun,
  };
}

/**
 * Why the files are not one TestRun's runners, each once, or null: every file must hold one runner's samples
 * (one instance_id tag), no runner twice (a file given twice would double every count), and the runners
 * 1..N with none missing (a missing pod's share would read as dropped load). Files without the tag (a k6 run
 * outside the operator) are taken as they are.
 */
function checkRunners(runners: Set<string>[]): string | null {
  if (runners.every((ids) => ids.size === 0)) return null;
  const ids: number[] = [];
  for (const [file, found] of runners.entries()) {
    if (found.size !== 1) {
      return `file ${file + 1} holds ${found.size === 0 ? "no instance_id tag" : `the samples of runners ${[...found].join(", ")}`}: expected one runner's`;
    }
    ids.push(Number([...found][0]));
  }
  const seen = new Set<number>();
  for (const [file, id] of ids.entries()) {
    if (seen.has(id))
      return `runner ${id}'s samples are given twice (file ${file + 1} again): its requests would count twice`;
    seen.add(id);
  }
  const missing = Array.from({ length: Math.max(...ids) }, (_, i) => i + 1).filter((id) => !seen.has(id));
  if (missing.length > 0)
    return `runner${missing.length === 1 ? "" : "s"} ${missing.join(", ")} of at least ${Math.max(...ids)} missing: every runner's file is needed`;
  return null;
}

/** k6's JSON output: one object per line; a sample is `{"type":"Point","metric":…,"data":{time,value,tags}}`. */
interface Point {
  type: string;
  metric: string;
  data: { time: string; value: number; tags?: Record<string, string> };
}

/**
 * Runner outputs (`--out json`, one file's text per runner) → one normalized result. Percentiles are the
 * nearest ranks over every runner's `http_req_duration` points; the send window runs from the first
 * request's start to the last one's, as vegeta computes it.
 */
export function importK6Json(outputs: string[], plan: AttackPlan, toolVersion: string): NormalizedResult {
  if (outputs.length === 0) throw new RangeError("Cannot import k6 output: no file");
  const union = new RequestUnion();
  const statusCounts: Record<string, number> = {};
  const errorCounts: Record<string, number> = {};
  let reqs = 0;
  let dropped = 0;
  let bytesIn = 0;
  let firstStartMs = Number.POSITIVE_INFINITY;
  let lastStartMs = Number.NEGATIVE_INFINITY;
  // The runner each file came from (the operator tags runner i's samples instance_id=i).
  const runners = outputs.map(() => new Set<string>());
  outputs.forEach((text, file) => {
    text.split("\n").forEach((line, index) => {
      if (line === "") return;
      let parsed: Point;
      try {
        parsed = JSON.parse(line) as Point;
      } catch {
        throw new Error(`Cannot import k6 output: file ${file + 1} line ${index + 1} is not JSON`);
      }
      if (parsed.type !== "Point") return;
      const { value, time, tags = {} } = parsed.data;
      if (tags.instance_id !== undefined) runners[file]?.add(tags.instance_id);
      if (parsed.metric === "http_reqs") {
        reqs += value;
        const status = tags.status ?? "0";
        if (status === "0") {
          const code = tags.error_code ?? "unknown";
          errorCounts[`error_code ${code}`] = (errorCounts[`error_code ${code}`] ?? 0) + value;
        } else statusCounts[status] = (statusCounts[status] ?? 0) + value;
      } else if (parsed.metric === "http_req_duration") {
        const endMs = Date.parse(time);
        if (!Number.isFinite(endMs) || !Number.isFinite(value)) {
          throw new Error(`Cannot import k6 output: file ${file + 1} line ${index + 1} has no time or value`);
        }
        const status = Number(tags.status ?? 0);
        const startMs = endMs - value;
        firstStartMs = Math.min(firstStartMs, startMs);
        lastStartMs = Math.max(lastStartMs, startMs);
        union.add({ startMs, latencyMs: value, ok: status >= 200 && status < 300 });
      } else if (parsed.metric === "dropped_iterations") {
        dropped += value;
      } else if (parsed.metric === "data_received") {
        bytesIn += value;
      }
    });
  });
  if (reqs !== union.count) {
    throw new Error(
      `Cannot import k6 output: ${reqs} http_reqs points but ${union.count} http_req_duration points`,
    );
  }
  const runnerProblem = checkRunners(runners);
  if (runnerProblem !== null) throw new Error(`Cannot import k6 output: ${runnerProblem}`);
  const transportErrors = Object.values(errorCounts).reduce((a, b) => a + b, 0);
  const completed = reqs - transportErrors;
  const ok = okCount(statusCounts);
  const durationS = reqs > 1 ? (lastStartMs - firstStartMs) / 1_000 : null;
  const model = plan.model;
  return {
    tool: "k6",
    toolVersion,
    model: model.kind,
    offeredRps: model.kind === "open" ? model.rateRps : null,
    requests: reqs,
    completed,
    ok,
    statusCounts,
    errorCounts,
    droppedOrAborted: model.kind === "closed" ? null : dropped,
    achievedRps: durationS ? completed / durationS : null,
    okRps: durationS ? ok / durationS : null,
    latencyMs: union.latencyMs(),
    bytesIn,
    durationS,
    drainS: null,
    sent: { kind: "prefix", count: reqs },
    timeline: union.timeline(`k6 JSON output of ${outputs.length} runners (--out json), merged`),
    okLatencyMs: union.okLatencyMs(),
  };
}
