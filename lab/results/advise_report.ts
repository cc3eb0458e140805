/**
 * `bun run advise`'s output from lab/model's advice: the card as terminal text, the JSON object, and the
 * two sweep charts (predicted mean against the Redis round trip and against the miss cost, one line per
 * strategy, crossovers marked) as Vega-Lite specs rendered to SVG like the report's.
 */
import type * as vl from "vega-lite";
import type { Advice, AdviseInputs, Axis } from "../model/advice.ts";
import { renderSvg, strategyScale } from "./report_charts.ts";

const AXIS_TITLE: Record<Axis, string> = {
  redis_rtt_ms: "added Redis round trip, ms",
  miss_cost_ms: "added miss cost per database round trip, ms",
};

function round(value: number, digits = 4): number {
  return Number(value.toFixed(digits));
}

function mb(bytes: number | null): string {
  return bytes === null ? "—" : `${(bytes / 1_048_576).toFixed(1)} MB`;
}

function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => (c <= 1 ? cell.padEnd(widths[c] as number) : cell.padStart(widths[c] as number)))
      .join("  ")
      .trimEnd();
  return [line(head), ...rows.map(line)];
}

/** A sweep as a terminal table: every 4th point of the axis and the input's own value. */
function sweepTable(advice: Advice, axis: Axis, at: number): string[] {
  const strategies = advice.ranked.map((r) => r.strategy);
  const xs = [...new Set(advice.sweeps[axis].map((p) => p.xMs))].filter((_, i) => i % 4 === 0);
  const rows = [...new Set([...xs, at])]
    .sort((a, b) => a - b)
    .map((x) => {
      const mark = x === at ? " ◀" : "";
      return [
        `${round(x, 3)}${mark}`,
        ...strategies.map((s) => {
          const p = advice.ranked.find((r) => r.strategy === s)?.prediction;
          if (p === undefined) return "—";
          const m = axis === "miss_cost_ms" ? x : null;
          const r = axis === "redis_rtt_ms" ? x : null;
          const mean =
            p.interceptMs +
            p.slopeMissMs * (m ?? advice.inputsAt.missCostMs) +
            p.slopeRedisMs * (r ?? advice.inputsAt.redisRttMs);
          return mean.toFixed(3);
        }),
      ];
    });
  return table([axis, ...strategies], rows);
}

function crossoverLines(advice: Advice, axis: Axis): string[] {
  const found = advice.crossovers.filter((c) => c.axis === axis);
  if (found.length === 0) return [`no crossover between 0 and ${advice.sweepMaxMs[axis]} ms`];
  return found.map(
    (c) =>
      `${c.belowFaster} = ${c.aboveFaster} at ${round(c.atMs, 3)} ms (${round(c.meanMs, 3)} ms): ${c.belowFaster} faster below, ${c.aboveFaster} above`,
  );
}

/** The card `bun run advise` prints. */
export function adviceText(
  advice: Advice,
  meta: { from: string; inputs: AdviseInputs; charts: string[] },
): string {
  const i = meta.inputs;
  const rows = advice.ranked.map((r, n) => [
    String(n + 1),
    r.excluded === null ? r.strategy : `${r.strategy} (excluded)`,
    r.predictedMeanMs.toFixed(3),
    r.dbQps.toFixed(0),
    r.redisCmdsPerRequest.toFixed(2),
    mb(r.redisMemoryBytes),
    r.stalenessBoundMs === null ? "unknown" : String(r.stalenessBoundMs),
  ]);
  return [
    "## Advice: predicted server-side mean per strategy (lab/model, docs/advise.md)",
    `from: ${meta.from}`,
    `inputs: miss cost +${i.missCostMs} ms per database round trip, Redis round trip +${i.redisRttMs} ms, hit ratio ${round(i.hitRatio)}, L1 hit ratio ${round(i.l1HitRatio)}, ${i.rateRps} rps, ${i.instances} instance(s), write ratio ${i.writeRatio}, staleness budget ${i.stalenessBudgetMs === null ? "none" : `${i.stalenessBudgetMs} ms`}`,
    "",
    `**Pick: ${advice.pick ?? "none fits the staleness budget"}**`,
    ...advice.conditions.map((line) => `- ${line}`),
    "",
    ...table(
      [
        "#",
        "strategy",
        "predicted mean ms",
        "DB q/s",
        "Redis cmds/req",
        "Redis memory",
        "staleness bound ms",
      ],
      rows,
    ),
    ...advice.skipped.map((line) => `not predicted: ${line}`),
    "",
    "Formulas (share × (base mean + ΔM × DB round trips + ΔR × Redis round trips on the path)):",
    ...advice.ranked.map(
      (r) => `- ${r.strategy} = ${r.prediction.formula} = ${r.predictedMeanMs.toFixed(3)} ms`,
    ),
    "",
    "Staleness and Redis memory:",
    ...advice.ranked.map((r) => `- ${r.strategy}: staleness ${r.staleness}; Redis ${r.redisMemory}`),
    "",
    `Predicted mean (ms) against the Redis round trip, miss cost held at ${i.missCostMs} ms:`,
    ...sweepTable(advice, "redis_rtt_ms", i.redisRttMs),
    ...crossoverLines(advice, "redis_rtt_ms").map((line) => `- crossover: ${line}`),
    "",
    `Predicted mean (ms) against the miss cost, Redis round trip held at ${i.redisRttMs} ms:`,
    ...sweepTable(advice, "miss_cost_ms", i.missCostMs),
    ...crossoverLines(advice, "miss_cost_ms").map((line) => `- crossover: ${line}`),
    "",
    ...advice.notes.map((line) => `note: ${line}`),
    ...meta.charts.map((path) => `chart: ${path}`),
    "",
    `Check it: ${advice.checkCommand}`,
    "  (quickstart runs its own workload: compare its srv_mean_ms with its predicted_mean_ms, not with these)",
  ].join("\n");
}

