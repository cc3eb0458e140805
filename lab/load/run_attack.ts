/**
 * attack → parse: runs one plan through one tool (warm-up run first, thrown away), keeps the raw output,
 * and returns the normalized result with the exact command line and the tool's CPU time.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AttackPlan, NormalizedResult, Target, ToolName } from "../plan/attack_plan.ts";
import { TargetStream } from "../plan/targets.ts";
import { signalGroup, waitGroupGone } from "../shared/process.ts";
import { traceRefusal } from "../trace/trace_plan.ts";
import type { Detection, RawOutput, Tool } from "./tool.ts";
import type { PrometheusRw } from "./tools/k6_prometheus.ts";

/** Tool modules in default-preference order: the first installed one is used when a plan names none. */
export async function loadTools(): Promise<Tool[]> {
  const modules = await Promise.all([
    import("./tools/oha.ts"),
    import("./tools/vegeta.ts"),
    import("./tools/k6.ts"),
    import("./tools/wrk.ts"),
    import("./tools/autocannon.ts"),
  ]);
  return modules.map((module) => module.tool);
}

export async function findTool(name: ToolName): Promise<Tool> {
  const tool = (await loadTools()).find((candidate) => candidate.name === name);
  if (!tool) throw new RangeError(`Cannot find tool ${name}`);
  return tool;
}

/** The first installed tool in preference order (autocannon is an npm dependency, so always there). */
export async function defaultTool(): Promise<{ tool: Tool; detection: Detection }> {
  for (const tool of await loadTools()) {
    const detection = await tool.detect();
    if (detection.installed) return { tool, detection };
  }
  throw new Error("Cannot find any load tool: run `bun install` (autocannon) or scripts/install-deps.sh");
}

/** What one run of a tool is given: its targets, how long, where its raw output goes, the tool found. */
export interface RunToolOptions {
  targets: Target[];
  durationS: number;
  workDir: string;
  label: string;
  detection: Detection;
  /** Aborting kills the tool (the runner's Ctrl-C). */
  signal?: AbortSignal;
}

export interface ToolRun {
  result: NormalizedResult;
  raw: RawOutput;
  argv: string[];
  /** Where it ran (its inputs, raw output and command.json), and the environment it had beside this one's. */
  dir: string;
  env?: Record<string, string>;
  /** User + system CPU seconds the tool's process used. */
  cpuS: number;
  wallS: number;
}

/**
 * How long a run may take before it is killed as hung: the attack, its last timeout, and as long again for
 * the tool's own post-processing (vegeta encodes every result; a closed-model run can hold hundreds of MB).
 */
function guardMs(plan: AttackPlan, durationS: number): number {
  return (2 * (durationS + plan.timeoutS) + 30) * 1_000;
}

/** How long a killed tool's group may take to be gone, its last zombies reaped by init included. */
const GROUP_GONE_MS = 10_000;

/** Kills the tool's whole group and returns once no process of it is left, zombies included. */
async function endGroup(tool: Tool, pid: number): Promise<void> {
  signalGroup(pid, "SIGKILL");
  if (!(await waitGroupGone(pid, GROUP_GONE_MS))) {
    throw new Error(
      `Cannot stop ${tool.name}: process group ${pid} still exists ${GROUP_GONE_MS} ms after SIGKILL`,
    );
  }
}

