/**
 * The measured run is a fresh draw, checked from three sides: the tool's own account of what it sent (no
 * position re-sent), the server's own view (the distinct keys it saw), and a simulation of the caches on the
 * same key stream (the hit ratio). Every tool is run for real, and each check has a run in which it fires.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { staleReadChecker } from "../../experiments/write_mix.ts";
import { sampledHitRatioTolerance } from "../cell/judge.ts";
import { findTool } from "../load/run_attack.ts";
import type { Tool } from "../load/tool.ts";
import type { AttackPlan, LoadModel, Target, ToolName } from "../plan/attack_plan.ts";
import { type Experiment, type ExperimentAttack, serverSettings } from "../plan/experiment_plan.ts";
import { distinctKeysTolerance, expectedDistinctKeys } from "../plan/segments.ts";
import { TargetStream } from "../plan/targets.ts";
import type { Services } from "../services/lifecycle.ts";
import { freePort } from "../shared/ports.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { testDatabaseUrl, testServices } from "../shared/testing.ts";
import { runExperiment } from "./run_experiment.ts";

const SEED = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let services: Services;

beforeAll(async () => {
  const found = await testServices();
  services = { ...found, databaseUrl: await testDatabaseUrl(SEED) };
});

const OPEN: LoadModel = { kind: "open", rateRps: 300 };
const CLOSED: LoadModel = { kind: "closed", connections: 4 };

function attack(model: LoadModel, overrides: Partial<ExperimentAttack> = {}): ExperimentAttack {
  return {
    name: "reads",
    model,
    durationS: 2,
    warmupS: 1,
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 11, keyspace: 2_000 },
    ...overrides,
  };
}

function experiment(overrides: Partial<Experiment> = {}): Experiment {
  return {
    question: "test",
    expect: "test",
    strategies: ["local"],
    repeats: 1,
    seed: SEED,
    attacks: [attack(OPEN)],
    ...overrides,
  };
}

type Row = Record<string, string>;

async function run(
  exp: Experiment,
  options: { toolModule?: Tool; serverEntry?: string } = {},
): Promise<{ rows: Row[]; rawPath: string }> {
  const out = join(mkdtempSync(join(testTmpdir(), "cachelab-stream-")), "x.csv");
  const summary = await runExperiment(exp, {
    name: "stream",
    out,
    services,
    log: () => {},
    status: () => {},
    ...options,
  });
  if (typeof summary === "string") throw new Error(summary);
  const rows = parse(readFileSync(out, "utf8"), { columns: true }) as Row[];
  return { rows, rawPath: rows[0]?.raw_path ?? "" };
}

const num = (row: Row | undefined, column: string) => Number(row?.[column]);

/** The plan `attack(OPEN)` becomes, for recomputing its stream and its expectations. */
function readsPlan(baseUrl = "http://127.0.0.1:1"): AttackPlan {
  return {
    name: "reads",
    baseUrl,
    model: OPEN,
    durationS: 2,
    warmupS: 1,
    timeoutS: 5,
    headers: {},
    requests: attack(OPEN).requests,
    keys: { ...attack(OPEN).keys, keyspace: 2_000 },
    targetCount: 1,
    maxConnections: 256,
  };
}

