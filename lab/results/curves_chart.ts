/**
 * A trace group's miss-ratio curves as a Vega-Lite spec: hit ratio against capacity in entries (log x), one
 * line per method, the configured capacity as a vertical rule, and each strategy's measured hit ratio as a
 * point where it sits (report_trace.ts's measuredPoints). Rendered to SVG by report_charts.ts's renderSvg.
 */
import type * as vl from "vega-lite";
import type { GroupCurves, MeasuredPoint } from "./report_trace.ts";

const METHOD_COLORS = {
  domain: ["lru", "local", "belady", "sieve", "s3fifo", "wtinylfu", "arc"],
  range: ["#6d4c41", "#2e7d32", "#7b1fa2", "#ef6c00", "#00897b", "#f9a825", "#5c6bc0"],
};
/** The eviction policies' lines are dashed, so the three the lab had before stay the eye's anchor. */
const POLICY_METHODS = ["sieve", "s3fifo", "wtinylfu", "arc"];
const STRATEGY_COLORS = {
  domain: ["local", "redis", "two_tier", "tracking"],
  range: ["#2e7d32", "#c62828", "#1565c0", "#d81b60"],
};

export function curvesSpec(curves: GroupCurves, points: MeasuredPoint[]): vl.TopLevelSpec {
  const lines = curves.rows.map((c) => ({
    method: c.method,
    entries: c.capacity_entries,
    hitRatio: c.hit_ratio,
    kind: POLICY_METHODS.includes(c.method) ? "eviction policy" : "lru / local / belady",
  }));
  // An explicit domain a little past the capacities drawn: vega-lite's nice log domain would pad to decades.
  const drawn = [...lines.map((line) => line.entries), ...points.map((p) => p.entries)];
  const x = {
    field: "entries",
    type: "quantitative",
    scale: { type: "log", domain: [Math.min(...drawn) / 1.25, Math.max(...drawn) * 1.25], nice: false },
    title: "capacity (entries, log)",
  };
  const y = { field: "hitRatio", type: "quantitative", scale: { domain: [0, 1] }, title: "hit ratio" };
  const configured = curves.configuredEntries;
  // The rule's label reads leftwards when the rule is the largest capacity, so it never runs off the plot.
  const rightmost = configured !== null && lines.every((line) => line.entries <= configured);
  // Only the curves the run wrote are in the legend (files from before the policies have three).
  const methods = METHOD_COLORS.domain.filter((method) => lines.some((line) => line.method === method));
  const methodScale = {
    domain: methods,
    range: methods.map((method) => METHOD_COLORS.range[METHOD_COLORS.domain.indexOf(method)]),
  };
  const present = STRATEGY_COLORS.domain.filter((strategy) => points.some((p) => p.strategy === strategy));
  const strategyScale = {
    domain: present,
    range: present.map((strategy) => STRATEGY_COLORS.range[STRATEGY_COLORS.domain.indexOf(strategy)]),
  };
  return {
    title: { text: "Hit ratio of the replayed segment against capacity; points: measured", fontSize: 12 },
    width: 420,
    height: 220,
    layer: [
      {
        name: "curves",
        data: { values: lines },
        mark: { type: "line", point: { size: 18 }, strokeWidth: 1.5 },
        encoding: {
          x,
          y,
          color: { field: "method", type: "nominal", scale: methodScale, title: "curve" },
          strokeDash: {
            field: "kind",
            type: "nominal",
            scale: {
              domain: ["lru / local / belady", "eviction policy"],
              range: [
                [1, 0],
                [4, 2],
              ],
            },
            legend: null,
          },
        },
      },
      ...(configured === null
        ? []
        : [
            {
              name: "configured",
              data: {
                values: [{ entries: configured, label: `configured ${configured.toLocaleString("en-US")}` }],
              },
              layer: [
                { mark: { type: "rule", color: "#555", strokeDash: [4, 3] }, encoding: { x } },
                {
                  mark: {
                    type: "text",
                    align: rightmost ? "right" : "left",
                    dx: rightmost ? -3 : 3,
                    fontSize: 10,
                    color: "#555",
                  },
                  encoding: { x, y: { value: 8 }, text: { field: "label" } },
                },
              ],
            },
          ]),
      ...(points.length === 0
        ? []
        : [
            {
              name: "measured",
              data: { values: points },
              mark: {
                type: "point",
                filled: true,
                size: 90,
                shape: "diamond",
                stroke: "#111",
                strokeWidth: 0.8,
              },
              encoding: {
                x,
                y,
                fill: { field: "strategy", type: "nominal", scale: strategyScale, title: "measured" },
                tooltip: [{ field: "strategy" }, { field: "hitRatio" }, { field: "note" }],
              },
            },
          ]),
    ],
    resolve: { scale: { color: "independent", fill: "independent" } },
  } as vl.TopLevelSpec;
}
