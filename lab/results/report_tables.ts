/**
 * The report's tables as text cells, which the Markdown and the HTML report render alike: a group's comparison
 * table and title, its timeline cells and their fault windows, and the notes printed under them.
 */
import { type GroupSummary, type ResultRow, type Spread, spread } from "./summary.ts";
import { faultOutcomes, type TimelineRow } from "./timeline.ts";

export function fmtSpread(value: Spread | null, digits: number): string {
  if (value === null) return "n/a";
  const median = value.median.toFixed(digits);
  const [min, max] = [value.min.toFixed(digits), value.max.toFixed(digits)];
  return value.n > 1 && min !== max ? `${median} (${min}–${max})` : median;
}

/** A latency spread; a median below the tool's resolution reads `< 1` (autocannon's 0 ms), never 0. */
export function fmtLatency(value: Spread | null, resolutionMs: number | null): string {
  if (value !== null && resolutionMs !== null && value.median < resolutionMs) return `< ${resolutionMs}`;
  return fmtSpread(value, 2);
}

export function fmtRatio(value: number | null): string {
  return value === null ? "n/a" : `${value.toFixed(2)}×`;
}

export function groupTitle(group: GroupSummary): string {
  const load =
    group.loadModel === "closed"
      ? `closed, ${group.connections} connections`
      : `${group.loadModel}, ${group.offeredRps ?? "?"} rps offered`;
  return `${group.experiment} · ${group.attack} · ${group.tool} · ${load}`;
}

/** The comparison table of a group as text cells (Markdown and HTML render the same cells). */
export function groupTable(group: GroupSummary, baseline: string): { head: string[]; rows: string[][] } {
  const stale = group.strategies.some((s) => s.staleReads !== null);
  // Keys expire during the measured run: who waited on the reloads, and how many there were, matter.
  const expiring = group.rows.some(
    (row) => Number(row.cache_ttl_ms) > 0 && Number(row.cache_ttl_ms) < Number(row.duration_s) * 1_000,
  );
  const head = [
    "strategy",
    "valid",
    "achieved rps",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "errors",
    "hit ratio",
    "simulated",
    "hit ÷ sim",
    "optimal",
    "db queries/s",
    `rps ÷ ${baseline}`,
    `p99 ÷ ${baseline}`,
    `db ÷ ${baseline}`,
    ...(stale ? ["stale reads"] : []),
    ...(expiring ? ["load waits", "refresh loads", "loads / key / TTL"] : []),
  ];
  const rows = group.strategies.map((s) => [
    s.strategy,
    `${s.valid}/${s.valid + s.invalid}`,
    fmtSpread(s.achievedRps, 0),
    fmtLatency(s.p50Ms, group.latencyResolutionMs),
    fmtLatency(s.p99Ms, group.latencyResolutionMs),
    fmtLatency(s.p99_9Ms, group.latencyResolutionMs),
    s.errorRatio ? `${(s.errorRatio.median * 100).toFixed(2)}%` : "n/a",
    fmtSpread(s.hitRatio, 3),
    fmtSpread(s.hitRatioExpected, 3),
    s.hitVsExpected ? `${s.hitVsExpected.median.toFixed(3)}` : "n/a",
    fmtSpread(s.hitRatioOptimal, 3),
    fmtSpread(s.dbQueriesPerS, 0),
    fmtRatio(s.vsBaseline.achievedRps),
    fmtRatio(s.vsBaseline.p99Ms),
    fmtRatio(s.vsBaseline.dbQueriesPerS),
    ...(stale ? [fmtSpread(s.staleReads, 0)] : []),
    ...(expiring
      ? [fmtSpread(s.loadWaits, 0), fmtSpread(s.refreshLoads, 0), fmtSpread(s.loadsPerKeyPerTtl, 3)]
      : []),
  ]);
  return { head, rows };
}

/** What the hit-ratio columns mean, printed under every table. */
export const HIT_RATIO_NOTE =
  "hit ratio: reads answered without a database query; simulated: the same key stream replayed through a " +
  "model of the strategy's caches; optimal: Belady's MIN at the same capacity (for oha, which does not say " +
  "which lines it drew, both replay an emulated draw, so the measured value can sit a draw's noise above " +
  "them). A row whose hit ratio is more than 0.02 from its simulation is invalid";

/**
 * The chart an experiment's groups share: a saturation curve when they step the offered rate, the passes in
 * run order when they are several otherwise, none for a single group (the HTML report and the pages agree).
 */
export function experimentChart(groups: GroupSummary[]): "saturation" | "passes" | null {
  if (groups.length < 2) return null;
  const offered = new Set(groups.map((group) => group.offeredRps));
  return offered.size > 1 && groups.every((group) => group.offeredRps !== null) ? "saturation" : "passes";
}

/** One cell's per-second timeline: a run of one strategy on one attack, every repeat of it. */
export interface TimelineCell {
  runId: string;
  experiment: string;
  attack: string;
  tool: string;
  strategy: string;
  timelineSource: string;
  /** In repeat order; `invalidReason` from the repeat's results row. */
  repeats: { repeat: number; rows: TimelineRow[]; invalidReason: string | null }[];
}

function runKey(row: Record<string, unknown>): string {
  return [row.run_id, row.experiment, row.attack, row.tool, row.strategy, row.repeat]
    .map(String)
    .join("\u0000");
}

