/**
 * `bun run advise`'s output from lab/model's advice: the card as terminal text, the JSON object, and the
 * two sweep charts (predicted mean against the Redis round trip and against the miss cost, one line per
 * strategy, crossovers marked) as Vega-Lite specs rendered to SVG like the report's.
 */
import type * as vl from "vega-lite";
import type { Advice, AdviseInputs, Axis } from "../model/advice.ts";
import { renderSvg, strategyScale } from "./report_charts.ts";

/** Where the costs come from, as `bun run advise` found it. */
export interface AdviceMeta {
  from: string;
  inputs: AdviseInputs;
  charts: string[];
  base?: {
    file: string;
    runId: string;
    machine: string;
    missMs: number | null;
    missSource: string;
    redisMs: number | null;
    redisSource: string;
  };
}

/** A figure to 3 significant digits (whole numbers from 1 000 up): what a prediction's spread supports. */
export function sig(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 1_000) return String(Math.round(value));
  return String(Number(value.toPrecision(3)));
}

function withInterval(value: number | null, interval: [number, number] | null): string {
  if (value === null) return "—";
  if (interval === null || sig(interval[0]) === sig(interval[1])) return sig(value);
  return `${sig(value)} (${sig(interval[0])}–${sig(interval[1])})`;
}

function capacityCell(r: Advice["ranked"][number]): string {
  if (r.capacity.rps === null) return "—";
  return `${sig(r.capacity.rps)} (${r.capacity.bound})`;
}

function rateCell(r: Advice["ranked"][number]): string {
  const check = r.rateCheck;
  if (check === null) return "";
  if (check.instances === null) return "unknown";
  return check.under ? "yes" : `no: ${check.instances} instances`;
}

