/**
 * The card's check of the model: per strategy, the server-side mean and p99 lab/model predicted for the row
 * (predicted_mean_ms, predicted_p99_ms, filled at run time from base cells) against the ones measured
 * (srv_mean_ms; the p99 of the row's own srv_*_hist pooled), medians over the valid repeats, with the error
 * and a flag past MODEL_TOLERANCE (P99_TOLERANCE). How to read it: docs/card.md.
 */
import { serverPercentileMs } from "../model/tier_costs.ts";
import { median } from "./intervals.ts";
import type { ResultRow } from "./summary.ts";

/** A measured mean further than this share from its prediction is flagged. */
export const MODEL_TOLERANCE = 0.25;
/** A measured p99 further than this share from its prediction is flagged. */
export const P99_TOLERANCE = 0.35;

/** A row's server-side p99 from its own histograms (the outcomes pooled), or null without them. */
export function measuredP99Ms(row: ResultRow): number | null {
  return serverPercentileMs(row, 99);
}

/** Why a strategy's rows carry no predicted p99: their own reason (a step, outside the model), else no histograms. */
function p99Why(rows: ResultRow[]): string {
  const said = rows.map((row) => row.predicted_reason).find((r) => typeof r === "string" && r !== "");
  return typeof said === "string" ? said : "base rows without srv_*_hist";
}

function errorText(predicted: number, measured: number, tolerance: number): string {
  const error = measured / predicted - 1;
  const sign = error < 0 ? "−" : "+";
  const off = Math.abs(error) > tolerance;
  return `error ${sign}${Math.abs(error * 100).toFixed(0)}%${off ? ` — OFF: more than ${tolerance * 100}% from the model` : ""}`;
}

function numeric(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value)))
    return Number(value);
  return null;
}

function medianOf(rows: ResultRow[], column: string): number | null {
  return median(rows.map((row) => numeric(row[column])).filter((v): v is number => v !== null));
}

/** The lines, or none when no row carries both a prediction and a server-side mean. */
export function modelLines(rows: ResultRow[], strategies: string[]): string[] {
  const both = (row: ResultRow) =>
    numeric(row.predicted_mean_ms) !== null && numeric(row.srv_mean_ms) !== null;
  if (!rows.some(both)) return [];
  const lines: string[] = [];
  const means: { strategy: string; predicted: number; measured: number }[] = [];
  for (const strategy of strategies) {
    const valid = rows.filter((row) => row.strategy === strategy && row.valid === true && both(row));
    const predicted = medianOf(valid, "predicted_mean_ms");
    const measured = medianOf(valid, "srv_mean_ms");
    if (predicted === null || measured === null || predicted <= 0) continue;
    means.push({ strategy, predicted, measured });
    const p99Predicted = medianOf(valid, "predicted_p99_ms");
    const p99Measured = median(valid.map(measuredP99Ms).filter((v): v is number => v !== null));
    const p99 =
      p99Predicted !== null && p99Measured !== null && p99Predicted > 0
        ? `; p99 predicted ${p99Predicted.toFixed(2)} ms, measured ${p99Measured.toFixed(2)} ms, ${errorText(p99Predicted, p99Measured, P99_TOLERANCE)}`
        : `; p99 not predicted (${p99Why(valid)})`;
    lines.push(
      `${strategy}: mean predicted ${predicted.toFixed(3)} ms, measured ${measured.toFixed(3)} ms, ${errorText(predicted, measured, MODEL_TOLERANCE)}${p99}`,
    );
  }
  if (means.length > 1) lines.push(rankingLine(means));
  const checked = rows.filter((row) => row.valid === true && both(row));
  const within = checked.filter((row) => {
    const error = (numeric(row.srv_mean_ms) as number) / (numeric(row.predicted_mean_ms) as number) - 1;
    return Math.abs(error) <= MODEL_TOLERANCE;
  });
  lines.push(
    `rows within ${MODEL_TOLERANCE * 100}% of their prediction: ${within.length} of ${checked.length}`,
  );
  const from = [...new Set(rows.filter(both).map((row) => String(row.predicted_from ?? "unknown")))];
  lines.push(`predicted from: ${from.join("; ")}`);
  return lines;
}

/** The order the model predicts (lowest mean first) against the order measured: the ranking is the answer. */
function rankingLine(means: { strategy: string; predicted: number; measured: number }[]): string {
  const order = (key: "predicted" | "measured") =>
    [...means].sort((a, b) => a[key] - b[key]).map((mean) => mean.strategy);
  const predicted = order("predicted");
  const measured = order("measured");
  const agree = predicted.every((strategy, i) => strategy === measured[i]);
  return `ranking by mean: predicted ${predicted.join(" < ")}, measured ${measured.join(" < ")}: ${agree ? "the same" : "DIFFERENT"}`;
}
