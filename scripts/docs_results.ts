/**
 * The guide pages' tables of results, generated from the committed reference CSVs (docs/results/<name>.csv)
 * so that no page keeps a measured figure by hand: the README's quickstart table, docs/your_workload.md's,
 * docs/miss_cost.md's miss_cost and payload_size tables, and docs/card.md's list of the break-even checks the
 * reference runs' cards make. Each figure is the one the results page prints: the median over the valid
 * repeats, at the page's rounding. `bun scripts/docs.ts` writes them; a test checks they are current.
 */
import { join } from "node:path";
import { buildCards } from "../lab/results/card.ts";
import { groupTable } from "../lab/results/report_tables.ts";
import { RESULTS_PAGES_DIR } from "../lab/results/results_pages.ts";
import {
  type GroupSummary,
  loadRows,
  type ResultRow,
  redisServerLabel,
  spread,
  summarize,
} from "../lab/results/summary.ts";

const STRATEGIES = ["none", "local", "redis", "two_tier"];

function groupsOf(experiment: string): GroupSummary[] {
  return summarize(loadRows([join(RESULTS_PAGES_DIR, `${experiment}.csv`)]));
}

function markdownTable(head: string[], rows: string[][]): string {
  return [head, head.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}

/** The median over the valid rows of one attack and strategy, as the results pages take it. */
function medianOf(rows: ResultRow[], where: { attack: string; strategy: string }, column: string) {
  const values = rows
    .filter((row) => row.valid === true && row.attack === where.attack && row.strategy === where.strategy)
    .map((row) => (row[column] === null ? null : Number(row[column])));
  return spread(values)?.median ?? null;
}

function fixed(value: number | null, digits: number): string {
  return value === null ? "—" : value.toFixed(digits);
}

/**
 * An experiment's one workload as the results page's strategy table shows it, with only `columns` (the page's
 * own headings), and the line saying where it was measured.
 */
export function strategyTable(experiment: string, columns: string[]): string {
  const groups = groupsOf(experiment);
  const [group] = groups;
  if (group === undefined || groups.length !== 1)
    throw new RangeError(`Cannot tabulate ${experiment}: one workload expected: received ${groups.length}`);
  const { head, rows } = groupTable(group, "none");
  const picks = columns.map((column) => {
    const at = head.indexOf(column);
    if (at === -1)
      throw new RangeError(`Cannot tabulate ${experiment}: no column ${column}: received ${head}`);
    return at;
  });
  const first = group.rows[0] as ResultRow;
  const machine = [
    `${first.cpu_model} × ${first.cpu_count}`,
    `Bun ${first.bun_version}`,
    `PostgreSQL ${String(first.postgres_version).split(" ")[0]}`,
    redisServerLabel(first),
    `${first.tool} ${first.tool_version}`,
  ].join(" · ");
  return `${markdownTable(
    columns,
    rows.map((row) => picks.map((at) => row[at] as string)),
  )}\n\n_Measured on: ${machine}._`;
}

/** One row per attack, a cell per strategy, then columns of one strategy's figures. */
function attackTable(
  experiment: string,
  options: {
    first: string;
    cell: (rows: ResultRow[], where: { attack: string; strategy: string }) => string;
    after: { head: string; strategy: string; column: string; digits: number }[];
  },
): string {
  const rows = loadRows([join(RESULTS_PAGES_DIR, `${experiment}.csv`)]);
  const attacks = [...new Set(rows.map((row) => String(row.attack)))];
  const head = [options.first, ...STRATEGIES, ...options.after.map((column) => column.head)];
  const body = attacks.map((attack) => [
    attack,
    ...STRATEGIES.map((strategy) => options.cell(rows, { attack, strategy })),
    ...options.after.map(({ strategy, column, digits }) =>
      fixed(medianOf(rows, { attack, strategy }, column), digits),
    ),
  ]);
  return markdownTable(head, body);
}

function latencies(rows: ResultRow[], where: { attack: string; strategy: string }): string {
  const p50 = fixed(medianOf(rows, where, "latency_p50_ms"), 2);
  return `${p50} / ${fixed(medianOf(rows, where, "latency_p99_ms"), 2)}`;
}

/** docs/miss_cost.md: p50 / p99 per strategy and attack, then the miss as the server and Postgres timed it. */
export function missCostTable(): string {
  return attackTable("miss_cost", {
    first: "attack",
    cell: latencies,
    after: [
      { head: "db load p50 ms (none)", strategy: "none", column: "db_load_ms_p50", digits: 2 },
      { head: "pg exec mean ms (none)", strategy: "none", column: "pg_exec_ms_mean", digits: 2 },
    ],
  });
}

/** docs/miss_cost.md: p50 / p99, server CPU and peak RSS per strategy and body size, then Redis's bytes. */
export function payloadSizeTable(): string {
  return attackTable("payload_size", {
    first: "attack",
    cell: (rows, where) => {
      const cpu = fixed(medianOf(rows, where, "server_cpu_s"), 1);
      return `${latencies(rows, where)}, ${cpu} s, ${fixed(medianOf(rows, where, "server_rss_peak_mb"), 0)} MB`;
    },
    after: [
      { head: "Redis B / entry (redis)", strategy: "redis", column: "redis_bytes_per_entry", digits: 0 },
      { head: "pg exec mean ms (none)", strategy: "none", column: "pg_exec_ms_mean", digits: 2 },
    ],
  });
}

function costsFrom(line: string): string {
  if (line.startsWith("from server-side")) return "server-side means (srv_*)";
  if (line.startsWith("from client p50s")) return "client p50s (no srv_*)";
  return "not computed (its card says why)";
}

/** docs/card.md: every card of the experiments' reference runs, where its costs came from, its checks' verdicts. */
export function breakEvenChecksTable(experiments: string[]): string {
  const rows = experiments.flatMap((experiment) =>
    buildCards(groupsOf(experiment)).map((card) => {
      const named = (verdict: string) =>
        card.checks
          .filter((check) => check.endsWith(verdict))
          .map((check) => check.slice(0, check.indexOf(":")))
          .join(", ") || "—";
      const workload = card.title.split(" · ")[1] ?? card.title;
      return [
        experiment,
        workload,
        costsFrom(card.breakEvens[0] ?? ""),
        named("rows agree"),
        named("rows DISAGREE"),
      ];
    }),
  );
  return markdownTable(["reference run", "card", "tier costs from", "rows agree", "rows disagree"], rows);
}
