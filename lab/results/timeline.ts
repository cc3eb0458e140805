/**
 * The per-second timeline of measured runs: `results/<experiment>.timeline.csv`, beside the experiment's CSV,
 * one row per (run, second). A run's rows are appended with one write call, after a header created the way
 * csv.ts creates its own (link(2)), so concurrent runs never interleave partial lines. Reading validates the
 * header and every number: an empty cell is null (the tool or the strategy has no such figure), never 0.
 *
 * `faultOutcomes` reads one run's seconds against the faults in force: per fault window, the worst one-second
 * p99, the requests that failed during it, and how long the hit ratio took to come back afterwards.
 */
import { appendFileSync } from "node:fs";
import { stringify } from "csv-stringify/sync";
import { createWithHeader, firstLine, lineStart } from "./csv.ts";
import { readSideCsv, type SkippedRow } from "./csv_read.ts";

/** Every column, in order. */
export const TIMELINE_COLUMNS = [
  "run_id",
  "experiment",
  "strategy",
  "tool",
  "attack",
  "repeat",
  "second",
  "epoch_s",
  "sent",
  "ok",
  "errors",
  "p50_ms",
  "p99_ms",
  "timeline_source",
  "server_requests",
  "server_reads",
  "l1_hits",
  "l1_misses",
  "l2_hits",
  "l2_misses",
  "db_queries",
  "hit_ratio",
  "cache_errors",
  "faults",
] as const;

export type TimelineColumn = (typeof TIMELINE_COLUMNS)[number];

const TEXT_COLUMNS = [
  "run_id",
  "experiment",
  "strategy",
  "tool",
  "attack",
  "timeline_source",
  "faults",
] as const;
/** Always present: which run and which second. */
const KEY_COLUMNS = ["repeat", "second", "epoch_s"] as const;
/** Null when the tool (sent … p99_ms) or the strategy (l1_*, l2_*) has no such figure. */
const NULLABLE_COLUMNS = [
  "sent",
  "ok",
  "errors",
  "p50_ms",
  "p99_ms",
  "server_requests",
  "server_reads",
  "l1_hits",
  "l1_misses",
  "l2_hits",
  "l2_misses",
  "db_queries",
  "hit_ratio",
  "cache_errors",
] as const;
const FRACTIONAL_COLUMNS: ReadonlySet<TimelineColumn> = new Set(["p50_ms", "p99_ms", "hit_ratio"]);

/**
 * One second of one measured run. `second` counts from the measured run's start (0-based), `epoch_s` is the
 * Unix second; server_* … cache_errors are deltas of the server's counters over that second; `faults` holds
 * the labels of the faults in force, `;`-separated ("" when none).
 */
export type TimelineRow = { [K in (typeof TEXT_COLUMNS)[number]]: string } & {
  [K in (typeof KEY_COLUMNS)[number]]: number;
} & { [K in (typeof NULLABLE_COLUMNS)[number]]: number | null };

const HEADER = stringify([TIMELINE_COLUMNS as unknown as string[]]);

/** `results/x.csv` → `results/x.timeline.csv` (and `x.v2.csv` → `x.v2.timeline.csv`). */
export function timelinePath(csvPath: string): string {
  if (!csvPath.endsWith(".csv") || isTimelinePath(csvPath)) {
    throw new TypeError(`Cannot name a timeline file: not a results CSV path: received ${csvPath}`);
  }
  return `${csvPath.slice(0, -".csv".length)}.timeline.csv`;
}

export function isTimelinePath(path: string): boolean {
  return path.endsWith(".timeline.csv");
}

/** The labels of the faults in force during a second. */
export function faultLabels(row: Pick<TimelineRow, "faults">): string[] {
  return row.faults
    .split(";")
    .map((label) => label.trim())
    .filter((label) => label !== "");
}

function formatTimelineRow(row: TimelineRow): string {
  for (const column of [...KEY_COLUMNS, ...NULLABLE_COLUMNS]) {
    const value = row[column];
    if (value !== null && !Number.isFinite(value)) {
      throw new TypeError(
        `Cannot append a timeline row: ${column} of run ${row.run_id} second ${row.second} is not a finite number: received ${value}`,
      );
    }
  }
  return stringify([TIMELINE_COLUMNS.map((column) => row[column])]);
}

