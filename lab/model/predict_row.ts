/**
 * The model applied to a results row: the target's plan (its added round trips, request mix, rate, pool)
 * and simulation read from its columns, and its prediction from base rows measured before it
 * (lab/model/predict.ts), as the runner writes it into predicted_mean_ms / predicted_p99_ms.
 */
import { predictStrategy, type Target } from "./predict.ts";
import { isStrategy } from "./round_trips.ts";
import { addedMs, numeric, type Row, strategyCosts, withBorrowedL2 } from "./tier_costs.ts";

const WRITE_METHOD = /^(PUT|POST|PATCH|DELETE) /;

/** The write share of requests and the list share of reads in a row's request_mix ("name:w:METHOD path | …"). */
export function mixShares(requestMix: unknown): { writeRatio: number; listShare: number } | null {
  if (typeof requestMix !== "string" || requestMix.trim() === "") return null;
  let total = 0;
  let writes = 0;
  let lists = 0;
  for (const part of requestMix.split(" | ")) {
    const match = /^[^:]*:([\d.]+):(.+)$/.exec(part.trim());
    if (!match) return null;
    const weight = Number(match[1]);
    const request = match[2] as string;
    total += weight;
    if (WRITE_METHOD.test(request)) writes += weight;
    else if (/^GET \/products\?/.test(request)) lists += weight;
  }
  if (!(total > 0)) return null;
  const reads = total - writes;
  return { writeRatio: writes / total, listShare: reads > 0 ? lists / reads : 0 };
}

/** A target row's plan and simulation values as a Target (M and R default to 0: direct paths). */
export function targetOf(row: Row): Target | string {
  const mix = mixShares(row.request_mix);
  if (mix === null) return `request_mix not understood: ${String(row.request_mix)}`;
  // The plan's figures only: the pings measured inside the cell are a column, never an input.
  return {
    missCostMs: addedMs(row, "postgres"),
    redisRttMs: addedMs(row, "redis"),
    hitRatio: numeric(row.hit_ratio_expected),
    l1HitRatio: numeric(row.l1_hit_ratio_expected),
    rateRps: row.load_model === "open" ? numeric(row.offered_rps) : null,
    pgPoolMax: numeric(row.pg_pool_max),
    poolHolds: (numeric(row.pg_queue_max) ?? 0) > 0 || (numeric(row.pg_acquire_timeout_ms) ?? 0) > 0,
    ...mix,
  };
}

export type RowPrediction =
  | {
      predictedMeanMs: number;
      /** Null with its reason in p99Reason (base rows without histograms, or outside the model). */
      predictedP99Ms: number | null;
      p99Reason: string | null;
      predictedFrom: string;
      reason: null;
    }
  | { predictedMeanMs: null; predictedP99Ms: null; p99Reason: null; predictedFrom: null; reason: string };

function none(reason: string): RowPrediction {
  return { predictedMeanMs: null, predictedP99Ms: null, p99Reason: null, predictedFrom: null, reason };
}

/**
 * What main writes into a row's predicted_mean_ms / predicted_from: the target row's strategy predicted
 * at its plan (miss_cost_ms, redis_rtt_ms, request_mix) and simulation (hit_ratio_expected,
 * l1_hit_ratio_expected) from base rows: by default the `<attack>_base` cells of the same run among
 * `runRows` (the run's rows so far), or with `from` the named earlier run's rows (its `<attack>_base`
 * cells if it has them, else `from.attack`, else the target's attack). A base cell itself gets no
 * prediction: its costs are the model's input.
 */
export function predictRow(
  runRows: Row[],
  target: Row,
  options: { from?: { rows: Row[]; runId: string; attack?: string } } = {},
): RowPrediction {
  const strategy = target.strategy;
  if (!isStrategy(strategy)) return none(`unknown strategy ${String(strategy)}`);
  const attack = String(target.attack ?? "");
  if (attack.endsWith("_base")) return none(`${attack} is a base cell: its costs are the model's input`);
  const from = options.from;
  const runId = from ? from.runId : String(target.run_id ?? "");
  const pool = (from ? from.rows : runRows).filter((row) => String(row.run_id ?? "") === runId);
  const twin = `${attack}_base`;
  const baseAttack = pool.some((row) => row.attack === twin) ? twin : from ? (from.attack ?? attack) : null;
  if (baseAttack === null)
    return none(`no ${twin} cells in run ${runId} (nothing added, no base to predict from)`);
  const base = pool.filter((row) => row.attack === baseAttack);
  const own = strategyCosts(base, strategy);
  if (typeof own === "string") return none(`${baseAttack} of run ${runId}: ${own}`);
  // two_tier's and tracking's L1 may have answered every hit in the base: redis's Redis hit stands in.
  const redis = strategyCosts(base, "redis");
  const costs = withBorrowedL2(own, typeof redis === "string" ? [] : [redis]).costs;
  const wanted = targetOf(target);
  if (typeof wanted === "string") return none(wanted);
  const prediction = predictStrategy(costs, wanted);
  if (typeof prediction === "string") return none(`${baseAttack} of run ${runId}: ${prediction}`);
  if (prediction.outside !== null) return none(`outside the model: ${prediction.outside}`);
  return {
    predictedMeanMs: prediction.meanMs,
    predictedP99Ms: prediction.p99Step === null ? prediction.p99Ms : null,
    p99Reason:
      prediction.p99Step === null ? prediction.p99Reason : `outside the model: ${prediction.p99Step}`,
    predictedFrom: `${baseAttack} of run ${runId} (${costs.repeats} valid repeat${costs.repeats === 1 ? "" : "s"})`,
    reason: null,
  };
}