/** Runs the tool once for `durationS` seconds; raw output is written to `workDir/<label>.*`. */
export async function runTool(
  tool: Tool,
  plan: AttackPlan,
  options: RunToolOptions & {
    /** k6: one of several execution segments (lab/load/distributed.ts). */
    segment?: { index: number; of: number };
    /** Put before the tool's command: a host to run it in (`ip netns exec <namespace>`). */
    prefix?: string[];
    /** k6: also send its own metrics to this Prometheus remote-write endpoint. */
    prometheusRw?: PrometheusRw;
  },
): Promise<ToolRun> {
  const { detection } = options;
  if (!detection.installed || detection.path === null || detection.version === null) {
    throw new Error(`Cannot run ${tool.name}: not installed (install: ${detection.install})`);
  }
  // A listener added to a signal already aborted never fires: the tool would run its whole course.
  if (options.signal?.aborted) throw new Error(`Cannot run ${tool.name}: interrupted`);
  const refusal = tool.refusal(plan);
  if (refusal !== null) throw new RangeError(`Cannot run ${tool.name}: ${refusal}`);
  if (options.prometheusRw && tool.name !== "k6") {
    throw new RangeError(
      `Cannot send ${tool.name}'s metrics to Prometheus: only k6 has a remote-write output`,
    );
  }
  const runDir = join(options.workDir, options.label);
  // A fresh directory: an old run's output must never be parsed as this run's.
  rmSync(runDir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true });
  const context = {
    plan,
    durationS: options.durationS,
    toolVersion: detection.version,
    ...(options.segment ? { segment: options.segment } : {}),
    ...(options.prometheusRw ? { prometheusRw: options.prometheusRw } : {}),
  };
  const prepared = tool.prepare(options.targets, { ...context, workDir: runDir, binary: detection.path });
  for (const [name, content] of Object.entries(prepared.files)) writeFileSync(join(runDir, name), content);
  writeFileSync(join(runDir, "command.json"), `${JSON.stringify(prepared.argv)}\n`);
  // What the command line does not show: the settings a tool reads from its environment (k6's outputs).
  if (prepared.env) writeFileSync(join(runDir, "env.json"), `${JSON.stringify(prepared.env)}\n`);
  const startedMs = performance.now();
  // Its own process group: a tool may be a pipeline (vegeta attack | report | encode), and killing only the
  // shell would leave the tool running and holding our pipes open.
  const proc = Bun.spawn([...(options.prefix ?? []), ...prepared.argv], {
    cwd: runDir,
    env: { ...process.env, ...prepared.env },
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  const killGroup = () => signalGroup(proc.pid, "SIGKILL");
  const timer = setTimeout(killGroup, guardMs(plan, options.durationS));
  const abort = killGroup;
  options.signal?.addEventListener("abort", abort, { once: true });
  const [stdout, stderr] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
  ]);
  await proc.exited;
  clearTimeout(timer);
  options.signal?.removeEventListener("abort", abort);
  if (options.signal?.aborted) {
    // The runner exits right after this: nothing of the tool may be left for init to reap.
    await endGroup(tool, proc.pid);
    throw new Error(`Cannot finish ${tool.name}: interrupted`);
  }
  const wallS = (performance.now() - startedMs) / 1_000;
  const usage = proc.resourceUsage();
  const cpuS = usage ? Number(usage.cpuTime.user + usage.cpuTime.system) / 1e6 : Number.NaN;
  writeFileSync(join(runDir, "stdout.txt"), stdout);
  writeFileSync(join(runDir, "stderr.txt"), stderr);
  const outputs: Record<string, string> = {};
  for (const name of prepared.outputs) {
    try {
      outputs[name] = readFileSync(join(runDir, name), "utf8");
    } catch {
      // a missing output is the parser's to report
    }
  }
  const raw: RawOutput = { stdout, stderr, exitCode: proc.exitCode, outputs };
  await endGroup(tool, proc.pid); // nothing the tool started outlives it
  if (proc.signalCode === "SIGKILL") {
    throw new Error(
      `Cannot finish ${tool.name}: killed after ${guardMs(plan, options.durationS)} ms (raw output in ${runDir})`,
    );
  }
  return {
    result: tool.parse(raw, context),
    raw,
    argv: prepared.argv,
    dir: runDir,
    ...(prepared.env ? { env: prepared.env } : {}),
    cpuS,
    wallS,
  };
}

export interface AttackRun {
  warmup: ToolRun | null;
  measured: ToolRun;
  tool: Tool;
  detection: Detection;
  /** The measured run's list: the segment of the plan's stream after the warm-up's. */
  targets: Target[];
  /** The warm-up's list (the stream's first segment), empty without a warm-up. */
  warmupTargets: Target[];
}

/** The tool `runAttack` runs: the one named, else vegeta for a trace, else the first installed. */
export async function attackTool(
  plan: AttackPlan,
  name: ToolName | undefined,
): Promise<{ tool: Tool; detection: Detection }> {
  if (name === undefined && plan.keys.distribution.kind !== "trace") return defaultTool();
  const tool = await findTool(name ?? "vegeta");
  return { tool, detection: await tool.detect() };
}

/**
 * Warm-up (thrown away), then the measured run, each with its own segment of the plan's target stream:
 * `plan.targetCount` targets each, so the measured run never re-sends what the warm-up sent.
 */
export async function runAttack(
  plan: AttackPlan,
  options: {
    tool?: ToolName;
    workDir: string;
    signal?: AbortSignal;
    /** Called between the warm-up and the measured run (a server's counters taken there). */
    beforeMeasured?: () => Promise<void>;
    /** k6: the measured run (not the warm-up) also sends its own metrics to this Prometheus. */
    prometheusRw?: PrometheusRw;
  },
): Promise<AttackRun> {
  const { tool, detection } = await attackTool(plan, options.tool);
  const refusal = traceRefusal(plan, tool.capabilities.sends);
  if (refusal !== null) throw new RangeError(`Cannot replay the trace with ${tool.name}: ${refusal}`);
  const stream = new TargetStream(plan);
  const common = { workDir: options.workDir, detection, signal: options.signal };
  const warmupTargets = plan.warmupS > 0 ? stream.take(plan.targetCount) : [];
  const warmup =
    plan.warmupS > 0
      ? await runTool(tool, plan, {
          ...common,
          targets: warmupTargets,
          durationS: plan.warmupS,
          label: "warmup",
        })
      : null;
  const targets = stream.take(plan.targetCount);
  await options.beforeMeasured?.();
  const measured = await runTool(tool, plan, {
    ...common,
    targets,
    durationS: plan.durationS,
    label: "measured",
    ...(options.prometheusRw ? { prometheusRw: options.prometheusRw } : {}),
  });
  return { warmup, measured, tool, detection, targets, warmupTargets };
}
