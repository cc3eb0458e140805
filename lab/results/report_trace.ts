/**
 * The trace block the report puts above a trace group's strategy table, as text cells the Markdown and the
 * HTML render alike: the trace's statistics (from the rows' trace_* columns), the curves of the segment the
 * run replayed (from `<experiment>.curves.csv`), and each strategy's measured hit ratio where it sits on them.
 */
import { CURVE_METHODS, type CurveRow } from "./curves_csv.ts";
import type { GroupSummary, ResultRow } from "./summary.ts";

/** Whether the group's rows replayed a trace. */
export function isTraceGroup(group: GroupSummary): boolean {
  return group.rows.some((row) => row.key_distribution === "trace");
}

const count = (value: unknown) =>
  typeof value === "number" ? value.toLocaleString("en-US") : value === null ? "unknown" : String(value);
const fixed = (value: unknown, digits: number) =>
  typeof value === "number" ? value.toFixed(digits) : "unknown";
const bytes = (value: unknown) =>
  typeof value === "number" ? `${value.toLocaleString("en-US")} B` : "unknown";

/** The trace the group replayed: its file (key_params) and order, and the statistics, as one row. */
export function traceStatsTable(group: GroupSummary): { title: string; head: string[]; rows: string[][] } {
  const row = group.rows.find((candidate) => candidate.key_distribution === "trace") as ResultRow;
  const head = [
    "requests",
    "distinct keys",
    "write share",
    "one-hit wonders",
    "compulsory miss",
    "Zipf alpha",
    "working set",
    "value p50 / p99",
    "reuse distance p50",
    "skipped lines",
  ];
  const cells = [
    count(row.trace_requests),
    count(row.trace_keys),
    fixed(row.trace_write_share, 3),
    fixed(row.trace_one_hit_wonder_ratio, 3),
    fixed(row.trace_compulsory_miss_ratio, 3),
    fixed(row.trace_zipf_alpha, 3),
    bytes(row.trace_working_set_bytes),
    `${bytes(row.trace_value_p50_bytes)} / ${bytes(row.trace_value_p99_bytes)}`,
    count(row.trace_reuse_distance_median),
    count(row.trace_skipped_lines),
  ];
  const params = String(row.key_params ?? "").replaceAll(";", ", ");
  return { title: `Trace: ${params} · ${row.trace_order ?? "order unknown"}`, head, rows: [cells] };
}

/** One run's curves of the group's attack: the latest run of the group that has them. */
export interface GroupCurves {
  runId: string;
  /** Runs of the group with curves (one drawn). */
  runs: number;
  rows: CurveRow[];
  reads: number;
  warmupRequests: number;
  fromPosition: number;
  toPosition: number;
  /** The capacity marked configured (l1_max_entries), and the 100% one (the segment's working set). */
  configuredEntries: number | null;
  workingSetEntries: number | null;
}

/** The group's curves, or null when no run of it has any (an older CSV, a run stopped early). */
export function groupCurves(group: GroupSummary, curves: CurveRow[]): GroupCurves | null {
  const runs = [...new Set(group.rows.map((row) => String(row.run_id)))];
  const mine = curves.filter(
    (c) => c.experiment === group.experiment && c.attack === group.attack && runs.includes(c.run_id),
  );
  const withCurves = runs.filter((run) => mine.some((c) => c.run_id === run));
  const runId = withCurves.sort().at(-1);
  if (runId === undefined) return null;
  const rows = mine.filter((c) => c.run_id === runId);
  const first = rows[0] as CurveRow;
  return {
    runId,
    runs: withCurves.length,
    rows,
    reads: first.reads,
    warmupRequests: first.warmup_requests,
    fromPosition: first.from_position,
    toPosition: first.to_position,
    configuredEntries: rows.find((c) => c.configured)?.capacity_entries ?? null,
    workingSetEntries: rows.find((c) => c.capacity_label === "100%")?.capacity_entries ?? null,
  };
}

export function curvesTitle(curves: GroupCurves): string {
  const runs = curves.runs > 1 ? `, the latest of ${curves.runs} runs` : "";
  return (
    `Miss-ratio curves of the segment replayed (run ${curves.runId}${runs}): warm-up positions ` +
    `0–${curves.warmupRequests - 1}, then ${curves.reads.toLocaleString("en-US")} measured reads of positions ` +
    `${curves.fromPosition}–${curves.toPosition - 1}`
  );
}

