/**
 * The replayed curves of trace runs: `results/<experiment>.curves.csv`, beside the experiment's CSV, one row
 * per (run, attack, method, capacity): the hit ratio of the measured run's reads that a cache of that many
 * entries would have had on the exact segment sent (lab/trace/replayed_curves.ts). Appended and read as the
 * timeline is (timeline.ts): one write per run after a header created whole; a cut line never glues onto the
 * next; a malformed row is skipped with a warning naming file and line; an empty cell is null, never 0.
 */
import { appendFileSync } from "node:fs";
import { stringify } from "csv-stringify/sync";
import { MRC_METHODS } from "../trace/mrc.ts";
import { createWithHeader, firstLine, lineStart } from "./csv.ts";
import { readSideCsv, type SkippedRow } from "./csv_read.ts";

/** Every column, in order. */
export const CURVES_COLUMNS = [
  "run_id",
  "experiment",
  "attack",
  "method",
  "capacity_entries",
  "capacity_label",
  "configured",
  "hit_ratio",
  "byte_hit_ratio",
  "reads",
  "warmup_requests",
  "from_position",
  "to_position",
] as const;

/** lru, local, belady, then the eviction policies (files written before those have the first three only). */
export const CURVE_METHODS = MRC_METHODS;

/**
 * One capacity of one curve. `reads` are the measured run's reads (the ratios' denominator); the stream sent
 * is positions [0, warmup_requests) then [from_position, to_position); byte_hit_ratio is null when no read
 * had a known size.
 */
export interface CurveRow {
  run_id: string;
  experiment: string;
  attack: string;
  method: (typeof CURVE_METHODS)[number];
  capacity_entries: number;
  capacity_label: string;
  configured: boolean;
  hit_ratio: number;
  byte_hit_ratio: number | null;
  reads: number;
  warmup_requests: number;
  from_position: number;
  to_position: number;
}

const HEADER = stringify([CURVES_COLUMNS as unknown as string[]]);
const INTEGER_COLUMNS = [
  "capacity_entries",
  "reads",
  "warmup_requests",
  "from_position",
  "to_position",
] as const;

/** `results/x.csv` → `results/x.curves.csv` (and `x.v2.csv` → `x.v2.curves.csv`). */
export function curvesPath(csvPath: string): string {
  if (!csvPath.endsWith(".csv") || isSideFilePath(csvPath)) {
    throw new TypeError(`Cannot name a curves file: not a results CSV path: received ${csvPath}`);
  }
  return `${csvPath.slice(0, -".csv".length)}.curves.csv`;
}

export function isCurvesPath(path: string): boolean {
  return path.endsWith(".curves.csv");
}

/** A file written beside a results CSV (curves or timeline), not a results CSV itself. */
function isSideFilePath(path: string): boolean {
  return isCurvesPath(path) || path.endsWith(".timeline.csv");
}

function formatCurveRow(row: CurveRow): string {
  const ratios = [row.hit_ratio, ...(row.byte_hit_ratio === null ? [] : [row.byte_hit_ratio])];
  for (const value of [...INTEGER_COLUMNS.map((column) => row[column]), ...ratios]) {
    if (!Number.isFinite(value)) {
      throw new TypeError(
        `Cannot append a curves row: run ${row.run_id} ${row.attack} ${row.method} at ${row.capacity_entries} holds a value that is not a finite number: received ${value}`,
      );
    }
  }
  // csv-stringify writes a boolean as 1 or an empty cell; the file says true or false, as the results CSV does.
  return stringify([
    CURVES_COLUMNS.map((column) => (column === "configured" ? String(row.configured) : row[column])),
  ]);
}

/** Appends a run's curves with one write call (the header first if the file is new). */
export function appendCurves(path: string, rows: CurveRow[]): void {
  const text = rows.map(formatCurveRow).join("");
  createWithHeader(path, HEADER);
  if (firstLine(path) !== HEADER) {
    throw new Error(
      `Cannot append to ${path}: its header is not the curves schema: received ${firstLine(path).trimEnd()}`,
    );
  }
  if (text !== "") appendFileSync(path, lineStart(path) + text);
}

const NUMBER = /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

function parseNumber(raw: string, column: string, integer: boolean): number {
  const value = Number(raw);
  if (!NUMBER.test(raw) || !Number.isFinite(value))
    throw new TypeError(`${column} is not a number: received "${raw}"`);
  if (integer && !Number.isInteger(value))
    throw new TypeError(`${column} is not an integer: received "${raw}"`);
  return value;
}

function curveRow(fields: string[]): CurveRow {
  const cell = (column: (typeof CURVES_COLUMNS)[number]) => fields[CURVES_COLUMNS.indexOf(column)] ?? "";
  const method = cell("method");
  if (!(CURVE_METHODS as readonly string[]).includes(method)) {
    throw new TypeError(`method is not one of ${CURVE_METHODS.join(", ")}: received "${method}"`);
  }
  const configured = cell("configured");
  if (configured !== "true" && configured !== "false") {
    throw new TypeError(`configured is not true or false: received "${configured}"`);
  }
  for (const column of ["run_id", "experiment", "attack", "capacity_label"] as const) {
    if (cell(column) === "") throw new TypeError(`${column} is empty`);
  }
  const integer = (column: (typeof INTEGER_COLUMNS)[number]) => parseNumber(cell(column), column, true);
  return {
    run_id: cell("run_id"),
    experiment: cell("experiment"),
    attack: cell("attack"),
    method: method as CurveRow["method"],
    capacity_entries: integer("capacity_entries"),
    capacity_label: cell("capacity_label"),
    configured: configured === "true",
    hit_ratio: parseNumber(cell("hit_ratio"), "hit_ratio", false),
    byte_hit_ratio:
      cell("byte_hit_ratio") === "" ? null : parseNumber(cell("byte_hit_ratio"), "byte_hit_ratio", false),
    reads: integer("reads"),
    warmup_requests: integer("warmup_requests"),
    from_position: integer("from_position"),
    to_position: integer("to_position"),
  };
}

/**
 * Every row of a curves file; throws on another header. A malformed row is handed to `onSkip` and left
 * out; without `onSkip` it throws, naming the line.
 */
export function readCurves(
  path: string,
  options: { onSkip?: (skipped: SkippedRow) => void } = {},
): CurveRow[] {
  return readSideCsv(path, { name: "curves", columns: CURVES_COLUMNS }, curveRow, options.onSkip);
}