/**
 * Appends a run's seconds with one write call (the header first if the file is new). A file with another
 * header is never appended to.
 */
export function appendTimeline(path: string, rows: TimelineRow[]): void {
  const text = rows.map(formatTimelineRow).join("");
  createWithHeader(path, HEADER);
  if (firstLine(path) !== HEADER) {
    throw new Error(
      `Cannot append to ${path}: its header is not the timeline schema: received ${firstLine(path).trimEnd()}`,
    );
  }
  if (text !== "") appendFileSync(path, lineStart(path) + text);
}

const NUMBER = /^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/** A cell that must be a number; throws what is wrong with it (the caller names the file and line). */
function parseNumber(raw: string, column: TimelineColumn): number {
  const value = Number(raw);
  if (!NUMBER.test(raw) || !Number.isFinite(value)) {
    throw new TypeError(`${column} is not a number: received "${raw}"`);
  }
  if (!FRACTIONAL_COLUMNS.has(column) && !Number.isInteger(value)) {
    throw new TypeError(`${column} is not an integer: received "${raw}"`);
  }
  return value;
}

function timelineRow(record: string[]): TimelineRow {
  const cell = (column: TimelineColumn) => record[TIMELINE_COLUMNS.indexOf(column)] ?? "";
  const row: Record<string, string | number | null> = {};
  for (const column of TEXT_COLUMNS) row[column] = cell(column);
  for (const column of KEY_COLUMNS) {
    if (cell(column) === "") throw new TypeError(`${column} is empty`);
    row[column] = parseNumber(cell(column), column);
  }
  for (const column of NULLABLE_COLUMNS) {
    row[column] = cell(column) === "" ? null : parseNumber(cell(column), column);
  }
  return row as TimelineRow;
}

/**
 * Every row of a timeline file; throws on another header. A malformed row (a short line, a malformed number)
 * is handed to `onSkip` and left out; without `onSkip` it throws, naming the line.
 */
export function readTimeline(
  path: string,
  options: { onSkip?: (skipped: SkippedRow) => void } = {},
): TimelineRow[] {
  return readSideCsv(path, { name: "timeline", columns: TIMELINE_COLUMNS }, timelineRow, options.onSkip);
}

/** What one contiguous fault window did to a run. */
export interface FaultOutcome {
  fault: string;
  /** First and last second of the window, inclusive. */
  startS: number;
  endS: number;
  /** The highest one-second p99 during the window; null when the tool gives no per-second latency. */
  worstP99Ms: number | null;
  /** Requests that failed during the window; null when the tool gives no per-request results. */
  failed: number | null;
  /** The hit ratio (reads without a database query), mean of the per-second ratios before the window. */
  hitRatioBefore: number | null;
  /**
   * Whole seconds after the window whose hit ratio was still off by more than the tolerance: 0 means the
   * first second after the window was already back (one-second resolution). Null: see `recoveryNote`.
   */
  recoveryS: number | null;
  recoveryNote: string | null;
}

export interface FaultOutcomeOptions {
  /** Seconds before a window whose mean hit ratio it must come back to (default 3). */
  baselineS?: number;
  /** Relative distance from that mean that counts as back (default 0.05). */
  toleranceRatio?: number;
}

/** The outermost cache tier a run's seconds count: l1 (local, two_tier's or tracking's L1), else l2 (redis); null: none. */
export function outerTier(rows: TimelineRow[]): "l1" | "l2" | null {
  if (rows.some((row) => row.l1_hits !== null || row.l1_misses !== null)) return "l1";
  if (rows.some((row) => row.l2_hits !== null || row.l2_misses !== null)) return "l2";
  return null;
}

/**
 * The second's hit ratio as the row's `hit_ratio` counts it: reads answered without a database query (whatever
 * tier answered them; two_tier's L2 answers while its L1 refills). Null when the second had no reads.
 */
export function secondHitRatio(row: TimelineRow): number | null {
  return row.hit_ratio;
}

function maxOrNull(values: (number | null)[]): number | null {
  const numbers = values.filter((value): value is number => value !== null);
  return numbers.length === 0 ? null : Math.max(...numbers);
}