/** The curves' values at each capacity, the configured one marked: hit ratio / byte hit ratio. */
export function curvesTable(curves: GroupCurves): { head: string[]; rows: string[][] } {
  const capacities = [...new Map(curves.rows.map((c) => [c.capacity_entries, c])).values()].sort(
    (a, b) => a.capacity_entries - b.capacity_entries,
  );
  const at = (method: string, entries: number) => {
    const c = curves.rows.find((row) => row.method === method && row.capacity_entries === entries);
    if (c === undefined) return "n/a";
    return `${c.hit_ratio.toFixed(3)} / ${c.byte_hit_ratio === null ? "n/a" : c.byte_hit_ratio.toFixed(3)}`;
  };
  // The methods the run wrote: files from before the eviction policies have lru, local and belady only.
  const methods = CURVE_METHODS.filter((method) => curves.rows.some((row) => row.method === method));
  return {
    head: ["capacity", "entries", ...methods],
    rows: capacities.map((c) => [
      c.configured ? `${c.capacity_label} ◀ configured` : c.capacity_label,
      c.capacity_entries.toLocaleString("en-US"),
      ...methods.map((method) => at(method, c.capacity_entries)),
    ]),
  };
}

/** A strategy's measured median hit ratio, at the capacity it had (none has no cache, so no point). */
export interface MeasuredPoint {
  strategy: string;
  entries: number;
  hitRatio: number;
  /** What the point stands for. */
  note: string;
}

function l1Entries(group: GroupSummary, strategy: string): number | null {
  const row = group.rows.find((r) => r.strategy === strategy && typeof r.l1_max_entries === "number");
  return (row?.l1_max_entries as number | undefined) ?? null;
}

/**
 * local, two_tier and tracking at their l1_max_entries (two_tier's and tracking's point is their total hit
 * ratio, L1 + L2), redis at the segment's working set (it is bounded by TTL only); none is left out.
 */
export function measuredPoints(group: GroupSummary, curves: GroupCurves | null): MeasuredPoint[] {
  return group.strategies.flatMap((s): MeasuredPoint[] => {
    const hitRatio = s.hitRatio?.median ?? null;
    if (hitRatio === null) return [];
    if (s.strategy === "local" || s.strategy === "two_tier" || s.strategy === "tracking") {
      const entries = l1Entries(group, s.strategy);
      if (entries === null) return [];
      const note = s.strategy === "local" ? "at l1_max_entries" : "L1+L2, at its L1's l1_max_entries";
      return [{ strategy: s.strategy, entries, hitRatio, note }];
    }
    if (s.strategy === "redis" && curves?.workingSetEntries != null) {
      return [
        {
          strategy: s.strategy,
          entries: curves.workingSetEntries,
          hitRatio,
          note: "unbounded, TTL only: drawn at the working set",
        },
      ];
    }
    return [];
  });
}

export function measuredLine(points: MeasuredPoint[]): string {
  if (points.length === 0) return "measured: no strategy with a cache has a valid row";
  return `measured (median of valid repeats): ${points
    .map(
      (p) =>
        `${p.strategy} ${p.hitRatio.toFixed(3)} at ${p.entries.toLocaleString("en-US")} entries (${p.note})`,
    )
    .join("; ")}`;
}

/** How to read the block, printed under it. */
export const CURVES_NOTE =
  "hit ratio / byte hit ratio of the measured run's reads that a cache of that many entries would have had on " +
  "the exact stream sent (warm-up, then measured run; only the measured reads counted): lru exact LRU, local " +
  "quick-lru at maxSize = entries (it holds up to 2·entries − 1 keys), belady demand MIN over the whole sent " +
  "stream with its hits counted over the measured reads; sieve, s3fifo, wtinylfu and arc the eviction policies " +
  "at that many entries, replayed over the whole sent stream and counted over the measured reads; 100% is the " +
  "segment's distinct keys. Caches replay " +
  "cache-aside (a write or delete invalidates) without TTLs; a measured point below its curve is what TTLs, " +
  "concurrency or instances cost (docs/trace_statistics.md)";

/** The "no curves" line for a trace group whose runs wrote none. */
export const NO_CURVES = "no replayed curves for these runs (none in the curves file beside the CSV)";
