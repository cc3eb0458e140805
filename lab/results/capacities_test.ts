import { describe, expect, test } from "bun:test";
import { appendFileSync, mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { baseRows, withHists } from "../model/model_testing.ts";
import type { Row } from "../model/tier_costs.ts";
import type { ExperimentAttack } from "../plan/experiment_plan.ts";
import type { SearchRow } from "../plan/search.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { type CapacitySpec, capacitySearch, predictedCapacity, stepHeld } from "./capacities.ts";
import {
  CAPACITIES_COLUMNS,
  capacitiesMarkdown,
  capacitiesPath,
  isCapacitiesPath,
  readCapacities,
} from "./capacities_csv.ts";

function attack(name: string, rateRps: number, latencyMs = 0): ExperimentAttack {
  return {
    name,
    model: { kind: "open", rateRps },
    durationS: 4,
    warmupS: 2,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 42 },
    ...(latencyMs > 0 ? { network: { postgres: { latencyMs } } } : {}),
  };
}

const SPEC: CapacitySpec = {
  regimes: [
    { name: "cpu", base: attack("cpu_base", 1_000), step: (rps) => attack(`cpu_r${rps}`, rps) },
    { name: "pool", base: attack("pool_base", 1_000), step: (rps) => attack(`pool_r${rps}`, rps, 4.65) },
  ],
  p99TargetMs: 100,
  bisect: { tolerance: 0.05, widen: 1.25, maxSteps: 9, minRps: 10, maxRps: 50_000 },
};

// CPU seconds over the 10 000 requests of each base row (constructed): server, Postgres, Redis.
const CPU: Record<string, [number, number, number]> = {
  none: [1.5, 1.0, 0],
  local: [0.5, 0.2, 0],
  redis: [0.9, 0.2, 0.14],
  two_tier: [0.6, 0.2, 0.06],
};

/** The four strategies' base cells of both regimes: pool 10 and 2 cores for cpu, pool 4 for pool. */
function bases(): Row[] {
  return ["cpu", "pool"].flatMap((regime) =>
    baseRows().map((row) =>
      withHists(
        {
          ...row,
          run_id: "r1",
          experiment: "capacity_check",
          attack: `${regime}_base`,
          pg_pool_max: regime === "pool" ? 4 : 10,
          cpu_count: 2,
          loadgen_cpu_s: 1,
        },
        CPU[String(row.strategy)],
      ),
    ),
  );
}

describe("a step's verdict", () => {
  test("held: valid and the load tool's p99 within the target; anything else broke", () => {
    expect(stepHeld({ valid: true, latency_p99_ms: 99.5 }, 100)).toEqual({
      held: true,
      why: "p99 99.50 ms ≤ 100 ms",
    });
    expect(stepHeld({ valid: true, latency_p99_ms: 100.5 }, 100).held).toBe(false);
    // Dropped load or errors past the limit make the row invalid (lab/cell/judge.ts): broken, whatever its p99.
    const dropped = { valid: false, invalid_reason: "dropped load: achieved 900 rps", latency_p99_ms: 3 };
    expect(stepHeld(dropped, 100)).toEqual({ held: false, why: "invalid: dropped load: achieved 900 rps" });
    expect(stepHeld({ valid: true, latency_p99_ms: null }, 100).held).toBe(false);
  });
});

