/**
 * A capacity check as a search (lab/plan/search.ts): per regime (a workload with its server settings) and
 * strategy, the model's capacity (lab/model/capacity.ts) from the regime's base cells, with the load tool's
 * CPU counted because it shares the cores; then steps bisected from it (lab/plan/bisect.ts), each on a fresh
 * server, to the highest rate whose step holds: the load tool's p99 within the target and the row valid (no
 * error ratio past the limit, no dropped load). At the end, one row per regime and strategy beside the run's
 * CSV (capacities_csv.ts): measured against predicted, and the bound the model says binds.
 */
import type { StrategyName } from "../../server_config.ts";
import { type Capacity, capacityOf } from "../model/capacity.ts";
import { mixShares } from "../model/predict_row.ts";
import { allCosts, numeric, type Row, serverPercentileMs, withBorrowedL2 } from "../model/tier_costs.ts";
import { type Bisection, type BisectOptions, bisect } from "../plan/bisect.ts";
import type { ExperimentAttack } from "../plan/experiment_plan.ts";
import type { Search, SearchRow } from "../plan/search.ts";
import { appendCapacities, type CapacityRow, capacitiesMarkdown, capacitiesPath } from "./capacities_csv.ts";

export interface CapacityRegime {
  name: string;
  /** Its base cells, at a light rate: the prediction's costs. Named `<name>_base`. */
  base: ExperimentAttack;
  /** A step at `rateRps`, named `<name>_r<rate>`: the base's workload and settings at another rate and cost. */
  step: (rateRps: number) => ExperimentAttack;
  /**
   * Peak cells, named `<name>_peak`: the base's workload closed-loop until the cores are saturated, where the
   * model takes its CPU per request (capacityOf's `peak`). For a regime whose wall is the CPU.
   */
  peak?: ExperimentAttack;
}

export interface CapacitySpec {
  regimes: CapacityRegime[];
  p99TargetMs: number;
  /** The bisection's options; it starts at the prediction. */
  bisect: Omit<BisectOptions, "startRps">;
}

/** Whether a step held: valid (errors within the limit, no dropped load) and the load tool's p99 in the target. */
export function stepHeld(row: SearchRow, p99TargetMs: number): { held: boolean; why: string } {
  if (row.valid !== true) return { held: false, why: `invalid: ${row.invalid_reason ?? "no reason"}` };
  const p99 = numeric(row.latency_p99_ms);
  if (p99 === null) return { held: false, why: "no p99 measured" };
  const compared = p99 <= p99TargetMs ? "≤" : ">";
  return { held: p99 <= p99TargetMs, why: `p99 ${p99.toFixed(2)} ms ${compared} ${p99TargetMs} ms` };
}

const STEP = /^(.+)_r(\d+)$/;

/** A regime's steps of one strategy among `rows`, in the order they ran. */
function stepRows(rows: readonly SearchRow[], regime: string, strategy: string): SearchRow[] {
  return rows.filter((row) => row.strategy === strategy && STEP.exec(String(row.attack))?.[1] === regime);
}

/** The added round trip a regime's steps put on each database / Redis round trip, ms (the prediction's target). */
function addedMs(regime: CapacityRegime): { missCostMs: number; redisRttMs: number } {
  const network = regime.step(1).network ?? {};
  return {
    missCostMs: 2 * (network.postgres?.latencyMs ?? 0),
    redisRttMs: 2 * (network.redis?.latencyMs ?? 0),
  };
}

