/** The shape every load tool module (`lab/load/tools/<tool>.ts`) satisfies; `lab/load/run_attack.ts` drives them. */
import type {
  AttackPlan,
  LatencyMs,
  LoadModel,
  NormalizedResult,
  Target,
  ToolName,
} from "../plan/attack_plan.ts";
import type { PrometheusRw } from "./tools/k6_prometheus.ts";

export interface Detection {
  installed: boolean;
  /** Exact version, e.g. "1.15.0"; null when not installed. */
  version: string | null;
  /** Absolute path of the binary (or entry script). */
  path: string | null;
  /** The command that installs the pinned version. */
  install: string;
}

/** What `bun run tools` prints: what the tool can run faithfully. */
export interface Capabilities {
  models: LoadModel["kind"][];
  /** Several methods/bodies in one run (e.g. 90% GET + 10% PUT). */
  mixedMethods: boolean;
  /** Which latency fields the tool can fill. */
  percentiles: (keyof LatencyMs)[];
  /** Whether statusCounts is filled. */
  statusCounts: boolean;
  /**
   * How the tool walks the list of targets it is handed: `prefix`, in order from the first (vegeta, k6);
   * `stripes`, one stripe per thread or connection, each in order (wrk, autocannon); `sampled`, a uniform
   * draw with replacement per request (oha), which needs a much longer list to stay a fresh stream.
   */
  sends: "prefix" | "stripes" | "sampled";
  /** The smallest latency step the tool records: a percentile below it reads "< resolution", never 0. */
  latencyResolutionMs: number;
  /**
   * Whether the result has a per-second timeline (NormalizedResult.timeline) from the tool's own
   * per-request output; `notes` says what it holds, or why there is none.
   */
  timeline: boolean;
  notes: string;
}

/** A command line plus the input files it reads, all inside `workDir`. */
export interface PreparedRun {
  argv: string[];
  /** File name (relative to workDir) → content, written before the run. */
  files: Record<string, string>;
  env?: Record<string, string>;
  /** Files (relative to workDir) the tool writes and `parse` reads. */
  outputs: string[];
}

export interface RawOutput {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  /** Contents of PreparedRun.outputs that exist after the run (file name → text). */
  outputs: Record<string, string>;
}

export interface RunContext {
  plan: AttackPlan;
  /** The measured duration of this run (the warm-up run uses warmupS). */
  durationS: number;
  toolVersion: string;
  /**
   * k6 only: run segment `index` of `of` equal execution segments (`--execution-segment`, with the full
   * `--execution-segment-sequence`), writing every sample to samples.csv for an exact merge.
   */
  segment?: { index: number; of: number };
  /** k6 only: also send k6's own metrics to a Prometheus remote-write endpoint (tools/k6_prometheus.ts). */
  prometheusRw?: PrometheusRw;
}

export interface Tool {
  name: ToolName;
  capabilities: Capabilities;
  detect(): Promise<Detection>;
  /** Why this tool cannot run `plan` faithfully, or null when it can. Never approximate silently. */
  refusal(plan: AttackPlan): string | null;
  prepare(targets: Target[], context: RunContext & { workDir: string; binary: string }): PreparedRun;
  /** Pure: raw output → normalized result; throws (never returns zeros) when the output cannot be read. */
  parse(raw: RawOutput, context: RunContext): NormalizedResult;
}
