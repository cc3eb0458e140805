/**
 * The deployment flags in a real run: `--miss-cost-ms` is the miss cost asked, absolute; the run measures the
 * lab's own before the first cell and puts only the difference on the wire (none's loads cost what was asked),
 * records all three, refuses a figure below its own before any row; its base twin runs first through the same
 * proxy with nothing added; and the server settings and the payload size the flags give are the ones the
 * server ran with.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import type { SeedPlan } from "../../seed/seed.ts";
import type { Services } from "../services/lifecycle.ts";
import { testDatabaseUrl, testServices } from "../shared/testing.ts";
import { runExperiment } from "./run_experiment.ts";
import { detailReads, num, runRows, tempCsv, testExperiment } from "./run_testing.ts";

const SEED: SeedPlan = { rows: 2_000, seed: 7, descriptionBytes: 64 };
const BODY_BYTES = 300;
let services: Services;

beforeAll(async () => {
  const found = await testServices();
  // A missing Toxiproxy fails these tests: it is part of the lab, like Postgres and Redis.
  if (found.toxiproxy === null) throw new Error("Toxiproxy is not running: bash scripts/install-deps.sh");
  // The database already as --payload-bytes asks, in one of its own: the run finds it seeded, no reseed.
  const sized: SeedPlan = { ...SEED, payloadBytes: { kind: "fixed", bytes: BODY_BYTES } };
  services = { ...found, databaseUrl: await testDatabaseUrl(sized, "deployment_test") };
});

describe("deployment flags in a real run", () => {
  test("--miss-cost-ms 5: the loads cost about 5 ms, the rows say 5 asked, the base and the rest added; the twin first, nothing added", async () => {
    const rows = await runRows(
      testExperiment(
        // Redis through the proxy with a distance of the file's own: none never uses it, but the row says it.
        [
          detailReads({
            model: { kind: "open", rateRps: 100 },
            durationS: 2,
            warmupS: 3,
            network: { redis: { latencyMs: 0.25 } },
          }),
        ],
        { strategies: ["none"], seed: SEED, server: { pgPoolMax: 10 } },
      ),
      {
        name: "deployment",
        services,
        missCostMs: 5,
        warmupS: 1,
        payloadBytes: BODY_BYTES,
        settings: { pgPoolMax: 3 },
      },
    );
    if (typeof rows === "string") throw new Error(rows);
    expect(rows.map((row) => [row.attack, row.strategy])).toEqual([
      ["reads_base", "none"],
      ["reads", "none"],
    ]);
    const [base, target] = rows;
    const ownMs = num(target, "miss_cost_base_ms");
    expect(ownMs).toBeGreaterThan(0);
    expect(ownMs).toBeLessThan(5);
    for (const row of rows) {
      expect({ attack: row.attack, reason: row.invalid_reason }).toEqual({ attack: row.attack, reason: "" });
      expect(row.warmup_s).toBe("1");
      expect(row.pg_pool_max).toBe("3");
      expect(row.payload_bytes).toBe(`fixed ${BODY_BYTES}`);
      // Every body exactly the size asked for: the tool's bytes in are requests × size.
      expect(num(row, "bytes_in")).toBe(num(row, "ok") * BODY_BYTES);
      // One probe per run: the same base in every row, and Redis's too though no flag asked for it.
      expect(num(row, "miss_cost_base_ms")).toBe(ownMs);
      expect(row.redis_path).toBe("toxiproxy +0.25 ms each way");
      expect(row.redis_rtt_ms).toBe("");
      expect(num(row, "redis_rtt_base_ms")).toBeGreaterThan(0);
      expect(num(row, "redis_rtt_added_ms")).toBe(0.5);
    }
    // The target: 5 asked, and what Toxiproxy added is 5 less the lab's own (half each way, to the µs).
    expect(num(target, "miss_cost_ms")).toBe(5);
    const addedMs = num(target, "miss_cost_added_ms");
    // An odd µs halves to half a µs each way, which the toxic rounds: within 1 µs in all.
    expect(Math.abs(Math.round(addedMs * 1_000) - Math.round((5 - ownMs) * 1_000))).toBeLessThanOrEqual(1);
    expect(target?.postgres_path).toBe(`toxiproxy +${addedMs / 2} ms each way`);
    // The twin went through the same proxy with nothing added, and nothing was asked of it.
    expect(base?.postgres_path).toBe("toxiproxy");
    expect(base?.miss_cost_ms).toBe("");
    expect(num(base, "miss_cost_added_ms")).toBe(0);
    // The server's own timing of its loads carries the miss cost asked; Postgres's execution time does not.
    expect(num(target, "db_load_ms_p50")).toBeGreaterThan(4.5);
    expect(num(target, "db_load_ms_p50") - num(base, "db_load_ms_p50")).toBeGreaterThan(addedMs - 1);
    expect(num(target, "latency_p50_ms") - num(base, "latency_p50_ms")).toBeGreaterThan(addedMs - 1);
    expect(num(target, "pg_exec_ms_mean")).toBeLessThan(1);
    // Each row carries its misses' histogram; the target's p99 is predicted from its twin's, the twin's is not.
    for (const row of rows) expect(row.srv_miss_hist).toMatch(/^\d+:\d+/);
    expect(base?.predicted_p99_ms).toBe("");
    expect(num(target, "predicted_p99_ms")).toBeGreaterThan(num(target, "predicted_mean_ms"));
  }, 60_000);

  test("a miss cost below the lab's own is refused in one line naming it, before any cell or row", async () => {
    const out = tempCsv();
    const lines: string[] = [];
    const refusal = await runExperiment(
      testExperiment([detailReads({ durationS: 1, warmupS: 0 })], { strategies: ["none"], seed: SEED }),
      {
        name: "deployment",
        services,
        missCostMs: 0.001,
        out,
        log: (line) => lines.push(line),
        status: () => {},
      },
    );
    expect(refusal).toMatch(
      /^Cannot use --miss-cost-ms 0\.001: below this machine's own miss cost, (\d+\.\d+) ms \(measured just now through the lab's path to Postgres\): give at least \1$/,
    );
    expect(existsSync(out)).toBe(false);
    expect(lines.some((line) => line.startsWith("cell "))).toBe(false);
  }, 60_000);
});
