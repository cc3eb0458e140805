/** Which installed tool runs every attack of an experiment faithfully, and which were skipped and why. */

import type { AttackPlan } from "../plan/attack_plan.ts";
import { attackPlan, type Experiment } from "../plan/experiment_plan.ts";
import { listSize } from "../plan/segments.ts";
import { traceRefusal } from "../trace/trace_plan.ts";
import { loadTools } from "./run_attack.ts";
import type { Detection, Tool } from "./tool.ts";

/** Why no list the tool can be handed keeps the plan's runs a fresh stream, or null. */
function streamRefusal(tool: Tool, plan: AttackPlan): string | null {
  const trace = traceRefusal(plan, tool.capabilities.sends);
  if (trace !== null) return trace;
  for (const durationS of [plan.warmupS, plan.durationS]) {
    if (durationS <= 0) continue;
    const size = listSize(tool.capabilities.sends, plan, durationS);
    if (typeof size === "string") return size;
  }
  return null;
}

/** Why `tool` cannot split the plan over its load-generator hosts and merge them exactly, or null. */
function generatorsRefusal(tool: Tool, plan: AttackPlan): string | null {
  if ((plan.loadgenHosts ?? 0) === 0 || tool.name === "vegeta" || tool.name === "k6") return null;
  return `${tool.name} cannot split one plan over ${plan.loadgenHosts} load-generator hosts and merge them exactly; vegeta (rate split) and k6 (execution segments) can`;
}

/** The tool: the first installed of the preference list that runs every attack without refusing. */
export async function chooseTool(
  experiment: Experiment,
  plans: AttackPlan[],
): Promise<{ tool: Tool; detection: Detection; skipped: string[] } | { refusal: string }> {
  const tools = await loadTools();
  const order = experiment.tools ?? tools.map((tool) => tool.name);
  const reasons: string[] = [];
  for (const name of order) {
    const tool = tools.find((candidate) => candidate.name === name);
    if (!tool) continue;
    const detection = await tool.detect();
    if (!detection.installed) {
      reasons.push(`${name}: not installed (${detection.install})`);
      continue;
    }
    const refusal = plans
      .map((plan) => tool.refusal(plan) ?? streamRefusal(tool, plan) ?? generatorsRefusal(tool, plan))
      .find((reason) => reason !== null);
    if (refusal) {
      reasons.push(`${name}: ${refusal}`);
      continue;
    }
    return { tool, detection, skipped: reasons };
  }
  return { refusal: `no tool can run this experiment faithfully:\n  ${reasons.join("\n  ")}` };
}

/**
 * The tool for the experiment, or, when none can run its models, for the attacks' declared fallback models
 * (said loudly: closed-model latency is not coordinated-omission safe). The experiment returned is the one
 * that runs.
 */
export async function chooseToolOrFallback(
  experiment: Experiment,
  baseUrls: string[],
  log: (line: string) => void,
): Promise<
  { experiment: Experiment; tool: Tool; detection: Detection; skipped: string[] } | { refusal: string }
> {
  const plans = (exp: Experiment) => exp.attacks.map((attack) => attackPlan(attack, exp, baseUrls));
  const chosen = await chooseTool(experiment, plans(experiment));
  if (!("refusal" in chosen)) return { experiment, ...chosen };
  if (!experiment.attacks.some((attack) => attack.fallbackModel)) return chosen;
  const fallback = {
    ...experiment,
    attacks: experiment.attacks.map((attack) => ({ ...attack, model: attack.fallbackModel ?? attack.model })),
  };
  const second = await chooseTool(fallback, plans(fallback));
  if ("refusal" in second) return second;
  log(
    `WARNING: ${chosen.refusal}\nRunning the fallback model instead (${JSON.stringify(fallback.attacks[0]?.model)}): ` +
      "closed-model latency is not coordinated-omission safe. Install oha, vegeta or k6 " +
      "(bash scripts/install-deps.sh) for the open model.",
  );
  return { experiment: fallback, ...second };
}
