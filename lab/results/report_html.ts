/**
 * The report as one self-contained static page: charts are Vega-Lite specs compiled and rendered to SVG by
 * vega's headless View at build time, so the page needs no script, no server and no network to open.
 */

import { buildCards, cardHtml } from "./card.ts";
import { curvesSpec } from "./curves_chart.ts";
import type { CurveRow } from "./curves_csv.ts";
import {
  cacheSpec,
  FONT,
  latencySpec,
  passesSpec,
  renderSvg,
  saturationSpec,
  timelineSpec,
} from "./report_charts.ts";
import { experimentsMeta } from "./report_path.ts";
import {
  experimentChart,
  groupTable,
  groupTitle,
  HIT_RATIO_NOTE,
  TIMELINE_NOTE,
  type TimelineCell,
  timelineCells,
  timelineCellTitle,
  timelineChartTitle,
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

function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

function htmlTable(head: string[], rows: string[][]): string {
  return `<table><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join("")}</tr></thead><tbody>${rows
    .map(
      (cells) =>
        `<tr>${cells.map((c, i) => `<td${i === 0 ? ' class="s"' : ""}>${escapeHtml(c)}</td>`).join("")}</tr>`,
    )
    .join("")}</tbody></table>`;
}

function tableHtml(group: GroupSummary, baseline: string): string {
  const { head, rows } = groupTable(group, baseline);
  const tiers = tierTable(group);
  const tierHtml =
    tiers === null ? "" : `${htmlTable(tiers.head, tiers.rows)}<p class="note">${escapeHtml(TIER_NOTE)}.</p>`;
  return `${htmlTable(head, rows)}<p class="note">${escapeHtml(HIT_RATIO_NOTE)}.</p>${tierHtml}`;
}

/** A trace group's block: its statistics, the chart of the replayed curves with the measured points, the values. */
async function traceHtml(group: GroupSummary, curves: CurveRow[]): Promise<string> {
  const stats = traceStatsTable(group);
  const parts = [`<h4>${escapeHtml(stats.title)}</h4>`, htmlTable(stats.head, stats.rows)];
  const mine = groupCurves(group, curves);
  if (mine === null) return [...parts, `<p class="note">${escapeHtml(NO_CURVES)}.</p>`].join("");
  const points = measuredPoints(group, mine);
  const table = curvesTable(mine);
  parts.push(
    `<h4>${escapeHtml(curvesTitle(mine))}</h4>`,
    `<figure class="chart curves">${await renderSvg(curvesSpec(mine, points))}<figcaption>${escapeHtml(
      `${measuredLine(points)}.`,
    )}</figcaption></figure>`,
    `<details><summary>the curves' values (hit ratio / byte hit ratio)</summary>${htmlTable(table.head, table.rows)}</details>`,
    `<p class="note">${escapeHtml(CURVES_NOTE)}.</p>`,
  );
  return parts.join("");
}

/** A cell's timeline: the chart of its first repeat, then every repeat's fault windows as a table. */
async function timelineHtml(cell: TimelineCell): Promise<string> {
  const [drawn] = cell.repeats;
  if (drawn === undefined) return "";
  const which =
    cell.repeats.length > 1
      ? `repeat ${drawn.repeat} of ${cell.repeats.length} drawn; the table lists every repeat`
      : `repeat ${drawn.repeat}`;
  const invalid = drawn.invalidReason === null ? "" : ` (invalid: ${drawn.invalidReason})`;
  const title = timelineChartTitle(cell, drawn.repeat);
  const { head, rows } = timelineTable(cell);
  return `<h4>${escapeHtml(timelineCellTitle(cell))}</h4>
<figure class="chart timeline">${await renderSvg(timelineSpec(drawn.rows, title))}<figcaption>${escapeHtml(
    `${which}${invalid}. Shaded: the seconds each fault was in force. Source: ${cell.timelineSource}.`,
  )}</figcaption></figure>${htmlTable(head, rows)}`;
}

/** The whole page. */
export async function reportHtml(
  rows: ResultRow[],
  options: { baseline?: string; title?: string; timeline?: TimelineRow[]; curves?: CurveRow[] } = {},
): Promise<string> {
  const baseline = options.baseline ?? "none";
  const timeline = options.timeline ?? [];
  const groups = summarize(rows, { baseline });
  const experiments = [...new Set(groups.map((group) => group.experiment))];
  const sections: string[] = [];
  for (const experiment of experiments) {
    const mine = groups.filter((group) => group.experiment === experiment);
    const parts = [`<h2>${escapeHtml(experiment)}</h2>`];
    const shared = experimentChart(mine);
    if (shared === "saturation") {
      parts.push(`<figure class="chart">${await renderSvg(saturationSpec(mine))}</figure>`);
    } else if (shared === "passes") {
      parts.push(`<figure class="chart">${await renderSvg(passesSpec(mine))}</figure>`);
    }
    for (const group of mine) {
      parts.push(`<h3>${escapeHtml(groupTitle(group))}</h3>`);
      for (const warning of group.warnings) parts.push(`<p class="warn">⚠ ${escapeHtml(warning)}</p>`);
      if (isTraceGroup(group)) parts.push(await traceHtml(group, options.curves ?? []));
      parts.push(
        `<div class="charts"><figure class="chart">${await renderSvg(latencySpec(group))}</figure><figure class="chart">${await renderSvg(cacheSpec(group))}</figure></div>`,
        tableHtml(group, baseline),
      );
      if (group.invalid.length > 0) {
        parts.push(
          `<details><summary>${group.invalid.length} invalid row(s), excluded</summary><ul>${group.invalid
            .map((row) => `<li>${escapeHtml(`${row.strategy} r${row.repeat ?? "?"}: ${row.reason}`)}</li>`)
            .join("")}</ul></details>`,
        );
      }
      const cells = timelineCells(group, timeline);
      for (const cell of cells) parts.push(await timelineHtml(cell));
      if (cells.length > 0) parts.push(`<p class="note">${escapeHtml(TIMELINE_NOTE)}.</p>`);
    }
    sections.push(`<section>${parts.join("\n")}</section>`);
  }
  const unmatched = unmatchedTimeline(rows, timeline);
  if (unmatched.length > 0) {
    sections.push(
      `<p class="warn">⚠ ${escapeHtml(`timeline seconds of runs without a results row, not drawn: ${unmatched.join("; ")}`)}</p>`,
    );
  }
  const title = options.title ?? `cachelab report: ${experiments.join(", ")}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">${experimentsMeta(experiments)}<title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:${FONT};margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2.5rem}h3{font-size:1rem;margin-top:1.5rem}
.machine{background:#f6f6f6;padding:.6rem .9rem;font-size:.85rem;border-radius:4px}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start}figure.chart{margin:.5rem 0}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0 1rem}th,td{border-bottom:1px solid #e3e3e3;padding:.25rem .6rem;text-align:right}
th{background:#fafafa}td.s,th:first-child{text-align:left;font-weight:600}.warn{color:#8a5300}
section.card{border:1px solid #ccc;border-radius:4px;padding:.2rem 1rem;margin:1rem 0}
.note{font-size:.8rem;color:#555;max-width:60rem}h4{font-size:.9rem;margin:1.2rem 0 .2rem}
figcaption{font-size:.8rem;color:#555;max-width:60rem}
</style></head><body>
<h1>${escapeHtml(title)}</h1>
${buildCards(groups, options.curves ?? [])
  .map(cardHtml)
  .join("\n")}
<div class="machine"><strong>Measured on</strong><ul>${machineLines(rows)
    .map((line) => `<li>${escapeHtml(line)}</li>`)
    .join(
      "",
    )}</ul>${rows.length} rows; medians across repeats with min–max; invalid rows excluded and listed; ratios against <code>${escapeHtml(baseline)}</code>.</div>
${sections.join("\n")}
</body></html>
`;
}
