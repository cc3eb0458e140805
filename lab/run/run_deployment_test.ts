/**
 * The deployment flags in a real run: `--miss-cost-ms` is on the wire (none's p50 moves past it) and in the
 * rows, its base twin runs first through the same proxy with nothing added, and the server settings and the
 * payload size the flags give are the ones the server ran with.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import type { SeedPlan } from "../../seed/seed.ts";
import type { Services } from "../services/lifecycle.ts";
import { testDatabaseUrl, testServices } from "../shared/testing.ts";
import { detailReads, num, runRows, testExperiment } from "./run_testing.ts";

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
  test("--miss-cost-ms 5: none's p50 past 5 ms and rows saying 5; its base twin first, at 0 and well below", async () => {
    const rows = await runRows(
      testExperiment([detailReads({ model: { kind: "open", rateRps: 100 }, durationS: 2, warmupS: 3 })], {
        strategies: ["none"],
        seed: SEED,
        server: { pgPoolMax: 10 },
      }),
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
    for (const row of rows) {
      expect({ attack: row.attack, reason: row.invalid_reason }).toEqual({ attack: row.attack, reason: "" });
      expect(row.warmup_s).toBe("1");
      expect(row.pg_pool_max).toBe("3");
      expect(row.payload_bytes).toBe(`fixed ${BODY_BYTES}`);
      // Every body exactly the size asked for: the tool's bytes in are requests × size.
      expect(num(row, "bytes_in")).toBe(num(row, "ok") * BODY_BYTES);
      expect(row.redis_path).toBe("direct");
      expect(num(row, "redis_rtt_ms")).toBe(0);
    }
    expect(target?.postgres_path).toBe("toxiproxy +2.5 ms each way");
    expect(num(target, "miss_cost_ms")).toBe(5);
    expect(num(target, "latency_p50_ms")).toBeGreaterThan(5);
    // The twin went through the same proxy with nothing added.
    expect(base?.postgres_path).toBe("toxiproxy");
    expect(num(base, "miss_cost_ms")).toBe(0);
    // Its p50 is the target's without the 5 ms (a fixed bound on the twin's own p50 read a slow machine's
    // 2.8 ms as a failure); the difference, not the level, is what the flag must add.
    expect(num(target, "latency_p50_ms") - num(base, "latency_p50_ms")).toBeGreaterThan(4);
    // The server's own timing of its loads carries the miss cost; Postgres's execution time does not.
    expect(num(target, "db_load_ms_p50") - num(base, "db_load_ms_p50")).toBeGreaterThan(4);
    expect(num(target, "pg_exec_ms_mean")).toBeLessThan(1);
  }, 60_000);
});
