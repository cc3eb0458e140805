/** The report as Markdown (`bun run report`'s default): pasteable into an issue or a post. */

import { type CapacityRow, capacitiesMarkdown } from "./capacities_csv.ts";
import { buildCards, cardMarkdown } from "./card.ts";
import type { CurveRow } from "./curves_csv.ts";
import {
  faultedCells,
  groupTable,
  groupTitle,
  HIT_RATIO_NOTE,
  TIMELINE_NOTE,
  timelineCellTitle,
  timelineTable,
  unmatchedTimeline,
} from "./report_tables.ts";
import {
  CURVES_NOTE,
  curvesTable,
  curvesTitle,
  groupCurves,
  isTraceGroup,
  measuredLine,
  measuredPoints,
  NO_CURVES,
  traceStatsTable,
} from "./report_trace.ts";
import { type GroupSummary, machineLines, type ResultRow, summarize } from "./summary.ts";
import { TIER_NOTE, tierTable } from "./tier_table.ts";
import type { TimelineRow } from "./timeline.ts";

function markdownTable(head: string[], rows: string[][]): string[] {
  return [
    `| ${head.join(" | ")} |`,
    `|${" --- |".repeat(head.length)}`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ];
}

/** A trace group's block: its statistics, the replayed curves at each capacity, the measured hit ratios. */
function traceBlock(group: GroupSummary, curves: CurveRow[]): string[] {
  const stats = traceStatsTable(group);
  const out = [`**${stats.title}**`, "", ...markdownTable(stats.head, stats.rows), ""];
  const mine = groupCurves(group, curves);
  if (mine === null) return [...out, `_${NO_CURVES}_`, ""];
  const table = curvesTable(mine);
  out.push(`**${curvesTitle(mine)}**`, "", ...markdownTable(table.head, table.rows), "");
  out.push(measuredLine(measuredPoints(group, mine)), "", `_${CURVES_NOTE}._`, "");
  return out;
}

/**
 * Markdown: a decision card per group (card.ts), the machine block, then one table per group (pasteable into an issue or a post), each followed
 * by its cells' timeline tables when `timeline` holds their seconds; a trace group's table follows its
 * trace block (statistics and the replayed curves of `curves`).
 */
export function reportMarkdown(
  rows: ResultRow[],
  options: {
    baseline?: string;
    timeline?: TimelineRow[];
    curves?: CurveRow[];
    /** A capacity search's answer (`<experiment>.capacities.csv`), first: it is what the run was for. */
    capacities?: CapacityRow[];
    /** Image lines for a group's title ("" for the experiment's own charts): the published pages' SVGs. */
    charts?: (under: string) => string[];
  } = {},
): string {
  const baseline = options.baseline ?? "none";
  const timeline = options.timeline ?? [];
  const groups = summarize(rows, { baseline });
  // The answer first: a capacity search's, then one decision card per workload, then the evidence.
  const out = capacitiesMarkdown(options.capacities ?? []);
  out.push(...buildCards(groups, options.curves ?? []).flatMap(cardMarkdown));
  out.push("**Measured on:**", ...machineLines(rows).map((line) => `- ${line}`), "");
  const charts = options.charts ?? (() => []);
  if (charts("").length > 0) out.push(...charts(""), "");
  for (const group of groups) {
    out.push(`### ${groupTitle(group)}`, "");
    if (isTraceGroup(group)) out.push(...traceBlock(group, options.curves ?? []));
    out.push(`median (min–max) across repeats; ${HIT_RATIO_NOTE}`, "");
    for (const warning of group.warnings) out.push(`> ⚠ ${warning}`, "");
    const { head, rows: cells } = groupTable(group, baseline);
    out.push(...markdownTable(head, cells));
    if (charts(groupTitle(group)).length > 0) out.push("", ...charts(groupTitle(group)));
    if (group.invalid.length > 0) {
      out.push("", `Invalid rows, excluded: ${group.invalid.length}`);
      for (const row of group.invalid) out.push(`- ${row.strategy} r${row.repeat ?? "?"}: ${row.reason}`);
    }
    out.push("");
    const tiers = tierTable(group);
    if (tiers !== null) out.push(...markdownTable(tiers.head, tiers.rows), "", `_${TIER_NOTE}._`, "");
    // Fault tables only where faults were injected: a calm run's seconds are in the charts and the file.
    const timelines = faultedCells(group, timeline);
    for (const cell of timelines) {
      const table = timelineTable(cell);
      out.push(`#### ${timelineCellTitle(cell)}`, "", ...markdownTable(table.head, table.rows), "");
    }
    if (timelines.length > 0) out.push(TIMELINE_NOTE, "");
  }
  const unmatched = unmatchedTimeline(rows, timeline);
  if (unmatched.length > 0) {
    out.push(`> ⚠ timeline seconds of runs without a results row, not reported: ${unmatched.join("; ")}`, "");
  }
  return out.join("\n");
}
