/**
 * The same plan at cluster scale with the k6 operator (grafana/k6-operator, `TestRun` v1alpha1): the export
 * writes the plan's k6 script, a ConfigMap holding it and a `TestRun` that runs it on `parallelism` pods. The
 * operator gives runner i of N `--execution-segment=(i-1)/N:i/N` with the full `--execution-segment-sequence`
 * (FACTS §7), the same split lab/load/distributed.ts uses locally, so the pods together send exactly one
 * process's schedule (the script sends stream position `iterationInTest`). A synthetic key stream is
 * generated in the script from its seed (lab/load/k6_stream.ts), so the ConfigMap holds the script alone
 * at any size; a trace cannot be, and goes beside it as targets.json, in the ConfigMap when it fits, else
 * on a PersistentVolumeClaim (`--volume-claim`). Each runner writes every sample as JSON lines
 * (`--out json=…`); `importK6Json` merges those files into the normalized result: counts from the
 * `http_reqs` points, percentiles (nearest rank) and the timeline from the union of the
 * `http_req_duration` points, never from per-pod summaries.
 *
 *   bun run attack --export k6-operator --parallelism 4 --url … --rate 20000 --out deploy/
 *   kubectl apply -f deploy/configmap.yaml -f deploy/testrun.yaml
 *   kubectl cp <runner pod>:/home/k6/cachelab-samples.json …   # one file per runner, then:
 *   bun run attack --import k6-json run-1.json run-2.json … --url … --rate 20000 [--json]
 */
import type { AttackPlan, NormalizedResult } from "../plan/attack_plan.ts";
import { generateTargets } from "../plan/targets.ts";
import { streamRefusal, streamScript } from "./k6_stream.ts";
import { RequestUnion } from "./request_timeline.ts";
import { okCount } from "./tools/_parse.ts";
import { countingThresholds, k6Options, SCRIPT_FILE, script, TARGETS_FILE } from "./tools/k6_script.ts";

/** The operator version whose published CRD the export is validated against (lab/load/testdata). */
export const K6_OPERATOR_VERSION = "v1.6.0";
/** Where each runner pod writes its samples (the k6 image's home directory is writable). */
export const SAMPLES_PATH = "/home/k6/cachelab-samples.json";
/** A ConfigMap holds at most 1 MiB; the script (and a trace's targets) must fit with room for the manifest. */
export const CONFIG_MAP_LIMIT_BYTES = 1_000_000;

export interface K6OperatorExport {
  /** File name → content: script.js, targets.json (a trace only), configmap.yaml (unless on a claim), testrun.yaml. */
  files: Record<string, string>;
  testRun: Record<string, unknown>;
  /** Whether the script generates the stream from its seed (else it replays targets.json). */
  generated: boolean;
  /** The bytes of the runners' files (the ConfigMap's data, or what goes onto the claim). */
  dataBytes: number;
}

/**
 * The plan as k6-operator manifests. `name` names the TestRun and its ConfigMap (a DNS label). Throws when a
 * trace's targets do not fit a ConfigMap and no `volumeClaim` holds them.
 */
export async function exportK6Operator(
  plan: AttackPlan,
  options: {
    parallelism: number;
    name: string;
    namespace?: string;
    /** The k6 version the runner pods run (grafana/k6:VERSION), so the import's rows name it; else the operator's default image. */
    k6Version?: string | null;
    /** A PersistentVolumeClaim the user copies the files onto: the TestRun reads the script from it, no ConfigMap. */
    volumeClaim?: string;
  },
): Promise<K6OperatorExport> {
  const { parallelism, name, volumeClaim } = options;
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
  // The import reads every sample, never the summary: the per-second sub-metrics would only cost the runners
  // CPU (3 × (seconds + 2) checks per request) and the ConfigMap ~200 bytes per second of the run.
  const k6Opts = { ...k6Options(plan, plan.durationS), thresholds: countingThresholds() };
  const params = { headers: plan.headers, timeoutMs: Math.round(plan.timeoutS * 1_000) };
  const refusal = streamRefusal(plan);
  const files: Record<string, string> =
    refusal === null
      ? { [SCRIPT_FILE]: await streamScript(plan, k6Opts, params) }
      : { [SCRIPT_FILE]: script(k6Opts, params), [TARGETS_FILE]: JSON.stringify(generateTargets(plan)) };
  const dataBytes = Object.values(files).reduce((sum, text) => sum + Buffer.byteLength(text), 0);
  if (volumeClaim === undefined && dataBytes > CONFIG_MAP_LIMIT_BYTES) {
    const why =
      refusal === null
        ? `the script takes ${dataBytes} bytes`
        : `${refusal}, so its ${plan.targetCount} targets go beside the script as ${TARGETS_FILE}, and the two take ${dataBytes} bytes`;
    throw new RangeError(
      `Cannot export for the k6 operator: ${why}, more than a ConfigMap holds (1 MiB): pass --volume-claim NAME and copy ${Object.keys(files).join(" and ")} onto that PersistentVolumeClaim, or send fewer requests (--rate, --duration)`,
    );
  }
  const metadata = { name, ...(options.namespace ? { namespace: options.namespace } : {}) };
  const testRun = {
    apiVersion: "k6.io/v1alpha1",
    kind: "TestRun",
    metadata,
    spec: {
      parallelism,
      // Runners on separate nodes, so one node's network or CPU does not hold back the others.
      separate: true,
      // The operator mounts either at /test; the script opens ./targets.json beside itself.
      script:
        volumeClaim === undefined
          ? { configMap: { name, file: SCRIPT_FILE } }
          : { volumeClaim: { name: volumeClaim, file: SCRIPT_FILE, readOnly: true } },
      arguments: `--out json=${SAMPLES_PATH} --no-usage-report`,
      ...(options.k6Version ? { runner: { image: `grafana/k6:${options.k6Version}` } } : {}),
      cleanup: "post",
    },
  };
  const manifests: Record<string, string> = { "testrun.yaml": `${Bun.YAML.stringify(testRun, null, 2)}\n` };
  if (volumeClaim === undefined) {
    const configMap = { apiVersion: "v1", kind: "ConfigMap", metadata, data: files };
    manifests["configmap.yaml"] = `${Bun.YAML.stringify(configMap, null, 2)}\n`;
  }
  return { files: { ...files, ...manifests }, testRun, generated: refusal === null, dataBytes };
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