/** The model's capacity of `strategy` in `regime` from the regime's base rows, or why there is none. */
export function predictedCapacity(
  rows: readonly SearchRow[],
  regime: CapacityRegime,
  strategy: string,
  p99TargetMs: number,
): (Capacity & { cores: number; pgPoolMax: number }) | string {
  const base = rows.filter((row) => row.attack === regime.base.name) as Row[];
  const all = allCosts(base).costs;
  const found = all.find((costs) => costs.strategy === strategy);
  if (found === undefined) return `no valid ${regime.base.name} cell of ${strategy}`;
  const { costs } = withBorrowedL2(found, all);
  const mix = mixShares(base.find((row) => row.strategy === strategy)?.request_mix) ?? {
    writeRatio: 0,
    listShare: 0,
  };
  const cores = costs.cpuCount;
  const pgPoolMax = costs.pgPoolMax;
  if (cores === null || pgPoolMax === null) return `no cpu_count or pg_pool_max in ${regime.base.name}`;
  const peakName = regime.peak?.name;
  const peak =
    peakName === undefined
      ? undefined
      : allCosts(rows.filter((row) => row.attack === peakName) as Row[]).costs;
  // The hit ratio the steps will see: the more keys a cell sends, the warmer its cache, so steps near the
  // wall see the peak cells' (their simulation's, a planned figure), not the base's at 1 000 rps.
  const warm = peak?.find((c) => c.strategy === strategy) ?? costs;
  const target = {
    ...addedMs(regime),
    hitRatio: warm.hitRatioExpected,
    l1HitRatio: warm.l1HitRatioExpected,
    ...mix,
  };
  const capacity = capacityOf(costs, all, {
    target,
    cores,
    pgPoolMax,
    p99TargetMs,
    loadgenShares: true,
    ...(peak === undefined ? {} : { peak }),
  });
  return { ...capacity, cores, pgPoolMax };
}

type Predicted = ReturnType<typeof predictedCapacity>;

/** Where one regime's search of one strategy stands, from its prediction: its next rate, or its answer. */
function searchState(
  rows: readonly SearchRow[],
  regime: CapacityRegime,
  strategy: string,
  spec: CapacitySpec,
  predicted: Predicted,
): Bisection {
  const steps = stepRows(rows, regime.name, strategy).map((row) => ({
    rateRps: numeric(row.offered_rps) ?? 0,
    held: stepHeld(row, spec.p99TargetMs).held,
  }));
  // Without a prediction (an invalid base cell, or a target the model says no rate holds), the search starts
  // at twice the base's rate.
  const baseRps = regime.base.model.kind === "open" ? regime.base.model.rateRps : spec.bisect.minRps;
  const known = typeof predicted === "string" ? null : predicted.rps;
  const startRps = known !== null && known > 0 ? known : 2 * baseRps;
  return bisect(steps, { ...spec.bisect, startRps });
}

const round = (value: number | null, digits: number) =>
  value === null ? null : Math.round(value * 10 ** digits) / 10 ** digits;

/** The server's own p99 of a row: its outcomes' histograms pooled (null without them). */
function serverP99(row: SearchRow | undefined): number | null {
  return row === undefined ? null : round(serverPercentileMs(row as Row, 99), 2);
}