const AXIS_TITLE: Record<Axis, string> = {
  redis_rtt_ms: "Redis round trip added to the base run's, ms",
  miss_cost_ms: "miss cost added to the base run's, ms",
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
export function adviceText(advice: Advice, meta: AdviceMeta): string {
  const i = meta.inputs;
  const checking = i.checkRateRps !== null;
  const rows = advice.ranked.map((r, n) => [
    String(n + 1),
    r.excluded === null ? r.strategy : `${r.strategy} (excluded)`,
    r.outside === null ? withInterval(r.predictedMeanMs, r.meanInterval) : "outside",
    r.outside === null
      ? `${withInterval(r.predictedP99Ms, r.p99Interval)}${r.p99Step === null ? "" : " *"}`
      : "outside",
    r.outside === null && r.predictedClientP99Ms !== null ? sig(r.predictedClientP99Ms) : "—",
    capacityCell(r),
    ...(checking ? [rateCell(r)] : []),
    sig(r.dbQps),
    r.redisCmdsPerRequest.toFixed(2),
    mb(r.redisMemoryBytes),
    r.stalenessBoundMs === null ? "unknown" : String(r.stalenessBoundMs),
  ]);
  const b = meta.base;
  const yours = (asked: number | null, baseMs: number | null, source: string, what: string) =>
    asked === null
      ? `${what} the base run's own (${baseMs === null ? "unknown" : `${sig(baseMs)} ms`}: ${source})`
      : `${what} ${sig(asked)} ms (yours; the base run's own ${baseMs === null ? "unknown" : `${sig(baseMs)} ms, ${sig(asked - baseMs)} ms added`})`;
  return [
    `## Advice: predicted server-side mean, p99 and capacity per strategy (lab/model, docs/advise.md)`,
    b ? `costs from: ${b.machine} — ${meta.from}` : `from: ${meta.from}`,
    `inputs: ${b ? yours(i.askedMissCostMs, b.missMs, b.missSource, "miss cost") : `miss cost +${sig(i.missCostMs)} ms`}, ${b ? yours(i.askedRedisRttMs, b.redisMs, b.redisSource, "Redis round trip") : `Redis +${sig(i.redisRttMs)} ms`}`,
    `        hit ratio ${sig(i.hitRatio)}, L1 hit ratio ${sig(i.l1HitRatio)}, ${sig(i.rateRps)} rps, pool ${i.pgPoolMax}, ${sig(i.cores)} cores, p99 target ${sig(i.p99TargetMs)} ms, ${i.instances} instance(s), write ratio ${sig(i.writeRatio)}, staleness budget ${i.stalenessBudgetMs === null ? "none" : `${i.stalenessBudgetMs} ms`}`,
    "",
    `**Pick: ${advice.pick ?? "none fits the staleness budget"}**`,
    ...advice.conditions.map((line) => `- ${line}`),
    "",
    ...table(
      [
        "#",
        "strategy",
        "mean ms",
        "p99 ms",
        "client p99 ms",
        `capacity rps at p99 ≤ ${sig(i.p99TargetMs)} ms`,
        ...(checking ? [`holds ${sig(i.checkRateRps as number)} rps`] : []),
        "DB q/s",
        "Redis cmds/req",
        "Redis memory",
        "staleness bound ms",
      ],
      rows,
    ),
    advice.ranked.some((r) => r.meanInterval !== null)
      ? "(low–high): each base repeat predicted alone"
      : "no interval: the base run has one repeat",
    ...advice.ranked
      .filter((r) => r.outside !== null)
      .map((r) => `outside the model: ${r.strategy}: ${r.outside}`),
    ...advice.ranked
      .filter((r) => r.predictedP99Ms === null && r.p99Reason !== null)
      .map((r) => `no p99 for ${r.strategy}: ${r.p99Reason}`),
    ...advice.ranked
      .filter((r) => r.capacity.rps === null && r.capacity.reason !== null)
      .map((r) => `no capacity for ${r.strategy}: ${r.capacity.reason}`),
    ...advice.skipped.map((line) => `not predicted: ${line}`),
    "",
    "Capacity bounds (rps; the least binds):",
    ...advice.ranked.map((r) => {
      const bounds = Object.entries(r.capacity.bounds)
        .map(([name, rps]) => `${name} ${rps === null ? "—" : sig(rps)}`)
        .join(", ");
      return `- ${r.strategy}: ${bounds}`;
    }),
    ...[...new Set(advice.ranked.flatMap((r) => r.capacity.notes))].map((line) => `  note: ${line}`),
    "",
    "Formulas (share × (base mean + ΔM × DB round trips + ΔR × Redis round trips on the path)):",
    ...advice.ranked.map((r) => `- ${r.strategy} = ${r.prediction.formula} = ${sig(r.predictedMeanMs)} ms`),
    "",
    "Staleness and Redis memory:",
    ...advice.ranked.map((r) => `- ${r.strategy}: staleness ${r.staleness}; Redis ${r.redisMemory}`),
    "",
    `Predicted mean at light load (ms) against the Redis round trip added, miss cost held at +${sig(i.missCostMs)} ms:`,
    ...sweepTable(advice, "redis_rtt_ms", i.redisRttMs),
    ...crossoverLines(advice, "redis_rtt_ms").map((line) => `- crossover: ${line}`),
    "",
    `Predicted mean at light load (ms) against the miss cost added, Redis round trip held at +${sig(i.redisRttMs)} ms:`,
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
export function adviceJson(advice: Advice, meta: AdviceMeta) {
  const interval = (v: [number, number] | null) => (v === null ? null : [round(v[0], 6), round(v[1], 6)]);
  return {
    pick: advice.pick,
    conditions: advice.conditions,
    base: meta.base
      ? {
          file: meta.base.file,
          run_id: meta.base.runId,
          machine: meta.base.machine,
          miss_cost_ms: meta.base.missMs,
          miss_cost_source: meta.base.missSource,
          redis_rtt_ms: meta.base.redisMs,
          redis_rtt_source: meta.base.redisSource,
        }
      : null,
    strategies: advice.ranked.map((r) => ({
      strategy: r.strategy,
      predicted_mean_ms: round(r.predictedMeanMs, 6),
      predicted_p99_ms: r.predictedP99Ms === null ? null : round(r.predictedP99Ms, 6),
      predicted_client_p99_ms: r.predictedClientP99Ms === null ? null : round(r.predictedClientP99Ms, 6),
      predicted_capacity_rps: r.capacity.rps === null ? null : round(r.capacity.rps, 1),
      capacity_bound: r.capacity.bound,
      capacity_bounds: Object.fromEntries(
        Object.entries(r.capacity.bounds).map(([k, v]) => [k, v === null ? null : round(v, 1)]),
      ),
      mean_interval_ms: interval(r.meanInterval),
      p99_interval_ms: interval(r.p99Interval),
      p99_reason: r.p99Reason,
      p99_step: r.p99Step,
      capacity_reason: r.capacity.reason,
      outside: r.outside,
      rate_check: r.rateCheck,
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