describe("every tool sends a fresh stream", () => {
  const cases: [ToolName, LoadModel][] = [
    ["vegeta", OPEN],
    ["k6", OPEN],
    ["oha", OPEN],
    ["wrk", CLOSED],
    ["autocannon", CLOSED],
  ];
  for (const [tool, model] of cases) {
    test(`${tool}: no re-sent position, the server's distinct keys and the hit ratio match a fresh draw`, async () => {
      const { rows } = await run(experiment({ tools: [tool], attacks: [attack(model)] }));
      const [row] = rows;
      expect(row?.invalid_reason).toBe("");
      expect(row?.valid).toBe("true");
      const sent = num(row, "targets_sent");
      expect(sent).toBeGreaterThan(model.kind === "open" ? 590 : 1_000);
      // oha draws with replacement: its re-sent share is an expectation, held under 1% by the list size.
      if (tool === "oha") expect(num(row, "target_reuse_ratio")).toBeLessThanOrEqual(0.01);
      else expect(num(row, "target_reuse_ratio")).toBe(0);
      // The other tools send one fixed, seeded list, so the server's count is close to its expectation. oha's
      // sample is a new random draw each run (σ ≈ 12 keys for these 594 positions), so it gets the judge's 4σ.
      const expected = num(row, "distinct_keys_expected");
      const fresh = Math.round(sent * (1 - num(row, "target_reuse_ratio")));
      const { sd } = expectedDistinctKeys(readsPlan(), fresh);
      expect(Math.abs(num(row, "distinct_keys") - expected)).toBeLessThanOrEqual(
        tool === "oha" ? distinctKeysTolerance({ mean: expected, sd }) : Math.max(0.03 * expected, 25),
      );
      expect(Math.abs(num(row, "hit_ratio") - num(row, "hit_ratio_expected"))).toBeLessThanOrEqual(
        tool === "oha" ? sampledHitRatioTolerance(sd, fresh) : 0.02,
      );
    });
  }

  test("the warm-up and the measured run take consecutive, disjoint segments of one stream", async () => {
    const { rows, rawPath } = await run(experiment({ tools: ["vegeta"] }));
    expect(rows[0]?.valid).toBe("true");
    const lines = (label: string) =>
      readFileSync(join(rawPath, label, "targets.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line).url);
    const warmup = lines("warmup");
    const measured = lines("measured");
    const port = new URL(warmup[0]).port;
    const stream = new TargetStream(readsPlan(`http://127.0.0.1:${port}`))
      .take(warmup.length + measured.length)
      .map((target) => target.url);
    expect(warmup).toEqual(stream.slice(0, warmup.length));
    expect(measured).toEqual(stream.slice(warmup.length));
    expect(readdirSync(rawPath).sort()).toEqual(["measured", "warmup"]);
  });
});

/** vegeta that hands its measured run the warm-up's list again, while its own counts look clean. */
async function replayingVegeta(): Promise<Tool> {
  const vegeta = await findTool("vegeta");
  let first: Target[] | null = null;
  return {
    ...vegeta,
    prepare: (targets, context) => {
      first ??= targets;
      return vegeta.prepare(first, context);
    },
  };
}

describe("the checks fire", () => {
  for (const tool of ["wrk", "autocannon"] as const) {
    test(`${tool}: a closed run faster than its list was sized for is caught by the tool's own count`, async () => {
      // Lists sized for 50 rps; 4 connections on a local cache run thousands a second, wrapping the list.
      const { rows } = await run(
        experiment({ tools: [tool], attacks: [attack(CLOSED, { warmupS: 0, maxRateRps: 50 })] }),
      );
      expect(rows[0]?.valid).toBe("false");
      expect(rows[0]?.invalid_reason).toContain("re-sent targets:");
      expect(num(rows[0], "target_reuse_ratio")).toBeGreaterThan(0.5);
    });
  }

  test("a tool that replays the warm-up's targets is caught by the server's distinct keys and the simulation", async () => {
    const { rows } = await run(experiment({ attacks: [attack(OPEN, { warmupS: 2 })] }), {
      toolModule: await replayingVegeta(),
    });
    const reason = rows[0]?.invalid_reason ?? "";
    expect(rows[0]?.valid).toBe("false");
    expect(reason).toContain("hit ratio");
    expect(reason).toContain("deviates from the simulation");
    expect(num(rows[0], "hit_ratio")).toBeGreaterThan(num(rows[0], "hit_ratio_expected") + 0.02);
  });

  test("a strategy that caches wrongly is caught by the simulation, though every answer is right", async () => {
    const { rows } = await run(experiment({ tools: ["vegeta"] }), {
      serverEntry: join(import.meta.dir, "testdata", "forgetful_server.ts"),
    });
    expect(rows[0]?.valid).toBe("false");
    expect(rows[0]?.invalid_reason).toContain("deviates from the simulation of the same key stream");
    expect(num(rows[0], "hit_ratio")).toBeLessThan(num(rows[0], "hit_ratio_expected") - 0.02);
  });
});

describe("stale reads", () => {
  const writes = (): Experiment =>
    experiment({
      tools: ["vegeta"],
      attacks: [
        attack(OPEN, {
          requests: [
            { name: "detail", weight: 9, method: "GET", path: "/products/{id}" },
            {
              name: "update",
              weight: 1,
              method: "PUT",
              path: "/products/{id}",
              body: '{"stock":{s}}',
              vars: { s: { min: 0, max: 9 } },
            },
          ],
          keys: { distribution: { kind: "uniform" }, seed: 3, keyspace: 200 },
        }),
      ],
      during: staleReadChecker,
    });

  test("a strategy that keeps its delete serves no stale read, and its row checks out", async () => {
    const { rows } = await run(writes());
    expect(rows[0]?.invalid_reason).toBe("");
    expect(num(rows[0], "stale_checks")).toBeGreaterThan(10);
    expect(num(rows[0], "stale_reads")).toBe(0);
    expect(num(rows[0], "stale_checks_failed")).toBe(0);
  });

  test("a strategy that skips its delete is caught serving stale reads", async () => {
    const { rows } = await run(writes(), {
      serverEntry: join(import.meta.dir, "testdata", "no_delete_server.ts"),
    });
    expect(num(rows[0], "stale_reads")).toBeGreaterThan(0);
  });

  test("the checker counts a check it could not complete as failed, never as clean", async () => {
    const port = await freePort(); // nothing listens here
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 300);
    const result = await staleReadChecker({
      serverUrl: `http://127.0.0.1:${port}`,
      serverUrls: [`http://127.0.0.1:${port}`],
      strategy: "local",
      settings: serverSettings(experiment()),
      signal: abort.signal,
      keyspace: 100,
      nowMs: () => performance.now(),
    });
    expect(result.checks).toBe(0);
    expect(result.staleReads).toBe(0);
    expect(result.failed).toBeGreaterThan(0);
  });
});
