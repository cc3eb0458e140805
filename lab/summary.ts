/**
 * Turns CSV rows into the comparison a person reads: per attack, per strategy, the median and range across
 * repeats, and ratios against a baseline strategy. Invalid rows are excluded and counted, never averaged.
 */

export type SummaryRow = Record<string, string | number | boolean | null>;

export interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function spread(values: (number | null | undefined)[]): Spread | null {
  const numbers = values.filter(
    (value): value is number => typeof value === "number" && Number.isFinite(value),
  );
  if (numbers.length === 0) return null;
  const sorted = [...numbers].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1
      ? (sorted[mid] as number)
      : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return { median, min: sorted[0] as number, max: sorted[sorted.length - 1] as number, n: sorted.length };
}

function num(value: unknown): number | null {
  if (typeof value === "number") return value;
  if (typeof value === "string" && value !== "" && Number.isFinite(Number(value))) return Number(value);
  return null;
}

function isValid(row: SummaryRow): boolean {
  return row.valid === true || row.valid === "true";
}

export interface StrategySummary {
  strategy: string;
  valid: number;
  invalid: number;
  achievedRps: Spread | null;
  p50Ms: Spread | null;
  p99Ms: Spread | null;
  p99_9Ms: Spread | null;
  hitRatio: Spread | null;
  dbQueries: Spread | null;
  errorRatio: Spread | null;
}

export interface AttackSummary {
  attack: string;
  tool: string;
  strategies: StrategySummary[];
  invalidReasons: string[];
}

/** Groups rows by attack and tool (never mixing unlike attacks), then by strategy in first-seen order. */
export function summarize(rows: SummaryRow[]): AttackSummary[] {
  const groups = new Map<string, SummaryRow[]>();
  for (const row of rows) {
    const key = `${row.experiment}\u0000${row.attack}\u0000${row.tool}`;
    groups.set(key, [...(groups.get(key) ?? []), row]);
  }
  return [...groups.values()].map((group) => {
    const first = group[0] as SummaryRow;
    const strategies = [...new Set(group.map((row) => String(row.strategy)))];
    return {
      attack: String(first.attack),
      tool: String(first.tool),
      strategies: strategies.map((strategy) => {
        const mine = group.filter((row) => row.strategy === strategy);
        const valid = mine.filter(isValid);
        return {
          strategy,
          valid: valid.length,
          invalid: mine.length - valid.length,
          achievedRps: spread(valid.map((row) => num(row.achieved_rps))),
          p50Ms: spread(valid.map((row) => num(row.latency_p50_ms))),
          p99Ms: spread(valid.map((row) => num(row.latency_p99_ms))),
          p99_9Ms: spread(valid.map((row) => num(row.latency_p99_9_ms))),
          hitRatio: spread(valid.map((row) => num(row.hit_ratio))),
          dbQueries: spread(valid.map((row) => num(row.db_queries))),
          errorRatio: spread(
            valid.map((row) => {
              const errors = num(row.errors);
              const completed = num(row.completed);
              return errors !== null && completed !== null && completed + errors > 0
                ? errors / Math.max(completed, 1)
                : null;
            }),
          ),
        };
      }),
      invalidReasons: group
        .filter((row) => !isValid(row))
        .map((row) => `${row.strategy} r${row.repeat}: ${row.invalid_reason}`),
    };
  });
}

function fmtSpread(value: Spread | null, digits: number): string {
  if (value === null) return "n/a";
  const median = value.median.toFixed(digits);
  return value.n > 1 ? `${median} (${value.min.toFixed(digits)}–${value.max.toFixed(digits)})` : median;
}

function ratio(a: Spread | null, b: Spread | null): string {
  if (a === null || b === null || b.median === 0) return "n/a";
  return `${(a.median / b.median).toFixed(2)}×`;
}

/** A Markdown table per attack, with ratios against `baseline` when it is in the rows. */
export function summaryMarkdown(rows: SummaryRow[], baseline = "none"): string {
  const out: string[] = [];
  for (const attack of summarize(rows)) {
    const base = attack.strategies.find((s) => s.strategy === baseline) ?? null;
    out.push(`### ${attack.attack} (${attack.tool}) — median (min–max) across repeats`, "");
    out.push(
      `| strategy | valid | achieved rps | p50 ms | p99 ms | p99.9 ms | hit ratio | db queries | rps ÷ ${baseline} | p99 ÷ ${baseline} | db ÷ ${baseline} |`,
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    );
    for (const s of attack.strategies) {
      out.push(
        `| ${s.strategy} | ${s.valid}/${s.valid + s.invalid} | ${fmtSpread(s.achievedRps, 0)} | ${fmtSpread(s.p50Ms, 2)} | ${fmtSpread(s.p99Ms, 2)} | ${fmtSpread(s.p99_9Ms, 2)} | ${fmtSpread(s.hitRatio, 3)} | ${fmtSpread(s.dbQueries, 0)} | ${base ? ratio(s.achievedRps, base.achievedRps) : "n/a"} | ${base ? ratio(s.p99Ms, base.p99Ms) : "n/a"} | ${base ? ratio(s.dbQueries, base.dbQueries) : "n/a"} |`,
      );
    }
    if (attack.invalidReasons.length > 0) {
      out.push("", `Invalid rows (excluded): ${attack.invalidReasons.length}`);
      for (const reason of attack.invalidReasons) out.push(`- ${reason}`);
    }
    out.push("");
  }
  return out.join("\n");
}
