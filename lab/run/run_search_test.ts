import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import type { SearchedExperiment } from "../plan/search.ts";
import { type CapacityRegime, capacitySearch } from "../results/capacities.ts";
import { capacitiesPath, readCapacities } from "../results/capacities_csv.ts";
import type { Services } from "../services/lifecycle.ts";
import { runExperiment } from "./run_experiment.ts";
import { detailReads, readRows, seededServices, tempCsv, testExperiment } from "./run_testing.ts";

let services: Services;
beforeAll(async () => {
  services = await seededServices();
});

// Low rates, short steps; a p99 target no step can hold (the model holds no rate to it either: the search
// starts at twice the base's rate), so the search steps down from its highest rate.
const REGIME: CapacityRegime = {
  name: "low",
  base: detailReads({ name: "low_base", model: { kind: "open", rateRps: 200 } }),
  step: (rps) => detailReads({ name: `low_r${rps}`, model: { kind: "open", rateRps: rps } }),
};

function experiment(): SearchedExperiment {
  return {
    ...testExperiment([REGIME.base]),
    search: capacitySearch({
      regimes: [REGIME],
      p99TargetMs: 0.001,
      bisect: { tolerance: 0.05, widen: 1.25, maxSteps: 2, minRps: 50, maxRps: 400 },
    }),
  };
}

describe("a run whose steps are chosen as it goes", () => {
  test("the base cell, then two steps chosen from the rows, each a row saying its rate and verdict; the answer beside", async () => {
    const out = tempCsv();
    const lines: string[] = [];
    const summary = await runExperiment(experiment(), {
      name: "search",
      out,
      services,
      log: (line) => lines.push(line),
      status: () => {},
    });
    if (typeof summary === "string") throw new Error(summary);
    const rows = readRows(out);
    expect(rows.map((row) => `${row.attack} ${row.offered_rps} ${row.valid}`)).toEqual([
      "low_base 200 true",
      "low_r400 400 true",
      "low_r320 320 true",
    ]);
    expect(new Set(rows.map((row) => row.run_id)).size).toBe(1);
    expect(rows[0]?.warnings).toBe("");
    expect(rows[1]?.warnings).toMatch(/capacity step low at 400 rps broke: p99 [\d.]+ ms > 0\.001 ms$/);
    expect(lines.some((line) => line.startsWith("cell 3/≤ 3 local r1 low_r320: "))).toBe(true);
    const [answer, ...more] = readCapacities(capacitiesPath(out));
    expect(more).toEqual([]);
    expect(answer).toMatchObject({
      run_id: rows[0]?.run_id,
      regime: "low",
      strategy: "local",
      steps: 2,
      held_rps: null,
      broken_rps: 320,
      search_end: "step cap: 2 steps",
    });
    expect(answer?.broken_p99_ms).toBeCloseTo(Number(rows[2]?.latency_p99_ms), 2);
    expect(lines).toContain(`capacities appended to ${capacitiesPath(out)}`);
  }, 60_000);

  test("interrupted after a step: its row is whole, no further step runs, and no answer is written", async () => {
    const out = tempCsv();
    const abort = new AbortController();
    const summary = await runExperiment(experiment(), {
      name: "search",
      out,
      services,
      signal: abort.signal,
      // Ctrl-C as soon as the first step's row is in.
      log: (line) => (line.includes(" low_r400: ") ? abort.abort() : undefined),
      status: () => {},
    });
    if (typeof summary === "string") throw new Error(summary);
    expect(summary.interrupted).toBe(true);
    expect(readRows(out).map((row) => row.attack)).toEqual(["low_base", "low_r400"]);
    expect(existsSync(capacitiesPath(out))).toBe(false);
  }, 60_000);
});