describe("the capacity search", () => {
  test("each regime starts at the model's capacity: the pool one pool-bound under 4 ÷ 10 ms for none", () => {
    const none = predictedCapacity(bases(), SPEC.regimes[1] as never, "none", 100);
    if (typeof none === "string") throw new Error(none);
    // 0.7 ms loads + 9.3 ms added = 10 ms held, 4 connections: under 400 rps.
    expect(none.bound).toBe("pool");
    expect(none.rps as number).toBeLessThan(400);
    expect(none.rps as number).toBeGreaterThan(300);
    const search = capacitySearch(SPEC);
    const [cpuStep, poolStep] = search.next("none", bases());
    expect(poolStep?.name).toBe(`pool_r${Math.round(none.rps as number)}`);
    expect(cpuStep?.name).toMatch(/^cpu_r\d+$/);
    expect(search.maxStepsPerStrategy).toBe(18);
    expect(search.stepS).toBe(6);
  });

  test("against a server holding 80% of each prediction, it ends within 5% and writes one row per search", () => {
    const search = capacitySearch(SPEC);
    const rows: SearchRow[] = [...bases()];
    const strategies = ["none", "local", "redis", "two_tier"] as const;
    const wall = new Map<string, number>();
    for (let round = 0; round < 20; round++) {
      const chosen = strategies.flatMap((strategy) =>
        search.next(strategy, rows).map((a) => ({ strategy, a })),
      );
      if (chosen.length === 0) break;
      for (const { strategy, a } of chosen) {
        const regime = a.name.split("_r")[0] as string;
        const rps = a.model.kind === "open" ? a.model.rateRps : 0;
        // The first step of each search is the prediction: the fake wall is 80% of it.
        if (!wall.has(`${regime}/${strategy}`)) wall.set(`${regime}/${strategy}`, 0.8 * rps);
        const held = rps <= (wall.get(`${regime}/${strategy}`) as number);
        const row: Record<string, string | number | boolean | null> = {
          run_id: "r1",
          experiment: "capacity_check",
          attack: a.name,
          strategy,
          offered_rps: rps,
          valid: true,
          latency_p99_ms: held ? 20 : 400,
          warnings: null,
        };
        row.warnings = search.verdict(row);
        rows.push(row);
      }
    }
    expect(search.verdict(rows.find((row) => row.attack === "cpu_base") as SearchRow)).toBeNull();
    expect(rows.some((row) => String(row.warnings).endsWith("held: p99 20.00 ms ≤ 100 ms"))).toBe(true);
    const csvPath = join(mkdtempSync(join(testTmpdir(), "cachelab-capacities-")), "capacity_check.csv");
    const logged: string[] = [];
    search.finish?.(rows, { csvPath, runId: "r1", log: (line) => logged.push(line) });
    const written = readCapacities(capacitiesPath(csvPath));
    expect(written).toHaveLength(8);
    for (const row of written) {
      const held = row.held_rps as number;
      expect({ row: `${row.regime}/${row.strategy}`, end: row.search_end }).toEqual({
        row: `${row.regime}/${row.strategy}`,
        end: "bracketed to 5%",
      });
      expect(held).toBeLessThanOrEqual(wall.get(`${row.regime}/${row.strategy}`) as number);
      expect((row.broken_rps as number) - held).toBeLessThanOrEqual(0.05 * held);
      expect(row.measured_over_predicted as number).toBeGreaterThan(0.76);
      expect(row.measured_over_predicted as number).toBeLessThanOrEqual(0.8);
      expect(row.held_p99_ms).toBe(20);
      expect(row.broken_p99_ms).toBe(400);
    }
    expect(written.find((row) => row.regime === "pool" && row.strategy === "none")).toMatchObject({
      predicted_bound: "pool",
      pg_pool_max: 4,
      miss_cost_added_ms: 9.3,
      cores: 2,
    });
    expect(logged.at(-1)).toBe(`capacities appended to ${capacitiesPath(csvPath)}`);
    expect(logged.join("\n")).toContain("| pool | none |");
  });
});

describe("the capacities file", () => {
  test("sits beside the results CSV; a cut line is skipped, naming it, and the rows around it kept", () => {
    expect(capacitiesPath("results/capacity_check.csv")).toBe("results/capacity_check.capacities.csv");
    expect(isCapacitiesPath("results/capacity_check.capacities.csv")).toBe(true);
    expect(() => capacitiesPath("results/x.timeline.csv")).toThrow("not a results CSV path");
    const csvPath = join(mkdtempSync(join(testTmpdir(), "cachelab-capacities-")), "c.csv");
    const search = capacitySearch({ ...SPEC, regimes: [SPEC.regimes[0] as never] });
    search.finish?.(bases(), { csvPath, runId: "r1", log: () => {} });
    const path = capacitiesPath(csvPath);
    appendFileSync(path, "r2,capacity_check,cpu,none,100,1");
    search.finish?.(bases(), { csvPath, runId: "r1", log: () => {} });
    const skipped: number[] = [];
    const rows = readCapacities(path, { onSkip: (s) => skipped.push(s.line) });
    expect(rows).toHaveLength(8);
    expect(skipped).toEqual([6]);
    // Not searched yet: no step, so neither rate, and the table says so with dashes.
    expect(rows[0]).toMatchObject({ steps: 0, held_rps: null, broken_rps: null, search_end: "not finished" });
    expect(capacitiesMarkdown(rows.slice(0, 1))[4]).toContain("| cpu | none | — | — |");
    expect(readFileSync(path, "utf8").split("\n")[0]).toStartWith("run_id,experiment,regime,strategy,");
  });

  test("docs/csv.md gives every column a meaning, once, in its order", () => {
    const docs = readFileSync(join(import.meta.dir, "..", "..", "docs", "csv.md"), "utf8");
    const section = docs.slice(docs.indexOf("## Beside the CSV: capacities"));
    const named = [...section.matchAll(/^\| (`.+?`(?:, `.+?`)*) +\|/gm)].flatMap((m) =>
      (m[1] as string).split(", ").map((name) => name.replaceAll("`", "")),
    );
    expect(named).toEqual([...CAPACITIES_COLUMNS]);
  });
});
