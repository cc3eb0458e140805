/**
 * Two runs side by side (`bun run compare`): how their machines, versions and settings differ, then for
 * every (experiment, attack, tool, strategy) present in both the change of each deciding figure with a
 * test across repeats (lab/results/significance.ts), and each strategy's ratio to the baseline in both.
 */

import { type TestResult, testSamples } from "./significance.ts";
import {
  ATTACK_COLUMNS,
  dbQueriesPerS,
  type ResultRow,
  type Spread,
  spread,
  valueAsRead,
} from "./summary.ts";

export const DEFAULT_ALPHA = 0.05;

export type MetricName =
  | "achieved_rps"
  | "latency_p50_ms"
  | "latency_p99_ms"
  | "hit_ratio"
  | "db_queries_per_s";

interface MetricSpec {
  name: MetricName;
  label: string;
  /** Which way is better: a regression is a significant move the other way. */
  better: "higher" | "lower";
  /** "log": tested on the logarithm, since its changes multiply (a latency, a rate); "linear": as it is. */
  scale: "log" | "linear";
  value(row: ResultRow): number | null;
}

function column(name: string): (row: ResultRow) => number | null {
  return (row) => {
    const value = row[name];
    return typeof value === "number" && Number.isFinite(value) ? value : null;
  };
}

export const METRICS: MetricSpec[] = [
  { name: "achieved_rps", label: "rps", better: "higher", scale: "log", value: column("achieved_rps") },
  { name: "latency_p50_ms", label: "p50 ms", better: "lower", scale: "log", value: column("latency_p50_ms") },
  { name: "latency_p99_ms", label: "p99 ms", better: "lower", scale: "log", value: column("latency_p99_ms") },
  { name: "hit_ratio", label: "hit ratio", better: "higher", scale: "linear", value: column("hit_ratio") },
  { name: "db_queries_per_s", label: "DB q/s", better: "lower", scale: "log", value: dbQueriesPerS },
];

/** The columns whose difference between the sides changes what a comparison means, by kind. */
export const SETTING_COLUMNS: {
  kind: "machine" | "versions" | "clients" | "server" | "attack";
  columns: string[];
}[] = [
  { kind: "machine", columns: ["cpu_model", "cpu_count", "mem_total_gb", "os", "kernel", "arch"] },
  {
    kind: "versions",
    columns: ["bun_version", "postgres_version", "redis_server", "redis_version", "tool_version", "git_sha"],
  },
  { kind: "clients", columns: ["pg_driver", "redis_client"] },
  {
    kind: "server",
    columns: [
      "topology",
      "loadgen_hosts",
      "pg_pool_max",
      "pg_queue_max",
      "pg_acquire_timeout_ms",
      "max_event_loop_delay_ms",
      "cache_ttl_ms",
      "l1_ttl_ms",
      "l1_max_entries",
      "early_refresh_beta",
      "server_cpu_limit",
      "redis_maxmemory",
      "redis_path",
      "postgres_path",
      "services_mode",
      "faults",
      "seeded_rows",
      "seed",
      "description_bytes",
      "key_seed",
      "warmup_s",
      "timeout_s",
    ],
  },
  {
    kind: "attack",
    columns: ATTACK_COLUMNS.filter((name) => !["experiment", "attack", "tool"].includes(name)),
  },
];

export interface InvalidRow {
  experiment: string;
  attack: string;
  tool: string;
  strategy: string;
  repeat: number | null;
  reason: string;
}

export interface SideSummary {
  label: string;
  runIds: string[];
  valid: number;
  invalid: InvalidRow[];
}

export interface SettingDifference {
  kind: (typeof SETTING_COLUMNS)[number]["kind"];
  column: string;
  a: string[];
  b: string[];
}

export interface MetricChange {
  metric: MetricName;
  label: string;
  better: "higher" | "lower";
  a: Spread | null;
  b: Spread | null;
  /** (median B ÷ median A − 1) × 100; null when a side has no value or A's median is 0. */
  deltaPct: number | null;
  test: TestResult;
  /** p < α; false when there is no p-value. */
  significant: boolean;
}

export interface CellComparison {
  experiment: string;
  attack: string;
  tool: string;
  strategy: string;
  metrics: MetricChange[];
}

export interface RatioChange {
  experiment: string;
  attack: string;
  tool: string;
  strategy: string;
  metric: MetricName;
  label: string;
  /** median(strategy) ÷ median(baseline) on each side; null without both medians (or a 0 baseline). */
  a: number | null;
  b: number | null;
  changePct: number | null;
}

