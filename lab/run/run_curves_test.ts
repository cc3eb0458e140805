/**
 * A trace run writes the curves of the segment its cells replayed beside its CSV: at the configured capacity
 * the local curve is what the local cell's own simulation of the same stream says (hit_ratio_expected), and
 * the two_tier cell's L1 sees the same stream. The cells' caches are small (l1MaxEntries 150 of ~800 keys), so
 * the capacity matters: a curve of the whole trace, or counting the warm-up's reads, would differ.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { AttackPlan } from "../plan/attack_plan.ts";
import type { ExperimentAttack } from "../plan/experiment_plan.ts";
import type { SettledCell } from "../plan/settled_cells.ts";
import { curvesPath, readCurves } from "../results/curves_csv.ts";
import type { Services } from "../services/lifecycle.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import type { ReplayedSegment } from "../trace/replayed_curves.ts";
import { SAMPLE_TRACE_DEFAULTS, sampleTrace } from "../trace/sample_trace.ts";
import { ReplayedSegments, writeReplayedCurves } from "./run_curves.ts";
import { runExperiment } from "./run_experiment.ts";
import { num, readRows, seededServices, tempCsv, testExperiment } from "./run_testing.ts";

const SEED = { rows: 3_000, seed: 9, descriptionBytes: 64 };
let services: Services;
beforeAll(async () => {
  services = await seededServices(SEED);
});

const file = join(mkdtempSync(join(testTmpdir(), "cachelab-run-curves-")), "t.csv.gz");
writeFileSync(file, gzipSync(sampleTrace({ ...SAMPLE_TRACE_DEFAULTS, requests: 2_400, catalogKeys: 800 })));

describe("a trace run's replayed curves", () => {
  test("the local curve at the configured capacity equals the local cell's simulated hit ratio", async () => {
    const csv = tempCsv();
    const experiment = testExperiment(
      [
        {
          name: "replay",
          model: { kind: "open", rateRps: 500 },
          durationS: 2.5,
          warmupS: 1.5,
          requests: [
            { name: "read", weight: 1, method: "GET", path: "/products/{id}" },
            { name: "write", weight: 1, method: "PUT", path: "/products/{id}", body: '{"stock":3}' },
          ],
          keys: { distribution: { kind: "trace", file }, seed: 3 },
        },
      ],
      { seed: SEED, strategies: ["local", "two_tier"], server: { l1MaxEntries: 150, l1TtlMs: 60_000 } },
    );
    const summary = await runExperiment(experiment, {
      name: "trace-curves",
      services,
      out: csv,
      log: () => {},
      status: () => {},
    });
    if (typeof summary === "string") throw new Error(summary);
    const rows = readRows(csv);
    expect(rows.map((row) => [row.strategy, row.valid, row.invalid_reason])).toEqual([
      ["local", "true", ""],
      ["two_tier", "true", ""],
    ]);
    const curves = readCurves(curvesPath(csv));
    const runId = rows[0]?.run_id;
    expect(
      curves.every((c) => c.run_id === runId && c.experiment === "trace-curves" && c.attack === "replay"),
    ).toBe(true);
    const methods = ["lru", "local", "belady", "sieve", "s3fifo", "wtinylfu", "arc"] as const;
    expect(new Set(curves.map((c) => c.method))).toEqual(new Set(methods));
    const configured = curves.filter((c) => c.configured);
    expect(configured.map((c) => [c.method, c.capacity_entries])).toEqual(methods.map((m) => [m, 150]));
    const local = rows.find((row) => row.strategy === "local");
    const localCurve = configured.find((c) => c.method === "local")?.hit_ratio as number;
    expect(Math.abs(localCurve - num(local, "hit_ratio_expected"))).toBeLessThanOrEqual(0.02);
    expect(Math.abs(localCurve - num(local, "hit_ratio"))).toBeLessThanOrEqual(0.02);
    // two_tier's L1 is the same quick-lru at the same maxSize, over the same stream (its TTL outlasts the run).
    const twoTier = rows.find((row) => row.strategy === "two_tier");
    expect(Math.abs(localCurve - num(twoTier, "l1_hit_ratio"))).toBeLessThanOrEqual(0.02);
    // The measured run's reads only: about 2.5 s × 500 rps, of which the trace's reads (~96%).
    const first = curves[0];
    expect(first?.reads).toBeGreaterThan(1_100);
    expect(first?.reads).toBeLessThan(1_260);
    // The warm-up sent 750 of its list of 750 + 1% + 16 (segments.ts replayListSize); the measured run started there.
    expect(first?.warmup_requests).toBe(750);
    expect(first?.from_position).toBe(774);
    expect((first?.to_position as number) - (first?.from_position as number)).toBe(
      num(local, "targets_sent"),
    );
    // The cache is small enough to matter: the curve climbs from the configured capacity to the working set.
    const full = curves.filter((c) => c.method === "local" && c.capacity_label === "100%")[0];
    expect((full?.hit_ratio as number) - localCurve).toBeGreaterThan(0.05);
  }, 90_000);
});

describe("which segment a trace attack's curves are drawn from", () => {
  // Only the fields ReplayedSegments reads: the plan's key distribution and the cell's l1MaxEntries.
  const attack = (name: string) => ({ name }) as ExperimentAttack;
  const plan = (kind: "trace" | "zipf") =>
    ({
      keys: { distribution: kind === "trace" ? { kind, file } : { kind, exponent: 1.1 }, seed: 1 },
    }) as unknown as AttackPlan;
  const cell = (l1MaxEntries: number) => ({ settings: { l1MaxEntries } }) as unknown as SettledCell;
  const sent = (measured: number): ReplayedSegment => ({
    warmList: 10,
    warmSent: { kind: "prefix", count: 10 },
    measuredFrom: 10,
    measuredList: 50,
    measuredSent: { kind: "prefix", count: measured },
    seed: 1,
  });

  test("the segment most cells sent (the first on a tie); other attacks and unknown segments are left out", () => {
    const segments = new ReplayedSegments();
    segments.note(attack("replay"), plan("trace"), cell(100), sent(40));
    segments.note(attack("replay"), plan("trace"), cell(200), sent(41));
    segments.note(attack("replay"), plan("trace"), cell(300), sent(41));
    segments.note(attack("replay"), plan("trace"), cell(400), null);
    segments.note(attack("zipf"), plan("zipf"), cell(100), sent(40));
    segments.note(attack("tie"), plan("trace"), cell(7), sent(30));
    segments.note(attack("tie"), plan("trace"), cell(8), sent(31));
    expect(
      segments
        .chosen()
        .map(({ attack: name, noted }) => [name, noted.segment.measuredSent, noted.l1MaxEntries]),
    ).toEqual([
      ["replay", { kind: "prefix", count: 41 }, 200],
      ["tie", { kind: "prefix", count: 30 }, 7],
    ]);
  });

  test("a run without trace attacks writes no curves file", () => {
    const segments = new ReplayedSegments();
    segments.note(attack("zipf"), plan("zipf"), cell(100), sent(40));
    const csv = tempCsv();
    expect(
      writeReplayedCurves(segments, { csvPath: csv, runId: "r", experiment: "x", log: () => {} }),
    ).toEqual([]);
    expect(existsSync(curvesPath(csv))).toBe(false);
  });
});