/** One row per regime and strategy of a run: the search's answer beside the prediction. */
export function capacityRows(
  rows: readonly SearchRow[],
  spec: CapacitySpec,
  strategies: string[],
): CapacityRow[] {
  return spec.regimes.flatMap((regime) =>
    strategies.map((strategy): CapacityRow => {
      const predicted = predictedCapacity(rows, regime, strategy, spec.p99TargetMs);
      const state = searchState(rows, regime, strategy, spec, predicted);
      const steps = stepRows(rows, regime.name, strategy);
      // A rate run twice (a break confirmed): the row that gave the verdict, the last that broke or one that held.
      const at = (rps: number | null, held: boolean) =>
        steps
          .filter((row) => rps !== null && numeric(row.offered_rps) === rps)
          .findLast((row) => stepHeld(row, spec.p99TargetMs).held === held);
      const capacity = typeof predicted === "string" ? null : predicted;
      const held = state.done ? state.heldRps : null;
      const broken = state.done ? state.brokenRps : null;
      const first = rows.find((row) => row.attack === regime.base.name);
      return {
        run_id: String(first?.run_id ?? rows[0]?.run_id ?? ""),
        experiment: String(first?.experiment ?? ""),
        regime: regime.name,
        strategy,
        p99_target_ms: spec.p99TargetMs,
        pg_pool_max: capacity?.pgPoolMax ?? null,
        miss_cost_added_ms: addedMs(regime).missCostMs,
        cores: capacity?.cores ?? null,
        steps: steps.length,
        held_rps: held,
        held_p99_ms: round(numeric(at(held, true)?.latency_p99_ms), 2),
        held_srv_p99_ms: serverP99(at(held, true)),
        broken_rps: broken,
        broken_p99_ms: round(numeric(at(broken, false)?.latency_p99_ms), 2),
        broken_srv_p99_ms: serverP99(at(broken, false)),
        predicted_rps: round(capacity?.rps ?? null, 0),
        predicted_bound: capacity?.bound ?? null,
        predicted_reason: typeof predicted === "string" ? predicted : (predicted.reason ?? null),
        predicted_cpu_rps: round(capacity?.bounds.cpu ?? null, 0),
        predicted_event_loop_rps: round(capacity?.bounds.event_loop ?? null, 0),
        predicted_pool_rps: round(capacity?.bounds.pool ?? null, 0),
        predicted_redis_rps: round(capacity?.bounds.redis ?? null, 0),
        measured_over_predicted: held !== null && capacity?.rps ? round(held / capacity.rps, 3) : null,
        search_end: state.done ? state.reason : "not finished",
      };
    }),
  );
}

/** The search a capacity check runs: next steps from the rows, each step's verdict, the answer at the end. */
export function capacitySearch(spec: CapacitySpec): Search {
  const stepS = Math.max(0, ...spec.regimes.map((r) => r.step(1).warmupS + r.step(1).durationS));
  const { widen, tolerance, maxSteps, confirm = 1 } = spec.bisect;
  // A prediction depends on the base cells alone: made once they are all in, not at every step.
  const predictions = new Map<string, Predicted>();
  const predict = (rows: readonly SearchRow[], regime: CapacityRegime, strategy: string) => {
    const cells = (name: string | undefined) => rows.filter((row) => row.attack === name).length;
    const key = `${regime.name}/${strategy}/${cells(regime.base.name)}/${cells(regime.peak?.name)}`;
    const made = predictions.get(key) ?? predictedCapacity(rows, regime, strategy, spec.p99TargetMs);
    predictions.set(key, made);
    return made;
  };
  return {
    plan:
      `per regime (${spec.regimes.map((r) => r.name).join(", ")}), the rate bisected from the predicted capacity ` +
      `(× ${widen}, × ${widen ** 2}, × ${widen ** 4}… outwards until one holds and one breaks, then the middle, ` +
      `to ${tolerance * 100}%${confirm > 1 ? `, a break that bounds it run ${confirm} times` : ""}; at most ` +
      `${maxSteps} steps), a step held when valid with the load tool's p99 ≤ ${spec.p99TargetMs} ms`,
    maxStepsPerStrategy: spec.regimes.length * maxSteps,
    stepS,
    next: (strategy: StrategyName, rows) =>
      spec.regimes.flatMap((regime) => {
        const state = searchState(rows, regime, strategy, spec, predict(rows, regime, strategy));
        return state.done ? [] : [regime.step(state.rateRps)];
      }),
    verdict: (row) => {
      const regime = STEP.exec(String(row.attack))?.[1];
      if (!spec.regimes.some((r) => r.name === regime)) return null;
      const { held, why } = stepHeld(row, spec.p99TargetMs);
      return `capacity step ${regime} at ${row.offered_rps} rps ${held ? "held" : "broke"}: ${why}`;
    },
    finish: (rows, run) => {
      const strategies = [...new Set(rows.map((row) => String(row.strategy)))];
      const capacities = capacityRows(rows, spec, strategies);
      const path = capacitiesPath(run.csvPath);
      appendCapacities(path, capacities);
      for (const line of capacitiesMarkdown(capacities)) run.log(line);
      run.log(`capacities appended to ${path}`);
    },
  };
}