export interface Comparison {
  alpha: number;
  baseline: string;
  a: SideSummary;
  b: SideSummary;
  differences: SettingDifference[];
  consequences: string[];
  cells: CellComparison[];
  ratios: RatioChange[];
  /** Cells (experiment · attack · tool · strategy) with valid rows on one side only. */
  onlyA: string[];
  onlyB: string[];
}

const CELL_COLUMNS = ["experiment", "attack", "tool", "strategy"] as const;

function cellKey(row: ResultRow): string {
  return CELL_COLUMNS.map((name) => String(row[name] ?? "")).join(" · ");
}

function groupByCell(rows: ResultRow[]): Map<string, ResultRow[]> {
  const groups = new Map<string, ResultRow[]>();
  for (const row of rows) groups.set(cellKey(row), [...(groups.get(cellKey(row)) ?? []), row]);
  return groups;
}

function distinct(rows: ResultRow[], name: string): string[] {
  return [
    ...new Set(
      rows.map((row) => {
        const read = valueAsRead(row, name); // a column an older CSV lacks reads as its value then
        return read === "" && (row[name] === null || row[name] === undefined) ? "(empty)" : read;
      }),
    ),
  ].sort();
}

function settingDifferences(a: ResultRow[], b: ResultRow[]): SettingDifference[] {
  return SETTING_COLUMNS.flatMap(({ kind, columns }) =>
    columns.flatMap((name) => {
      const valuesA = distinct(a, name);
      const valuesB = distinct(b, name);
      return valuesA.join("\u0000") === valuesB.join("\u0000")
        ? []
        : [{ kind, column: name, a: valuesA, b: valuesB }];
    }),
  );
}

/** One plain line per kind of difference: what it does to the reading. */
export function consequenceLines(differences: SettingDifference[]): string[] {
  const columns = (kind: SettingDifference["kind"]) =>
    differences.filter((d) => d.kind === kind).map((d) => d.column);
  const lines: string[] = [];
  const machine = columns("machine");
  if (machine.length > 0) {
    const cpu = machine.includes("cpu_model") || machine.includes("cpu_count");
    lines.push(`different ${cpu ? "CPU" : "machine"} (${machine.join(", ")}): compare ratios, not rates`);
  }
  const versions = columns("versions");
  const others = versions.filter((name) => name !== "git_sha");
  if (others.length > 0)
    lines.push(`different versions (${others.join(", ")}): a change may be theirs, not the code's`);
  if (versions.includes("git_sha"))
    lines.push("different commits (git_sha): a change may be the code's, which is what a before/after asks");
  const clients = columns("clients");
  if (clients.length > 0)
    lines.push(`different clients (${clients.join(", ")}): a change includes the client's`);
  const server = columns("server");
  if (server.length > 0)
    lines.push(`different server or seed settings (${server.join(", ")}): a change may be the setting's`);
  const attack = columns("attack");
  if (attack.length > 0)
    lines.push(`different attack settings (${attack.join(", ")}): same names, not the same workload`);
  if (lines.length === 0)
    lines.push("same machine, versions, clients, server and attack settings on both sides");
  return lines;
}

function side(label: string, rows: ResultRow[]): SideSummary {
  return {
    label,
    runIds: distinct(rows, "run_id"),
    valid: rows.filter((row) => row.valid === true).length,
    invalid: rows
      .filter((row) => row.valid !== true)
      .map((row) => ({
        experiment: String(row.experiment),
        attack: String(row.attack),
        tool: String(row.tool),
        strategy: String(row.strategy),
        repeat: typeof row.repeat === "number" ? row.repeat : null,
        reason: String(row.invalid_reason ?? "(no reason recorded)"),
      })),
  };
}

function values(rows: ResultRow[], spec: MetricSpec): number[] {
  return rows.map(spec.value).filter((value): value is number => value !== null);
}

function deltaPct(a: number | null | undefined, b: number | null | undefined): number | null {
  return a === null || a === undefined || b === null || b === undefined || a === 0 ? null : (b / a - 1) * 100;
}

/**
 * The samples as tested: a log-scale metric's logarithms (a 10× latency change is as far from 1× whether
 * the repeats sit at 0.3 or 3 ms; on raw values one slow repeat's spread hides it), unless a value is ≤ 0.
 */
function onScale(spec: MetricSpec, a: number[], b: number[]): [number[], number[]] {
  if (spec.scale === "linear" || [...a, ...b].some((v) => !(v > 0))) return [a, b];
  return [a.map(Math.log), b.map(Math.log)];
}

