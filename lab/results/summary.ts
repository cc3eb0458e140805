/**
 * From CSV rows to the comparison a person reads: rows grouped by experiment, attack (with its defining
 * parameters, so unlike attacks are never merged), tool and strategy; median and min–max across repeats;
 * ratios against a baseline strategy; invalid rows excluded, counted and listed; warnings when the rows
 * compared come from different machines, versions or seeds.
 */
import { readFileSync } from "node:fs";
import { type CsvContent, deliverSkipped, readCsv, type SkippedRow } from "./csv_read.ts";

export type ResultRow = Record<string, string | number | boolean | null>;

const NUMERIC =
  /(_rps|_ms|_s|_count|^l1_hit_ratio_expected|_mb|_gb|^repeat|^connections|^keyspace|^key_seed|^seeded_rows|^seed|^description_bytes|^reviews_per_product|^pg_pool_max|^l1_max_entries|^requests|^completed|^ok|^errors|^dropped|^bytes_in|^server_requests|^hit_ratio|^db_queries|^cache_errors|^stale_reads|^cpu_count|^list_targets|^targets_sent|^target_reuse_ratio|^distinct_keys|^distinct_keys_expected|^hit_ratio_expected|^hit_ratio_optimal|^l1_hit_ratio|^l2_hit_ratio|^db_offload|^stale_checks|^stale_checks_failed|^fault_failed|^timeline_rows|^instances|^load_waits|^refresh_loads|^loads_per_key_per_ttl|^redis_entries|^redis_bytes_per_entry|^trace_(?!order)[a-z0-9_]+)$/;

function typedRow(header: string[], fields: string[]): ResultRow {
  const row: ResultRow = {};
  header.forEach((column, i) => {
    const raw = fields[i] ?? "";
    if (raw === "") row[column] = null;
    else if (column === "valid" || column === "git_dirty") row[column] = raw === "true";
    else if (NUMERIC.test(column) && column !== "db_queries_source" && Number.isFinite(Number(raw)))
      row[column] = Number(raw);
    else row[column] = raw;
  });
  return row;
}

/** The columns every results CSV has had, which a report groups by: a file without them is another kind. */
export const RESULTS_IDENTITY_COLUMNS = ["run_id", "experiment", "attack", "strategy"] as const;

/**
 * Parses CSV text into typed rows: empty → null, true/false → booleans, numeric columns → numbers. A
 * malformed row (a write cut short) goes to `onSkip` and is left out; without `onSkip` it throws. With
 * `columns`, a header without one of them throws (a results CSV: RESULTS_IDENTITY_COLUMNS).
 */
export function parseRows(
  text: string,
  options: { path?: string; onSkip?: (skipped: SkippedRow) => void; columns?: readonly string[] } = {},
): ResultRow[] {
  const path = options.path ?? "(text)";
  let content: CsvContent;
  try {
    content = readCsv(text);
  } catch (error) {
    throw new TypeError(`Cannot read ${path}: ${(error as Error).message}`);
  }
  const { header, records, skipped } = content;
  if (header !== null) {
    const missing = (options.columns ?? []).filter((column) => !header.includes(column));
    if (missing.length > 0) {
      throw new TypeError(
        `Cannot read ${path}: its header is not a results CSV's: it has no ${missing.join(", ")}: received ${header.slice(0, 6).join(",")}${header.length > 6 ? ",…" : ""}`,
      );
    }
  }
  deliverSkipped(path, skipped, options.onSkip);
  return header === null ? [] : records.map((record) => typedRow(header, record.fields));
}

/** The rows of every results file (one without a results CSV's header throws); a malformed row goes to `onSkip`. */
export function loadRows(paths: string[], onSkip?: (skipped: SkippedRow) => void): ResultRow[] {
  return paths.flatMap((path) =>
    parseRows(readFileSync(path, "utf8"), {
      path,
      columns: RESULTS_IDENTITY_COLUMNS,
      ...(onSkip ? { onSkip } : {}),
    }),
  );
}

