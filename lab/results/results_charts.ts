/**
 * The published pages' charts, as SVG files beside them (docs/results/<experiment>/), so that a page read on
 * GitHub shows what the HTML report draws: per workload its latency and cache charts (and a trace's curves),
 * per experiment its saturation or passes chart, and the timeline of every cell that had faults.
 */
import { curvesSpec } from "./curves_chart.ts";
import type { CurveRow } from "./curves_csv.ts";
import {
  cacheSpec,
  latencySpec,
  passesSpec,
  renderSvg,
  saturationSpec,
  timelineSpec,
} from "./report_charts.ts";
import { experimentChart, faultedCells, groupTitle, timelineChartTitle } from "./report_tables.ts";
import { groupCurves, isTraceGroup, measuredPoints } from "./report_trace.ts";
import { type GroupSummary, type ResultRow, summarize } from "./summary.ts";
import type { TimelineRow } from "./timeline.ts";

export interface PageChart {
  /** Relative to the page's folder: `<experiment>/<file>.svg`. */
  file: string;
  /** The group title it belongs under, or "" for the experiment's own chart. */
  under: string;
  alt: string;
  svg: string;
}

function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");
}

function groupSlug(group: GroupSummary): string {
  const load = group.loadModel === "closed" ? `c${group.connections}` : `${group.offeredRps ?? "x"}rps`;
  return slug(`${group.attack}-${group.tool}-${load}`);
}

/** Every chart of one experiment's page, in page order. */
export async function pageCharts(
  experiment: string,
  rows: ResultRow[],
  options: { timeline?: TimelineRow[]; curves?: CurveRow[] } = {},
): Promise<PageChart[]> {
  const groups = summarize(rows);
  const charts: PageChart[] = [];
  const add = async (under: string, name: string, alt: string, spec: Parameters<typeof renderSvg>[0]) => {
    charts.push({ file: `${experiment}/${name}.svg`, under, alt, svg: await renderSvg(spec) });
  };
  const shared = experimentChart(groups);
  if (shared === "saturation") {
    await add(
      "",
      "saturation",
      `${experiment}: p99 and throughput against the offered rate`,
      saturationSpec(groups),
    );
  } else if (shared === "passes") {
    await add(
      "",
      "passes",
      `${experiment}: each workload's p50 and hit ratio by strategy`,
      passesSpec(groups),
    );
  }
  for (const group of groups) {
    const title = groupTitle(group);
    const base = groupSlug(group);
    await add(title, `${base}-latency`, `${title}: p50 and p99 by strategy`, latencySpec(group));
    await add(
      title,
      `${base}-cache`,
      `${title}: hit ratio and database queries by strategy`,
      cacheSpec(group),
    );
    const curves = isTraceGroup(group) ? groupCurves(group, options.curves ?? []) : null;
    if (curves !== null) {
      const points = measuredPoints(group, curves);
      await add(
        title,
        `${base}-curves`,
        `${title}: the replayed trace's hit-ratio curves`,
        curvesSpec(curves, points),
      );
    }
    // As the Markdown tables: the timelines of cells with faults; a calm run's seconds stay in its CSV.
    for (const cell of faultedCells(group, options.timeline ?? [])) {
      const [drawn] = cell.repeats;
      if (drawn === undefined) continue;
      const heading = timelineChartTitle(cell, drawn.repeat);
      await add(
        title,
        `${base}-${slug(cell.strategy)}-timeline`,
        `${heading}: requests, p99 and hit ratio, the fault windows shaded`,
        timelineSpec(drawn.rows, heading),
      );
    }
  }
  return charts;
}

/** The Markdown lines that show `under`'s charts (images relative to the page). */
export function chartLines(charts: PageChart[], under: string): string[] {
  return charts.filter((chart) => chart.under === under).map((chart) => `![${chart.alt}](${chart.file})`);
}
