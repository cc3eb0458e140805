/**
 * A capacity search's answer: `<experiment>.capacities.csv` beside the run's CSV (capacity_check's), one row
 * per (run, regime, strategy): the highest rate whose step held and the lowest that broke, beside the model's
 * prediction and its bound (docs/csv.md). Appended once, at the end of a run that was not interrupted, with
 * one write after a header created whole, and read as the curves file is: a cut line never glues onto the
 * next, a malformed row is skipped naming file and line, an empty cell is null, never 0.
 */
import { appendFileSync } from "node:fs";
import { stringify } from "csv-stringify/sync";
import { createWithHeader, firstLine, lineStart } from "./csv.ts";
import { readSideCsv, type SkippedRow } from "./csv_read.ts";

/** Every column, in order. */
export const CAPACITIES_COLUMNS = [
  "run_id",
  "experiment",
  "regime",
  "strategy",
  "p99_target_ms",
  "pg_pool_max",
  "miss_cost_added_ms",
  "cores",
  "steps",
  "held_rps",
  "held_p99_ms",
  "held_srv_p99_ms",
  "broken_rps",
  "broken_p99_ms",
  "broken_srv_p99_ms",
  "predicted_rps",
  "predicted_bound",
  "predicted_reason",
  "predicted_cpu_rps",
  "predicted_event_loop_rps",
  "predicted_pool_rps",
  "predicted_redis_rps",
  "measured_over_predicted",
  "search_end",
] as const;

export type CapacityColumn = (typeof CAPACITIES_COLUMNS)[number];
export type CapacityRow = Record<CapacityColumn, string | number | null>;

const HEADER = stringify([CAPACITIES_COLUMNS as unknown as string[]]);
const TEXT_COLUMNS = new Set<CapacityColumn>([
  "run_id",
  "experiment",
  "regime",
  "strategy",
  "predicted_bound",
  "predicted_reason",
  "search_end",
]);

/** `results/x.csv` → `results/x.capacities.csv`. */
export function capacitiesPath(csvPath: string): string {
  if (!csvPath.endsWith(".csv") || /\.(timeline|curves|capacities)\.csv$/.test(csvPath)) {
    throw new TypeError(`Cannot name a capacities file: not a results CSV path: received ${csvPath}`);
  }
  return `${csvPath.slice(0, -".csv".length)}.capacities.csv`;
}

export function isCapacitiesPath(path: string): boolean {
  return path.endsWith(".capacities.csv");
}

/** Appends a run's capacities with one write call (the header first if the file is new). */
export function appendCapacities(path: string, rows: CapacityRow[]): void {
  const text = stringify(rows.map((row) => CAPACITIES_COLUMNS.map((column) => row[column])));
  createWithHeader(path, HEADER);
  if (firstLine(path) !== HEADER) {
    throw new Error(
      `Cannot append to ${path}: its header is not the capacities schema: received ${firstLine(path).trimEnd()}`,
    );
  }
  if (text !== "") appendFileSync(path, lineStart(path) + text);
}

function capacityRow(fields: string[]): CapacityRow {
  if (fields.length !== CAPACITIES_COLUMNS.length)
    throw new TypeError(`expected ${CAPACITIES_COLUMNS.length} fields: received ${fields.length}`);
  const entries = CAPACITIES_COLUMNS.map((column, i) => {
    const raw = fields[i] ?? "";
    if (raw === "" || TEXT_COLUMNS.has(column)) return [column, raw === "" ? null : raw];
    const value = Number(raw);
    if (!Number.isFinite(value)) throw new TypeError(`${column} is not a number: received "${raw}"`);
    return [column, value];
  });
  const row = Object.fromEntries(entries) as CapacityRow;
  for (const column of ["run_id", "regime", "strategy"] as const)
    if (row[column] === null) throw new TypeError(`${column} is empty`);
  return row;
}

/** Every row of a capacities file; throws on another header; a malformed row goes to `onSkip` (else throws). */
export function readCapacities(
  path: string,
  options: { onSkip?: (skipped: SkippedRow) => void } = {},
): CapacityRow[] {
  return readSideCsv(path, { name: "capacities", columns: CAPACITIES_COLUMNS }, capacityRow, options.onSkip);
}

const fixed = (value: string | number | null, digits: number) =>
  typeof value === "number" ? value.toFixed(digits) : "—";

/** The capacities as a Markdown table, a line per regime and strategy, and what its columns mean. */
export function capacitiesMarkdown(rows: CapacityRow[]): string[] {
  if (rows.length === 0) return [];
  const head = [
    "regime",
    "strategy",
    "measured rps (held)",
    "lowest broken rps",
    "p99 ms held / broken (client)",
    "server p99 ms held / broken",
    "predicted rps",
    "bound",
    "measured ÷ predicted",
    "steps",
    "search",
  ];
  const lines = rows.map((row) => [
    String(row.regime),
    String(row.strategy),
    fixed(row.held_rps, 0),
    fixed(row.broken_rps, 0),
    `${fixed(row.held_p99_ms, 2)} / ${fixed(row.broken_p99_ms, 2)}`,
    `${fixed(row.held_srv_p99_ms, 2)} / ${fixed(row.broken_srv_p99_ms, 2)}`,
    fixed(row.predicted_rps, 0),
    row.predicted_bound === null ? "—" : String(row.predicted_bound),
    fixed(row.measured_over_predicted, 2),
    fixed(row.steps, 0),
    row.search_end === null ? "—" : String(row.search_end),
  ]);
  const first = rows[0] as CapacityRow;
  return [
    `**Capacity: measured against predicted** (p99 target ${first.p99_target_ms} ms, ${first.cores} cores; ${rows.length} searches)`,
    "",
    `| ${head.join(" | ")} |`,
    `|${" --- |".repeat(head.length)}`,
    ...lines.map((cells) => `| ${cells.join(" | ")} |`),
    "",
    "_Measured: the highest offered rate whose step held (the load tool's p99 within the target, errors ≤ 1%, no dropped load), a fresh server per step, bisected from the prediction; predicted: lab/model/capacity.ts from the regime's base cells, the load tool's CPU counted (it shares the cores), with the bound that binds._",
    "",
  ];
}