export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function spread(values: (number | null | undefined)[]): Spread | null {
  const numbers = values.filter(
    (value): value is number => typeof value === "number" && Number.isFinite(value),
  );
  if (numbers.length === 0) return null;
  const sorted = [...numbers].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1
      ? (sorted[mid] as number)
      : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return { median, min: sorted[0] as number, max: sorted[sorted.length - 1] as number, n: sorted.length };
}

/** A parsed cell as a finite number, or null (empty cells and non-numbers are not 0). */
export function num(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

export interface StrategySummary {
  strategy: string;
  valid: number;
  invalid: number;
  achievedRps: Spread | null;
  p50Ms: Spread | null;
  p90Ms: Spread | null;
  p99Ms: Spread | null;
  p99_9Ms: Spread | null;
  errorRatio: Spread | null;
  hitRatio: Spread | null;
  /** The simulation of the same key stream (lab/sim/simulate.ts), and measured ÷ simulated per row. */
  hitRatioExpected: Spread | null;
  hitVsExpected: Spread | null;
  /** Belady's optimum at the same capacity. */
  hitRatioOptimal: Spread | null;
  dbQueriesPerS: Spread | null;
  staleReads: Spread | null;
  /** Requests that waited on a database load, loads early refresh started, loads per key per TTL period. */
  loadWaits: Spread | null;
  refreshLoads: Spread | null;
  loadsPerKeyPerTtl: Spread | null;
  /** Median of this strategy ÷ median of the baseline; null without a baseline or a value. */
  vsBaseline: { achievedRps: number | null; p99Ms: number | null; dbQueriesPerS: number | null };
}

export interface GroupSummary {
  experiment: string;
  attack: string;
  tool: string;
  loadModel: string;
  offeredRps: number | null;
  connections: number | null;
  /** The smallest latency step the tool records (autocannon: 1 ms). */
  latencyResolutionMs: number | null;
  strategies: StrategySummary[];
  invalid: { strategy: string; repeat: number | null; reason: string }[];
  warnings: string[];
  rows: ResultRow[];
}

/** What defines an attack: rows differing in any of these are different attacks, never merged. */
export const ATTACK_COLUMNS = [
  "experiment",
  "attack",
  "tool",
  "load_model",
  "offered_rps",
  "connections",
  "duration_s",
  "request_mix",
  "key_distribution",
  "key_params",
  "keyspace",
  "instances",
  // Another dataset is another attack: a summary over 10 reviews is not one over 1 000.
  "reviews_per_product",
  "payload_bytes",
  // A miss made dearer, or Redis moved further, on purpose (`--miss-cost-ms`, `--redis-rtt-ms`): the figure
  // asked, not what was added over the lab's own (it moves with the base measured, run to run).
  "miss_cost_ms",
  "redis_rtt_ms",
];

/** The columns an older CSV (no `*_added_ms`) used for the round trip added, where a newer one has the figure asked. */
const ADDED_BEFORE: Record<string, string> = {
  miss_cost_ms: "miss_cost_added_ms",
  redis_rtt_ms: "redis_rtt_added_ms",
};

/** Columns an older CSV lacks, read as the value every row of it had. */
const BEFORE_THE_COLUMN: Record<string, string> = { redis_server: "redis" };

/** The server and version every Redis tier of the row ran on: `Redis 7.0.15`, `Valkey 9.1.2`. */
export function redisServerLabel(row: ResultRow): string {
  const server = valueAsRead(row, "redis_server");
  const name = server === "valkey" ? "Valkey" : server === "redis" ? "Redis" : server || "Redis";
  return `${name} ${row.redis_version}`;
}

/**
 * A row's value of a column as read: an older CSV's `miss_cost_ms` / `redis_rtt_ms` was added, and says so;
 * a column it lacks, the value it had then (BEFORE_THE_COLUMN).
 */
export function valueAsRead(row: ResultRow, column: string): string {
  const value = row[column];
  if (value === undefined && !(column in row) && column in BEFORE_THE_COLUMN)
    return BEFORE_THE_COLUMN[column] as string;
  if (value === null || value === undefined) return "";
  const added = ADDED_BEFORE[column];
  return added !== undefined && !(added in row) ? `${value} (added)` : String(value);
}

/** Rows that may be compared only with a warning when these differ. */
const CONTEXT_COLUMNS: [string, string[]][] = [
  ["machines", ["cpu_model", "cpu_count", "mem_total_gb", "os", "kernel", "arch"]],
  [
    "versions",
    [
      "bun_version",
      "postgres_version",
      "redis_server",
      "redis_version",
      "tool_version",
      "services_mode",
      "git_sha",
    ],
  ],
  ["seeds", ["seeded_rows", "seed", "description_bytes", "key_seed", "warmup_s", "timeout_s", "pg_pool_max"]],
];

export function errorRatio(row: ResultRow): number | null {
  const errors = num(row.errors);
  const completed = num(row.completed);
  if (errors === null || completed === null) return null;
  const transport = errors - (completed - (num(row.ok) ?? completed));
  const attempted = completed + Math.max(transport, 0);
  return attempted > 0 ? errors / attempted : null;
}

/** Measured hit ratio ÷ the simulation's: 1.00 means the caches did what the key stream says they must. */
function hitVsExpected(row: ResultRow): number | null {
  const measured = num(row.hit_ratio);
  const expected = num(row.hit_ratio_expected);
  return measured !== null && expected !== null && expected > 0 ? measured / expected : null;
}

export function dbQueriesPerS(row: ResultRow): number | null {
  const queries = num(row.db_queries);
  const duration = num(row.duration_s);
  return queries !== null && duration !== null && duration > 0 ? queries / duration : null;
}

function contextWarnings(rows: ResultRow[]): string[] {
  const warnings: string[] = [];
  for (const [what, columns] of CONTEXT_COLUMNS) {
    const differing = columns
      .map((column) => [column, [...new Set(rows.map((row) => valueAsRead(row, column)))]] as const)
      .filter(([, values]) => values.length > 1);
    if (differing.length > 0) {
      warnings.push(
        `rows from different ${what}: ${differing.map(([column, values]) => `${column} = ${values.join(" | ")}`).join("; ")}`,
      );
    }
  }
  return warnings;
}

/** Valid repeats of one cell whose p50s differ more than this factor are flagged on the page. */
export const REPEAT_AGREEMENT = 2;

/** Whether repeats spread more than REPEAT_AGREEMENT× (max ÷ min of two or more positive values). */
export function disagree(repeats: Spread | null): repeats is Spread {
  return (
    repeats !== null && repeats.n >= 2 && repeats.min > 0 && repeats.max / repeats.min > REPEAT_AGREEMENT
  );
}

/**
 * A line per strategy whose valid repeats' p50s differ more than REPEAT_AGREEMENT×, with what its rows
 * recorded that may say why: a capacity search's step run again at its break, or the CPU others used.
 */
export function repeatWarnings(strategies: StrategySummary[], rows: ResultRow[]): string[] {
  return strategies.flatMap(({ strategy, p50Ms }) => {
    if (p50Ms === null || p50Ms.n < 2 || !(p50Ms.min > 0) || p50Ms.max / p50Ms.min <= REPEAT_AGREEMENT)
      return [];
    const mine = rows.filter((row) => row.strategy === strategy && row.valid === true);
    const values = mine.map((row) => `r${row.repeat} ${num(row.latency_p50_ms)?.toFixed(2)}`).join(", ");
    const steps = mine.map((row) => /capacity step .* (held|broke)/.exec(String(row.warnings ?? ""))?.[1]);
    const others = mine.map((row) => num(row.other_cpu_per_s));
    const why =
      steps.includes("held") && steps.includes("broke")
        ? "a capacity search ran this step again at its break (one held, one broke)"
        : others.every((other) => other !== null)
          ? `other processes' CPU ${others.map((other) => other?.toFixed(2)).join(", ")} cores: no stray process recorded, cause not found`
          : "the rows do not record the CPU other processes used (other_cpu_per_s): a stray process is not ruled out";
    return [
      `${strategy}'s p50 differs ${(p50Ms.max / p50Ms.min).toPrecision(3)}× across its valid repeats (${values} ms), more than ${REPEAT_AGREEMENT}×: ${why}`,
    ];
  });
}

function ratio(a: Spread | null, b: Spread | null): number | null {
  return a && b && b.median !== 0 ? a.median / b.median : null;
}

/** Groups and aggregates; group and strategy order follow the rows. */
export function summarize(rows: ResultRow[], options: { baseline?: string } = {}): GroupSummary[] {
  const baseline = options.baseline ?? "none";
  const groups = new Map<string, ResultRow[]>();
  for (const row of rows) {
    const key = ATTACK_COLUMNS.map((column) => valueAsRead(row, column)).join("\u0000");
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups.values()].map((group) => {
    const first = group[0] as ResultRow;
    const names = [...new Set(group.map((row) => String(row.strategy)))];
    const strategies = names.map((strategy): StrategySummary => {
      const mine = group.filter((row) => row.strategy === strategy);
      const valid = mine.filter((row) => row.valid === true);
      return {
        strategy,
        valid: valid.length,
        invalid: mine.length - valid.length,
        achievedRps: spread(valid.map((row) => num(row.achieved_rps))),
        p50Ms: spread(valid.map((row) => num(row.latency_p50_ms))),
        p90Ms: spread(valid.map((row) => num(row.latency_p90_ms))),
        p99Ms: spread(valid.map((row) => num(row.latency_p99_ms))),
        p99_9Ms: spread(valid.map((row) => num(row.latency_p99_9_ms))),
        errorRatio: spread(valid.map(errorRatio)),
        hitRatio: spread(valid.map((row) => num(row.hit_ratio))),
        hitRatioExpected: spread(valid.map((row) => num(row.hit_ratio_expected))),
        hitVsExpected: spread(valid.map(hitVsExpected)),
        hitRatioOptimal: spread(valid.map((row) => num(row.hit_ratio_optimal))),
        dbQueriesPerS: spread(valid.map(dbQueriesPerS)),
        staleReads: spread(valid.map((row) => num(row.stale_reads))),
        loadWaits: spread(valid.map((row) => num(row.load_waits))),
        refreshLoads: spread(valid.map((row) => num(row.refresh_loads))),
        loadsPerKeyPerTtl: spread(valid.map((row) => num(row.loads_per_key_per_ttl))),
        vsBaseline: { achievedRps: null, p99Ms: null, dbQueriesPerS: null },
      };
    });
    const base = strategies.find((s) => s.strategy === baseline);
    for (const s of strategies) {
      s.vsBaseline = {
        achievedRps: base ? ratio(s.achievedRps, base.achievedRps) : null,
        p99Ms: base ? ratio(s.p99Ms, base.p99Ms) : null,
        dbQueriesPerS: base ? ratio(s.dbQueriesPerS, base.dbQueriesPerS) : null,
      };
    }
    return {
      experiment: String(first.experiment),
      attack: String(first.attack),
      tool: String(first.tool),
      loadModel: String(first.load_model),
      offeredRps: num(first.offered_rps),
      connections: num(first.connections),
      latencyResolutionMs: num(first.latency_resolution_ms),
      strategies,
      invalid: group
        .filter((row) => row.valid !== true)
        .map((row) => ({
          strategy: String(row.strategy),
          repeat: num(row.repeat),
          reason: String(row.invalid_reason ?? ""),
        })),
      warnings: [...contextWarnings(group), ...repeatWarnings(strategies, group)],
      rows: group,
    };
  });
}

/** The distinct machines and versions the rows come from, one line each. */
export function machineLines(rows: ResultRow[]): string[] {
  const lines = new Set(
    rows.map(
      (row) =>
        `${row.cpu_model} × ${row.cpu_count}, ${row.mem_total_gb} GB, ${row.os} (${row.kernel}, ${row.arch}) · Bun ${row.bun_version} · PostgreSQL ${row.postgres_version} · ${redisServerLabel(row)} (${row.services_mode}) · ${row.tool} ${row.tool_version}`,
    ),
  );
  return [...lines];
}
