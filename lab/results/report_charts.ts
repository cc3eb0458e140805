/**
 * The report's charts as Vega-Lite specs (latency, cache and database load, saturation curves, passes, a
 * cell's timeline) and their rendering to SVG by vega's headless View, at build time: no browser.
 */
import * as vega from "vega";
import * as vl from "vega-lite";
import type { GroupSummary } from "./summary.ts";
import { faultOutcomes, outerTier, secondHitRatio, type TimelineRow } from "./timeline.ts";

export const FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif";
const STRATEGY_COLORS = {
  domain: ["none", "local", "redis", "two_tier", "tracking"],
  range: ["#9e9e9e", "#2e7d32", "#c62828", "#1565c0", "#d81b60"],
};

/**
 * The strategies' color scale: the four older ones always (a page renders as it did before tracking existed),
 * tracking only where it ran.
 */
export function strategyScale(present: Iterable<string>): { domain: string[]; range: string[] } {
  const shown = new Set(present);
  const domain = STRATEGY_COLORS.domain.filter((name) => name !== "tracking" || shown.has(name));
  return { domain, range: STRATEGY_COLORS.range.slice(0, domain.length) };
}

/** Renders a Vega-Lite spec to an SVG string (no browser). */
export async function renderSvg(spec: vl.TopLevelSpec): Promise<string> {
  const compiled = vl.compile({
    ...spec,
    config: { font: FONT, view: { stroke: null }, axis: { labelFontSize: 11, titleFontSize: 11 } },
  } as vl.TopLevelSpec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function strategyColor(present: Iterable<string>): Record<string, unknown> {
  return { field: "strategy", type: "nominal", scale: strategyScale(present), title: "strategy" };
}

const namesIn = (groups: GroupSummary[]) =>
  groups.flatMap((group) => group.strategies.map((s) => s.strategy));

/** Latency percentiles per strategy: grouped bars of medians with min–max whiskers. */
export function latencySpec(group: GroupSummary): vl.TopLevelSpec {
  const values = group.strategies.flatMap((s) =>
    (
      [
        ["p50", s.p50Ms],
        ["p90", s.p90Ms],
        ["p99", s.p99Ms],
        ["p99.9", s.p99_9Ms],
      ] as const
    )
      .filter(([, spread]) => spread !== null)
      .map(([percentile, spread]) => ({
        strategy: s.strategy,
        percentile,
        median: spread?.median,
        min: spread?.min,
        max: spread?.max,
      })),
  );
  return {
    title: { text: "Latency percentiles (ms, median of repeats, min–max whiskers)", fontSize: 12 },
    data: { values },
    width: { step: 22 },
    height: 200,
    encoding: {
      x: {
        field: "percentile",
        type: "ordinal",
        sort: ["p50", "p90", "p99", "p99.9"],
        title: null,
        axis: { labelAngle: 0 },
      },
      xOffset: { field: "strategy", sort: strategyScale(namesIn([group])).domain },
      color: strategyColor(namesIn([group])),
    },
    layer: [
      { mark: "bar", encoding: { y: { field: "median", type: "quantitative", title: "ms" } } },
      {
        mark: { type: "rule", color: "#333" },
        encoding: { y: { field: "min", type: "quantitative" }, y2: { field: "max" } },
      },
    ],
  } as vl.TopLevelSpec;
}

/** Hit ratio and database load per strategy, side by side. */
export function cacheSpec(group: GroupSummary): vl.TopLevelSpec {
  const values = group.strategies.map((s) => ({
    strategy: s.strategy,
    hitRatio: s.hitRatio?.median ?? null,
    hitRatioExpected: s.hitRatioExpected?.median ?? null,
    dbQueriesPerS: s.dbQueriesPerS?.median ?? null,
  }));
  const bar = (field: string, title: string, scale: Record<string, unknown> = {}) => ({
    mark: "bar",
    width: { step: 36 },
    height: 160,
    encoding: {
      x: {
        field: "strategy",
        type: "nominal",
        sort: strategyScale(namesIn([group])).domain,
        title: null,
        axis: { labelAngle: -30 },
      },
      y: { field, type: "quantitative", title, scale },
      color: { ...strategyColor(namesIn([group])), legend: null },
    },
  });
  const hit = bar("hitRatio", "hit ratio (tick: simulated)", { domain: [0, 1] });
  // The simulation of the same key stream as a black tick on each bar: a gap between the two is a finding.
  const simulated = {
    mark: { type: "tick", color: "#111", thickness: 2, size: 30 },
    encoding: {
      x: hit.encoding.x,
      y: { field: "hitRatioExpected", type: "quantitative", scale: { domain: [0, 1] } },
    },
  };
  return {
    data: { values },
    hconcat: [
      {
        width: hit.width,
        height: hit.height,
        layer: [{ mark: hit.mark, encoding: hit.encoding }, simulated],
      },
      bar("dbQueriesPerS", "DB queries / s"),
    ],
  } as vl.TopLevelSpec;
}

/** Saturation curves: achieved rps and p99 against the offered rate, one line per strategy. */
export function saturationSpec(groups: GroupSummary[]): vl.TopLevelSpec {
  const values = groups.flatMap((group) =>
    group.strategies
      .filter((s) => s.valid > 0)
      .map((s) => ({
        strategy: s.strategy,
        offered: group.offeredRps,
        achieved: s.achievedRps?.median ?? null,
        p99: s.p99Ms?.median ?? null,
      })),
  );
  const line = (field: string, title: string, scale: Record<string, unknown> = {}) => ({
    mark: { type: "line", point: true },
    width: 260,
    height: 200,
    encoding: {
      x: { field: "offered", type: "quantitative", title: "offered rps" },
      y: { field, type: "quantitative", title, scale },
      color: strategyColor(namesIn(groups)),
    },
  });
  return {
    title: { text: "Achieved rate and p99 against the offered rate (valid steps)", fontSize: 12 },
    data: { values },
    hconcat: [line("achieved", "achieved rps"), line("p99", "p99 ms (log)", { type: "log" })],
  } as vl.TopLevelSpec;
}

/** Per-attack (e.g. per-pass) latency for experiments whose attacks run in sequence. */
export function passesSpec(groups: GroupSummary[]): vl.TopLevelSpec {
  const order = groups.map((group) => group.attack);
  const values = groups.flatMap((group) =>
    group.strategies.flatMap((s) => [
      { strategy: s.strategy, attack: group.attack, percentile: "p50", ms: s.p50Ms?.median ?? null },
      { strategy: s.strategy, attack: group.attack, percentile: "p99", ms: s.p99Ms?.median ?? null },
    ]),
  );
  return {
    title: { text: "Latency per attack, in run order (ms)", fontSize: 12 },
    data: { values },
    mark: { type: "line", point: true },
    width: 300,
    height: 200,
    encoding: {
      x: { field: "attack", type: "ordinal", sort: order, title: null, axis: { labelAngle: 0 } },
      y: { field: "ms", type: "quantitative", title: "ms" },
      color: strategyColor(namesIn(groups)),
      strokeDash: { field: "percentile", type: "nominal" },
    },
  } as vl.TopLevelSpec;
}

/** Fault windows: shaded over the seconds they were in force, in every panel of a timeline. */
const FAULT_FILL = "#ef6c00";
const SERIES_COLORS: Record<string, string> = { sent: "#757575", ok: "#2e7d32", server: "#1565c0" };

/** 1, 2, 5 × the powers of ten spanning `values`: a log axis with a readable grid. */
function logTicks(values: number[]): number[] {
  const low = Math.floor(Math.log10(Math.min(...values)));
  const high = Math.ceil(Math.log10(Math.max(...values)));
  const ticks: number[] = [];
  for (let power = low; power <= high; power++) {
    for (const step of [1, 2, 5]) ticks.push(Number((step * 10 ** power).toPrecision(1)));
  }
  return ticks.filter((tick) => tick <= 10 ** high);
}

/**
 * One run's seconds over time, like `vegeta plot`: requests per second (sent and ok from the tool; the
 * server's requests when the tool gives none), p99 per second, and the hit ratio (reads without a database query), in
 * panels stacked on one time axis under a strip naming the faults, each fault window shaded in every panel.
 * Second s covers [s, s + 1): its point sits at s + 0.5 and a window over seconds a…b spans [a, b + 1), so a
 * shaded band covers exactly the points of the seconds the fault was in force.
 */
export function timelineSpec(seconds: TimelineRow[], title: string): vl.TopLevelSpec {
  const endS = Math.max(...seconds.map((row) => row.second)) + 1;
  const x = (field: string, axis: Record<string, unknown> | null) => ({
    field,
    type: "quantitative",
    scale: { domain: [0, endS], nice: false, zero: false },
    axis,
    title: axis === null ? null : "second of the measured run",
  });
  const windows = faultOutcomes(seconds).map((o) => ({ fault: o.fault, start: o.startS, end: o.endS + 1 }));
  // One row per fault label, so the labels of overlapping or adjacent windows never collide with each other
  // or with the lines.
  const labels = [...new Set(windows.map((w) => w.fault))];
  const strip = {
    width: 640,
    height: 15 * labels.length,
    data: { values: windows },
    encoding: { y: { field: "fault", type: "nominal", sort: labels, axis: null } },
    layer: [
      {
        name: "fault_strip",
        mark: { type: "rect", color: FAULT_FILL, opacity: 0.35 },
        encoding: { x: x("start", null), x2: { field: "end" } },
      },
      {
        name: "fault_labels",
        mark: {
          type: "text",
          align: "left",
          baseline: "middle",
          dx: 3,
          fontSize: 10,
          fontWeight: 600,
          color: "#8a3b00",
        },
        encoding: { x: { field: "start", type: "quantitative" }, text: { field: "fault" } },
      },
    ],
  };

  const tool = seconds[0]?.tool ?? "the tool";
  const hasTool = seconds.some((row) => row.sent !== null);
  const serverLabel = `server requests/s (${tool} gives no per-second counts)`;
  const rate = seconds.flatMap((row) =>
    hasTool
      ? [
          { t: row.second + 0.5, series: "sent/s", value: row.sent },
          { t: row.second + 0.5, series: "ok/s", value: row.ok },
        ]
      : [{ t: row.second + 0.5, series: serverLabel, value: row.server_requests }],
  );
  const p99 = seconds.flatMap((row) =>
    row.p99_ms === null ? [] : [{ t: row.second + 0.5, p99: row.p99_ms }],
  );
  const tier = outerTier(seconds);
  const hits = seconds.flatMap((row) => {
    const ratio = tier === null ? null : secondHitRatio(row);
    return ratio === null ? [] : [{ t: row.second + 0.5, ratio }];
  });
  const bottom = hits.length > 0 ? "hit_ratio" : p99.length > 0 ? "p99" : "rate";
  const logP99 = p99.length > 0 && p99.every((row) => row.p99 > 0);

  const panel = (name: string, values: object[], height: number, encoding: Record<string, unknown>) => {
    const axis =
      name === bottom
        ? { tickMinStep: 1, grid: true }
        : { labels: false, ticks: true, title: null, grid: true };
    const layer = (suffix: string, mark: Record<string, unknown>) => ({
      name: `${name}${suffix}`,
      data: { values },
      mark,
      encoding: { x: x("t", axis), ...encoding },
    });
    return {
      width: 640,
      height,
      layer: [
        ...(windows.length === 0
          ? []
          : [
              {
                name: "fault_windows",
                data: { values: windows },
                mark: { type: "rect", color: FAULT_FILL, opacity: 0.16 },
                encoding: { x: x("start", axis), x2: { field: "end" } },
              },
            ]),
        layer("", { type: "line", strokeWidth: 1.5 }),
        layer("_points", { type: "point", filled: true, size: 14, opacity: 1 }),
      ],
    };
  };
  const vconcat = [
    ...(windows.length > 0 ? [strip] : []),
    panel("rate", rate, 130, {
      y: { field: "value", type: "quantitative", title: "requests / s" },
      color: {
        field: "series",
        type: "nominal",
        scale: hasTool
          ? { domain: ["sent/s", "ok/s"], range: [SERIES_COLORS.sent, SERIES_COLORS.ok] }
          : { domain: [serverLabel], range: [SERIES_COLORS.server] },
        legend: { orient: "top", title: null, labelLimit: 640 },
      },
    }),
    ...(p99.length === 0
      ? []
      : [
          panel("p99", p99, 110, {
            y: {
              field: "p99",
              type: "quantitative",
              title: logP99 ? "p99 ms (log)" : "p99 ms",
              scale: logP99 ? { type: "log" } : {},
              axis: logP99 ? { values: logTicks(p99.map((row) => row.p99)) } : {},
            },
            color: { value: "#c62828" },
          }),
        ]),
    ...(hits.length === 0
      ? []
      : [
          panel("hit_ratio", hits, 80, {
            y: {
              field: "ratio",
              type: "quantitative",
              title: "hit ratio",
              scale: { domain: [0, 1] },
            },
            color: { value: "#6a1b9a" },
          }),
        ]),
  ];
  return { title: { text: title, fontSize: 12 }, spacing: 6, vconcat } as vl.TopLevelSpec;
}