/** The object `bun run advise --json` prints. */
export function adviceJson(advice: Advice, meta: { from: string; inputs: AdviseInputs; charts: string[] }) {
  return {
    pick: advice.pick,
    conditions: advice.conditions,
    strategies: advice.ranked.map((r) => ({
      strategy: r.strategy,
      predicted_mean_ms: round(r.predictedMeanMs, 6),
      db_qps: round(r.dbQps, 3),
      redis_cmds_per_request: round(r.redisCmdsPerRequest, 6),
      staleness_bound_ms: r.stalenessBoundMs,
      staleness: r.staleness,
      redis_memory_bytes: r.redisMemoryBytes === null ? null : Math.round(r.redisMemoryBytes),
      redis_memory: r.redisMemory,
      excluded: r.excluded,
      formula: r.prediction.formula,
      slope_miss_cost: round(r.prediction.slopeMissMs, 6),
      slope_redis_rtt: round(r.prediction.slopeRedisMs, 6),
    })),
    skipped: advice.skipped,
    crossovers: advice.crossovers.map((c) => ({ ...c, atMs: round(c.atMs, 6), meanMs: round(c.meanMs, 6) })),
    inputs: meta.inputs,
    from: meta.from,
    notes: advice.notes,
    check: advice.checkCommand,
    charts: meta.charts,
  };
}

/** One sweep as a chart: a line per strategy, the crossovers as labelled points, the input as a rule. */
export function sweepSpec(advice: Advice, axis: Axis): vl.TopLevelSpec {
  const at = axis === "redis_rtt_ms" ? advice.inputsAt.redisRttMs : advice.inputsAt.missCostMs;
  const held =
    axis === "redis_rtt_ms"
      ? `miss cost held at ${advice.inputsAt.missCostMs} ms`
      : `Redis round trip held at ${advice.inputsAt.redisRttMs} ms`;
  const crossings = advice.crossovers
    .filter((c) => c.axis === axis)
    .map((c) => ({
      x: c.atMs,
      y: c.meanMs,
      label: `${c.belowFaster} = ${c.aboveFaster} at ${round(c.atMs, 2)}`,
    }));
  const x = { field: "x", type: "quantitative", title: AXIS_TITLE[axis] };
  return {
    title: { text: `Predicted server-side mean against the ${AXIS_TITLE[axis]} (${held})`, fontSize: 12 },
    width: 420,
    height: 240,
    layer: [
      {
        data: { values: advice.sweeps[axis].map((p) => ({ x: p.xMs, y: p.meanMs, strategy: p.strategy })) },
        mark: { type: "line" },
        encoding: {
          x,
          y: { field: "y", type: "quantitative", title: "predicted mean, ms" },
          color: {
            field: "strategy",
            type: "nominal",
            scale: strategyScale(advice.sweeps[axis].map((p) => p.strategy)),
            title: "strategy",
          },
        },
      },
      {
        data: { values: [{ x: at }] },
        mark: { type: "rule", strokeDash: [4, 3], color: "#555" },
        encoding: { x },
      },
      ...(crossings.length === 0
        ? []
        : [
            {
              data: { values: crossings },
              mark: { type: "point", filled: true, color: "#111", size: 40 },
              encoding: { x, y: { field: "y", type: "quantitative" } },
            },
            {
              data: { values: crossings },
              mark: { type: "text", dy: -9, fontSize: 9, color: "#111" },
              encoding: { x, y: { field: "y", type: "quantitative" }, text: { field: "label" } },
            },
          ]),
    ],
  } as vl.TopLevelSpec;
}

/** Both sweep charts as SVG, named by axis. */
export async function sweepSvgs(advice: Advice): Promise<Record<Axis, string>> {
  return {
    redis_rtt_ms: await renderSvg(sweepSpec(advice, "redis_rtt_ms")),
    miss_cost_ms: await renderSvg(sweepSpec(advice, "miss_cost_ms")),
  };
}