function metricChange(spec: MetricSpec, rowsA: ResultRow[], rowsB: ResultRow[], alpha: number): MetricChange {
  const valuesA = values(rowsA, spec);
  const valuesB = values(rowsB, spec);
  const a = spread(valuesA);
  const b = spread(valuesB);
  const test =
    valuesA.length === 0 || valuesB.length === 0
      ? {
          method: "n<2: no test" as const,
          p: null,
          reason: "no value on a side",
          nA: valuesA.length,
          nB: valuesB.length,
        }
      : testSamples(...onScale(spec, valuesA, valuesB));
  return {
    metric: spec.name,
    label: spec.label,
    better: spec.better,
    a,
    b,
    deltaPct: deltaPct(a?.median, b?.median),
    test,
    significant: test.p !== null && test.p < alpha,
  };
}

function ratioChanges(cells: Map<string, [ResultRow[], ResultRow[]]>, baseline: string): RatioChange[] {
  const median = (rows: ResultRow[] | undefined, spec: MetricSpec) =>
    rows ? (spread(values(rows, spec))?.median ?? null) : null;
  const ratio = (top: number | null, bottom: number | null) =>
    top === null || bottom === null || bottom === 0 ? null : top / bottom;
  const out: RatioChange[] = [];
  for (const [key, [rowsA, rowsB]] of cells) {
    const first = rowsA[0] as ResultRow;
    if (first.strategy === baseline) continue;
    const baseKey = [first.experiment, first.attack, first.tool, baseline].map(String).join(" · ");
    const base = cells.get(baseKey);
    if (!base || key === baseKey) continue;
    // none's hit ratio is 0 by design: a ratio to it says nothing.
    for (const spec of METRICS.filter((m) => m.name !== "hit_ratio")) {
      const a = ratio(median(rowsA, spec), median(base[0], spec));
      const b = ratio(median(rowsB, spec), median(base[1], spec));
      out.push({
        experiment: String(first.experiment),
        attack: String(first.attack),
        tool: String(first.tool),
        strategy: String(first.strategy),
        metric: spec.name,
        label: spec.label,
        a,
        b,
        changePct: deltaPct(a, b),
      });
    }
  }
  return out;
}

/** Compares side A (before, or the reference) with side B (after, or this machine), valid rows only. */
export function compareRuns(
  rowsA: ResultRow[],
  rowsB: ResultRow[],
  options: { labels?: [string, string]; alpha?: number; baseline?: string } = {},
): Comparison {
  const alpha = options.alpha ?? DEFAULT_ALPHA;
  const baseline = options.baseline ?? "none";
  const [labelA, labelB] = options.labels ?? ["A", "B"];
  const groupsA = groupByCell(rowsA.filter((row) => row.valid === true));
  const groupsB = groupByCell(rowsB.filter((row) => row.valid === true));
  const both = new Map<string, [ResultRow[], ResultRow[]]>();
  for (const [key, rows] of groupsA) {
    const other = groupsB.get(key);
    if (other) both.set(key, [rows, other]);
  }
  const cells = [...both.values()].map(([a, b]): CellComparison => {
    const first = a[0] as ResultRow;
    return {
      experiment: String(first.experiment),
      attack: String(first.attack),
      tool: String(first.tool),
      strategy: String(first.strategy),
      metrics: METRICS.map((spec) => metricChange(spec, a, b, alpha)),
    };
  });
  const differences = settingDifferences(rowsA, rowsB);
  return {
    alpha,
    baseline,
    a: side(labelA, rowsA),
    b: side(labelB, rowsB),
    differences,
    consequences: consequenceLines(differences),
    cells,
    ratios: ratioChanges(both, baseline),
    onlyA: [...groupsA.keys()].filter((key) => !groupsB.has(key)),
    onlyB: [...groupsB.keys()].filter((key) => !groupsA.has(key)),
  };
}

export interface Regression {
  cell: string;
  metric: MetricName;
  label: string;
  deltaPct: number;
  p: number;
}

/** Significant changes the wrong way by more than `thresholdPct` (lower rps or hit ratio, higher latency or DB q/s). */
export function regressions(comparison: Comparison, thresholdPct: number): Regression[] {
  return comparison.cells.flatMap((cell) =>
    cell.metrics.flatMap((change): Regression[] => {
      if (!change.significant || change.deltaPct === null || change.test.p === null) return [];
      const worsePct = change.better === "higher" ? -change.deltaPct : change.deltaPct;
      if (worsePct <= thresholdPct) return [];
      const name = [cell.experiment, cell.attack, cell.tool, cell.strategy].join(" · ");
      return [
        {
          cell: name,
          metric: change.metric,
          label: change.label,
          deltaPct: change.deltaPct,
          p: change.test.p,
        },
      ];
    }),
  );
}
