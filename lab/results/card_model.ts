/**
 * The card's check of the model: per strategy, the server-side mean lab/model predicted for the row
 * (predicted_mean_ms, filled at run time from base cells) against the one measured (srv_mean_ms), medians
 * over the valid repeats, with the error and a flag past MODEL_TOLERANCE. How to read it: docs/card.md.
 */
import { P99_NOTE } from "../model/predict.ts";
import { median } from "./intervals.ts";
import type { ResultRow } from "./summary.ts";

/** A measured mean further than this share from its prediction is flagged. */
export const MODEL_TOLERANCE = 0.25;

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
  for (const strategy of strategies) {
    const valid = rows.filter((row) => row.strategy === strategy && row.valid === true && both(row));
    const predicted = medianOf(valid, "predicted_mean_ms");
    const measured = medianOf(valid, "srv_mean_ms");
    if (predicted === null || measured === null || predicted <= 0) continue;
    const error = measured / predicted - 1;
    const sign = error < 0 ? "−" : "+";
    const off = Math.abs(error) > MODEL_TOLERANCE;
    lines.push(
      `${strategy}: predicted ${predicted.toFixed(3)} ms, measured ${measured.toFixed(3)} ms, error ${sign}${Math.abs(error * 100).toFixed(0)}%${off ? ` — OFF: more than ${MODEL_TOLERANCE * 100}% from the model` : ""}`,
    );
  }
  const from = [...new Set(rows.filter(both).map((row) => String(row.predicted_from ?? "unknown")))];
  lines.push(`predicted from: ${from.join("; ")}`);
  lines.push(P99_NOTE);
  return lines;
}