function sumOrNull(values: (number | null)[]): number | null {
  const numbers = values.filter((value): value is number => value !== null);
  return numbers.length === 0 ? null : numbers.reduce((a, b) => a + b, 0);
}

/** The fault windows of one run in order of their start, each label's contiguous seconds one window. */
export function faultOutcomes(rows: TimelineRow[], options: FaultOutcomeOptions = {}): FaultOutcome[] {
  const baselineS = options.baselineS ?? 3;
  const tolerance = options.toleranceRatio ?? 0.05;
  const runs = new Set(rows.map((row) => `${row.run_id} ${row.strategy} ${row.attack} r${row.repeat}`));
  if (runs.size > 1) {
    throw new RangeError(
      `Cannot judge fault windows: the rows are from several runs: received ${[...runs].join(", ")}`,
    );
  }
  const seconds = [...rows].sort((a, b) => a.second - b.second);
  const bySecond = new Map<number, TimelineRow>();
  for (const row of seconds) {
    if (bySecond.has(row.second)) {
      throw new RangeError(
        `Cannot judge fault windows: second ${row.second} appears twice in run ${row.run_id}`,
      );
    }
    bySecond.set(row.second, row);
  }
  const tier = outerTier(seconds);

  const windows: { fault: string; rows: TimelineRow[] }[] = [];
  const open = new Map<string, { fault: string; rows: TimelineRow[] }>();
  for (const row of seconds) {
    const labels = new Set(faultLabels(row));
    for (const [fault, window] of open) {
      const last = window.rows[window.rows.length - 1] as TimelineRow;
      if (!labels.has(fault) || last.second !== row.second - 1) open.delete(fault);
    }
    for (const fault of labels) {
      const window = open.get(fault);
      if (window) window.rows.push(row);
      else {
        const started = { fault, rows: [row] };
        open.set(fault, started);
        windows.push(started);
      }
    }
  }

  return windows.map(({ fault, rows: during }): FaultOutcome => {
    const startS = (during[0] as TimelineRow).second;
    const endS = (during[during.length - 1] as TimelineRow).second;
    const outcome = {
      fault,
      startS,
      endS,
      worstP99Ms: maxOrNull(during.map((row) => row.p99_ms)),
      failed: sumOrNull(during.map((row) => row.errors)),
    };
    const recovery = recoveryAfter({ bySecond, tier, startS, endS, baselineS, tolerance });
    return { ...outcome, ...recovery };
  });
}

function recoveryAfter(context: {
  bySecond: Map<number, TimelineRow>;
  tier: "l1" | "l2" | null;
  startS: number;
  endS: number;
  baselineS: number;
  tolerance: number;
}): Pick<FaultOutcome, "hitRatioBefore" | "recoveryS" | "recoveryNote"> {
  const { bySecond, tier, startS, endS, baselineS, tolerance } = context;
  const none = (recoveryNote: string, hitRatioBefore: number | null = null) => ({
    hitRatioBefore,
    recoveryS: null,
    recoveryNote,
  });
  if (tier === null) return none("no cache tier");
  const before: number[] = [];
  for (let second = startS - baselineS; second < startS; second++) {
    const row = bySecond.get(second);
    if (row === undefined) return none(`fewer than ${baselineS} s before the window`);
    // A baseline taken under another fault is no baseline to recover to.
    if (faultLabels(row).length > 0)
      return none(`a fault was in force in the ${baselineS} s before the window`);
    const ratio = secondHitRatio(row);
    if (ratio === null) return none(`no reads in second ${second}, before the window`);
    before.push(ratio);
  }
  const mean = before.reduce((a, b) => a + b, 0) / before.length;
  const after = [...bySecond.values()].filter((row) => row.second > endS);
  for (const row of after) {
    const ratio = secondHitRatio(row);
    // The 1e-9 keeps a ratio exactly on the boundary (0.76 against 0.8 ± 5%) in, despite float rounding.
    if (ratio !== null && Math.abs(ratio - mean) <= tolerance * mean + 1e-9) {
      return { hitRatioBefore: mean, recoveryS: row.second - endS - 1, recoveryNote: null };
    }
  }
  return none(`not back within ${tolerance * 100}% before the run ended`, mean);
}