/** The timeline cells of a group (run_id + strategy + attack), in the group's strategy order. */
export function timelineCells(group: GroupSummary, timeline: TimelineRow[]): TimelineCell[] {
  const results = new Map(group.rows.map((row) => [runKey(row), row]));
  const cells = new Map<string, TimelineCell>();
  for (const second of timeline) {
    const result = results.get(runKey(second));
    if (result === undefined) continue;
    const cellKey = [second.run_id, second.strategy].join("\u0000");
    let cell = cells.get(cellKey);
    if (cell === undefined) {
      cell = {
        runId: second.run_id,
        experiment: second.experiment,
        attack: second.attack,
        tool: second.tool,
        strategy: second.strategy,
        timelineSource: second.timeline_source,
        repeats: [],
      };
      cells.set(cellKey, cell);
    }
    let repeat = cell.repeats.find((r) => r.repeat === second.repeat);
    if (repeat === undefined) {
      const invalidReason = result.valid === true ? null : String(result.invalid_reason ?? "invalid");
      repeat = { repeat: second.repeat, rows: [], invalidReason };
      cell.repeats.push(repeat);
    }
    repeat.rows.push(second);
  }
  const order = group.strategies.map((s) => s.strategy);
  return [...cells.values()]
    .map((cell) => ({
      ...cell,
      repeats: cell.repeats
        .sort((a, b) => a.repeat - b.repeat)
        .map((r) => ({ ...r, rows: [...r.rows].sort((a, b) => a.second - b.second) })),
    }))
    .sort((a, b) => order.indexOf(a.strategy) - order.indexOf(b.strategy) || a.runId.localeCompare(b.runId));
}

/** The cells of a group whose timelines had faults: the ones the Markdown tables and the pages' charts show. */
export function faultedCells(group: GroupSummary, timeline: TimelineRow[]): TimelineCell[] {
  return timelineCells(group, timeline).filter((cell) =>
    cell.repeats.some(({ rows: seconds }) => seconds.some((second) => second.faults !== "")),
  );
}

/** The title of a cell's timeline chart, drawn from one of its repeats. */
export function timelineChartTitle(cell: TimelineCell, repeat: number): string {
  return `${cell.strategy} · ${cell.attack} · ${cell.tool} · repeat ${repeat}, per second`;
}

/** Timeline seconds that belong to no results row given (e.g. a run stopped before its row was written). */
export function unmatchedTimeline(rows: ResultRow[], timeline: TimelineRow[]): string[] {
  const results = new Set(rows.map(runKey));
  const runs = new Map<string, number>();
  for (const second of timeline) {
    if (results.has(runKey(second))) continue;
    const name = `${second.experiment} ${second.attack} ${second.strategy} r${second.repeat} (run ${second.run_id})`;
    runs.set(name, (runs.get(name) ?? 0) + 1);
  }
  return [...runs].map(([name, seconds]) => `${name}: ${seconds} s`);
}

export function timelineCellTitle(cell: TimelineCell): string {
  return `Timeline · ${cell.strategy} · run ${cell.runId} · ${cell.timelineSource}`;
}

/** What the timeline table's columns mean, printed under it. */
export const TIMELINE_NOTE =
  'one line per fault window (a fault\'s contiguous seconds) per repeat, or "none" for a repeat without ' +
  "faults; worst 1-s p99: the highest p99 of any one second of the window; failed: requests the tool counted " +
  "as errors during it (n/a: the tool gives no per-request results); recovery: whole seconds after the window " +
  "before the first second whose hit ratio (reads answered without a database query) is within 5% of its mean over " +
  "the 3 s before the window (one-second resolution: 0 means back in the first second after it)";

function maxOf(values: (number | null)[]): number | null {
  return spread(values)?.max ?? null;
}

function sumOf(values: (number | null)[]): number | null {
  const numbers = values.filter((value): value is number => value !== null);
  return numbers.length === 0 ? null : numbers.reduce((a, b) => a + b, 0);
}

/** A cell's fault windows as text cells (Markdown and HTML render the same cells). */
export function timelineTable(cell: TimelineCell): { head: string[]; rows: string[][] } {
  const head = ["repeat", "fault", "seconds", "worst 1-s p99 ms", "failed", "hit ratio before", "recovery s"];
  const ms = (value: number | null) => (value === null ? "n/a" : value.toFixed(2));
  const count = (value: number | null) => (value === null ? "n/a" : String(value));
  const rows = cell.repeats.flatMap(({ repeat, rows: seconds, invalidReason }) => {
    const label = invalidReason === null ? String(repeat) : `${repeat} (invalid)`;
    const outcomes = faultOutcomes(seconds);
    if (outcomes.length === 0) {
      const last = seconds[seconds.length - 1]?.second ?? 0;
      const first = seconds[0]?.second ?? 0;
      return [
        [
          label,
          "none",
          `${first}–${last}`,
          ms(maxOf(seconds.map((s) => s.p99_ms))),
          count(sumOf(seconds.map((s) => s.errors))),
          "n/a",
          "n/a",
        ],
      ];
    }
    return outcomes.map((o) => [
      label,
      o.fault,
      o.startS === o.endS ? `${o.startS}` : `${o.startS}–${o.endS}`,
      ms(o.worstP99Ms),
      count(o.failed),
      o.hitRatioBefore === null ? "n/a" : o.hitRatioBefore.toFixed(3),
      o.recoveryS === null ? `n/a (${o.recoveryNote})` : String(o.recoveryS),
    ]);
  });
  return { head, rows };
}
