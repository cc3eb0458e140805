/** A comparison (lab/results/comparison.ts) as the plain text `bun run compare` prints. */
import type { Comparison, MetricChange, Regression } from "./comparison.ts";
import { MIN_REPEATS_FOR_U } from "./significance.ts";
import { disagree, REPEAT_AGREEMENT } from "./summary.ts";

function figure(value: number | null | undefined, metric?: string): string {
  if (value === null || value === undefined) return "—";
  if (metric === "hit_ratio") return value.toFixed(3);
  const magnitude = Math.abs(value);
  return magnitude >= 100 ? value.toFixed(0) : magnitude >= 10 ? value.toFixed(1) : value.toFixed(2);
}

function signedPct(value: number | null): string {
  if (value === null) return "—";
  return `${value >= 0 ? "+" : "−"}${Math.abs(value).toFixed(1)}%`;
}

function pValue(p: number): string {
  return p < 0.001 ? "p<0.001" : `p=${p.toFixed(3)}`;
}

/** benchstat's convention: the delta when p < α, "~" otherwise; no p-value without a test. */
function deltaCell(change: MetricChange): string {
  if (change.test.p === null)
    return change.deltaPct === null ? "—" : `${signedPct(change.deltaPct)} (untested)`;
  return change.significant ? signedPct(change.deltaPct) : "~";
}

function testCell(change: MetricChange): string {
  const n = `n=${change.test.nA}+${change.test.nB}`;
  if (change.test.p === null)
    return change.test.method === "n<2: no test"
      ? `n<2: no test (${n})`
      : `${change.test.method}: no test, ${change.test.reason} (${n})`;
  return `${pValue(change.test.p)} ${change.test.method} (${n})`;
}

function table(rows: string[][]): string[] {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length)));
  return rows.map(
    (row) =>
      `  ${row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd()}`,
  );
}

/** The method statement every output starts with. */
export function methodLine(alpha: number): string {
  return (
    `samples are per-repeat values (never requests); test: exact two-sided Mann-Whitney U ("U") with ≥ ${MIN_REPEATS_FOR_U} repeats a side, ` +
    `Welch's t ("welch") with 2–3 (3 vs 3 cannot reach p < 0.05 by U), none with 1 ("n<2: no test"); ` +
    `"~" = not significant at α = ${alpha}; delta = median B ÷ median A − 1`
  );
}

export function comparisonText(comparison: Comparison): string {
  const { a, b } = comparison;
  const lines: string[] = [];
  for (const s of [a, b]) {
    lines.push(
      `${s.label}: run ${s.runIds.join(", ")} · ${s.valid} valid rows, ${s.invalid.length} invalid left out`,
    );
    for (const row of s.invalid)
      lines.push(
        `  invalid: ${row.experiment} · ${row.attack} · ${row.tool} · ${row.strategy} r${row.repeat ?? "?"}: ${row.reason}`,
      );
  }
  lines.push(`method: ${methodLine(comparison.alpha)}`, "", "machines, versions and settings:");
  for (const d of comparison.differences)
    lines.push(`  ${d.column}: ${d.a.join(" | ")} → ${d.b.join(" | ")}`);
  for (const line of comparison.consequences) lines.push(`  → ${line}`);
  if (comparison.cells.length === 0)
    lines.push("", "no (experiment, attack, tool, strategy) has valid rows on both sides");
  const groups = new Map<string, typeof comparison.cells>();
  for (const cell of comparison.cells) {
    const key = `${cell.experiment} · ${cell.attack} · ${cell.tool}`;
    groups.set(key, [...(groups.get(key) ?? []), cell]);
  }
  for (const [key, cells] of groups) {
    lines.push("", key);
    const rows = [["strategy", "metric", "A median", "B median", "delta", "test"]];
    for (const cell of cells)
      for (const change of cell.metrics)
        rows.push([
          cell.strategy,
          change.label,
          figure(change.a?.median, change.metric),
          figure(change.b?.median, change.metric),
          deltaCell(change),
          testCell(change),
        ]);
    lines.push(...table(rows));
    const ratios = comparison.ratios.filter((r) => `${r.experiment} · ${r.attack} · ${r.tool}` === key);
    if (ratios.length > 0) {
      lines.push(`  ratio to ${comparison.baseline} (median ÷ median on each side; no test):`);
      const ratioRows = [["strategy", "metric", "A ratio", "B ratio", "change"]];
      for (const r of ratios)
        ratioRows.push([r.strategy, r.label, figure(r.a), figure(r.b), signedPct(r.changePct)]);
      lines.push(...table(ratioRows).map((line) => `  ${line}`));
    }
  }
  for (const [label, cells] of [
    [a.label, comparison.onlyA],
    [b.label, comparison.onlyB],
  ] as const)
    if (cells.length > 0) lines.push("", `only in ${label} (not compared): ${cells.join("; ")}`);
  const disagreeing = disagreeingLines(comparison);
  if (disagreeing.length > 0) {
    lines.push(
      "",
      `repeats that disagree (p50s more than ${REPEAT_AGREEMENT}× apart): their cell's test has little power, and a change within that spread cannot be told from noise:`,
      ...disagreeing.map((line) => `  ${line}`),
    );
  }
  return lines.join("\n");
}

/** A line per compared cell and side whose valid repeats' p50s differ more than REPEAT_AGREEMENT×. */
function disagreeingLines(comparison: Comparison): string[] {
  return comparison.cells.flatMap((cell) => {
    const p50 = cell.metrics.find((change) => change.metric === "latency_p50_ms");
    const key = [cell.experiment, cell.attack, cell.tool, cell.strategy].join(" · ");
    return (
      [
        [comparison.a.label, p50?.a ?? null],
        [comparison.b.label, p50?.b ?? null],
      ] as const
    ).flatMap(([label, repeats]) =>
      !disagree(repeats)
        ? []
        : [
            `${label}: ${key}: p50 repeats ${repeats.min.toFixed(2)}–${repeats.max.toFixed(2)} ms (${(repeats.max / repeats.min).toPrecision(3)}×)`,
          ],
    );
  });
}

export function regressionText(found: Regression[], thresholdPct: number): string {
  if (found.length === 0) return `no significant regression beyond ${thresholdPct}%`;
  return [
    `${found.length} significant regression${found.length === 1 ? "" : "s"} beyond ${thresholdPct}%:`,
    ...found.map((r) => `  ${r.cell}: ${r.label} ${signedPct(r.deltaPct)} (${pValue(r.p)})`),
  ].join("\n");
}
