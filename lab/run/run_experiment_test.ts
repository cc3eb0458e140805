import { beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { judge } from "../cell/judge.ts";
import type { NormalizedResult } from "../plan/attack_plan.ts";
import { cells, type Experiment, type ExperimentAttack } from "../plan/experiment_plan.ts";
import { COLUMNS } from "../results/csv.ts";
import type { Services } from "../services/lifecycle.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { testDatabaseUrl, testRedis, testServices } from "../shared/testing.ts";
import { strategyOrder } from "./describe_run.ts";
import { runExperiment } from "./run_experiment.ts";
import { readRows, tempCsv } from "./run_testing.ts";

const SEED = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let services: Services;

beforeAll(async () => {
  const found = await testServices();
  services = { ...found, databaseUrl: await testDatabaseUrl(SEED) };
});

function tiny(overrides: Partial<Experiment> = {}): Experiment {
  return {
    question: "test",
    expect: "test",
    strategies: ["local"],
    repeats: 1,
    seed: SEED,
    tools: ["vegeta"],
    attacks: [
      {
        name: "reads",
        model: { kind: "open", rateRps: 100 },
        durationS: 1,
        warmupS: 1,
        requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
        keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 1, keyspace: 1_500 },
        targetCount: 1_000,
      },
    ],
    ...overrides,
  };
}

const quiet = { log: () => {}, status: () => {} };

describe("experiment planning", () => {
  test("cells interleave strategies inside each repeat and attack, their order turned by one each repeat", () => {
    const exp = tiny({ strategies: ["none", "local"], repeats: 2 });
    expect(cells(exp).map((cell) => `${cell.repeat}:${cell.strategy}`)).toEqual([
      "1:none",
      "1:local",
      "2:local",
      "2:none",
    ]);
    const four = tiny({ strategies: ["none", "local", "redis", "two_tier"], repeats: 5 });
    const byRepeat = (repeat: number) =>
      cells(four)
        .filter((cell) => cell.repeat === repeat)
        .map((cell) => cell.strategy)
        .join(" ");
    expect([1, 2, 3, 4, 5].map(byRepeat)).toEqual([
      "none local redis two_tier",
      "local redis two_tier none",
      "redis two_tier none local",
      "two_tier none local redis",
      "none local redis two_tier",
    ]);
    expect(cells(four).map((cell) => cell.index)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // What --dry-run prints of it; nothing to turn with one repeat or one strategy.
    expect(strategyOrder(cells({ ...four, repeats: 2 }))).toBe(
      "r1 none local redis two_tier · r2 local redis two_tier none",
    );
    expect(strategyOrder(cells({ ...four, repeats: 1 }))).toBeNull();
    expect(strategyOrder(cells(tiny({ repeats: 3 })))).toBeNull();
    const sequence = tiny({
      sequence: true,
      attacks: [...tiny().attacks, { ...(tiny().attacks[0] as ExperimentAttack), name: "again" }],
    });
    expect(cells(sequence).map((cell) => cell.attacks.map((a) => a.name))).toEqual([["reads", "again"]]);
  });

  test("judge marks errors, dropped load and uncounted requests invalid", () => {
    const base: NormalizedResult = {
      tool: "vegeta",
      toolVersion: "12.13.0",
      model: "open",
      offeredRps: 100,
      requests: 1_000,
      completed: 1_000,
      ok: 1_000,
      statusCounts: { "200": 1_000 },
      errorCounts: {},
      droppedOrAborted: null,
      achievedRps: 100,
      okRps: 100,
      latencyMs: { min: 1, mean: 1, p50: 1, p90: 1, p95: 1, p99: 1, p99_9: 1, max: 1 },
      timeline: null,
      bytesIn: 1,
      durationS: 10,
      drainS: 0,
      sent: { kind: "prefix", count: 1_000 },
    };
    const context = { maxErrorRatio: 0.01, serverRequests: 1_000, inFlightAllowance: 4 };
    expect(judge(base, context)).toBeNull();
    expect(judge({ ...base, ok: 980 }, context)).toContain("error ratio 0.0200 > 0.01");
    expect(judge({ ...base, errorCounts: { "connection refused": 20 } }, context)).toContain("error ratio");
    expect(judge({ ...base, achievedRps: 90 }, context)).toContain("dropped load");
    expect(judge(base, { ...context, serverRequests: 900 })).toContain("the server counted 900");
    expect(judge({ ...base, completed: null }, context)).toContain("no completed");
  });
});

describe("experiment runs on real services", () => {
  test("one real cell writes one complete row that parses back", async () => {
    const out = tempCsv();
    const summary = await runExperiment(tiny(), { name: "unit", out, services, ...quiet });
    if (typeof summary === "string") throw new Error(summary);
    const [row, ...rest] = readRows(out);
    expect(rest).toEqual([]);
    expect(Object.keys(row ?? {})).toEqual([...COLUMNS]);
    expect(row?.invalid_reason).toBe("");
    expect(row?.valid).toBe("true");
    expect(row?.tool).toBe("vegeta");
    expect(Number(row?.completed)).toBeGreaterThan(90);
    expect(Number(row?.hit_ratio)).toBeGreaterThan(0);
    expect(row?.db_queries_source).toBe("pg_stat_statements");
    // The miss cost, timed by the server and by Postgres: the server's mean holds the round trip as well.
    expect(Number(row?.db_load_ms_p50)).toBeGreaterThan(0);
    expect(Number(row?.db_load_ms_p99)).toBeGreaterThanOrEqual(Number(row?.db_load_ms_p50));
    expect(Number(row?.db_load_ms_mean)).toBeGreaterThanOrEqual(Number(row?.pg_exec_ms_mean) * 0.95);
    expect(Number(row?.pg_exec_ms_mean)).toBeGreaterThan(0);
    // Every column that applies to a valid local-strategy read run is filled.
    const notApplicable = new Set([
      "l1_ttl_ms",
      "redis_client",
      "l2_hit_ratio",
      "stale_reads",
      "stale_checks",
      "stale_checks_failed",
      "staleness_windows",
      "staleness_p50_ms",
      "staleness_p99_ms",
      "staleness_max_ms",
      "staleness_bound_ms",
      "stale_beyond_bound",
      "stale_read_ratio",
      "dropped",
      "invalid_reason",
      // The seed sizes no payloads: every description is description_bytes long.
      "payload_bytes",
      // No faults in this run: nothing to report on them.
      "faults",
      "fault_worst_p99_ms",
      "fault_failed",
      "fault_recovery_s",
      // No constraints in this run, and local has no Redis or early refresh.
      "server_cpu_limit",
      "redis_maxmemory",
      "redis_evicted_keys",
      "redis_entries",
      "redis_bytes_per_entry",
      "redis_tracking_items",
      "refresh_loads",
      // Zipf draws, not a trace: the trace columns are empty.
      ...COLUMNS.filter((column) => column.startsWith("trace_")),
      // One instance: the row's own counts are the instance's.
      "instance_requests",
      "instance_db_queries",
      "metrics_from_unix_s",
      "metrics_to_unix_s",
      // local answers from process memory or the database: no Redis hit, no Redis command; no writes here,
      // and no request joined another's load (its count, 0, is there).
      ...COLUMNS.filter((column) => /^srv_(l2_hit|write|join)_((mean|p50|p99)_ms|hist)$/.test(column)),
      "redis_cmd_mean_ms",
      "redis_cmd_p50_ms",
      "redis_cmd_p99_ms",
      // Both services direct: no proxy to ping through, no base probed, nothing added; no figure asked.
      "postgres_path_rtt_ms",
      "redis_path_rtt_ms",
      ...COLUMNS.filter((column) => /^(miss_cost|redis_rtt)(_base|_added)?_ms$/.test(column)),
      // No base cells, no prediction. Nothing to warn about.
      "predicted_mean_ms",
      "predicted_p99_ms",
      "predicted_from",
      "predicted_reason",
      "warnings",
    ]);
    for (const column of COLUMNS) {
      if (!notApplicable.has(column))
        expect({ column, value: row?.[column] }).not.toEqual({ column, value: "" });
    }
    expect(existsSync(row?.raw_path ?? "")).toBe(true);
  });

  test("rows record the Postgres driver and the Redis client as the server reported them", async () => {
    const out = tempCsv();
    const exp = tiny({
      strategies: ["none", "two_tier"],
      attacks: [
        {
          ...(tiny().attacks[0] as ExperimentAttack),
          server: { pgDriver: "bun-sql", redisClient: "bun" },
        },
      ],
    });
    const summary = await runExperiment(exp, { name: "unit", out, services, ...quiet });
    if (typeof summary === "string") throw new Error(summary);
    const [none, twoTier] = readRows(out);
    for (const row of [none, twoTier]) {
      expect(row?.invalid_reason).toBe("");
      expect(row?.pg_driver).toStartWith("Bun.SQL (bun ");
    }
    expect(none?.redis_client).toBe("");
    // What Redis held after the run, by its own count: none holds nothing there, two_tier a product per key.
    expect([none?.redis_entries, none?.redis_bytes_per_entry]).toEqual(["", ""]);
    expect(Number(twoTier?.redis_entries)).toBeGreaterThan(0);
    expect(Number(twoTier?.redis_entries)).toBeLessThanOrEqual(Number(twoTier?.keyspace) + 50);
    expect(Number(twoTier?.redis_bytes_per_entry)).toBeGreaterThan(Number(twoTier?.description_bytes));
    // Redis's whole table, closed connections' items included until their keys change (redis#13867).
    expect(twoTier?.redis_tracking_items).toMatch(/^\d+$/);
    // Negotiated, not assumed: the protocol and the Redis version the server's client was answered with.
    expect(twoTier?.redis_client).toMatch(/^bun \S+ RedisClient resp3 redis=\d+\.\d+\.\d+ /);
  });

  test("a constrained cell runs its server in a CPU-limited group and Redis under maxmemory, then puts Redis back", async () => {
    const redis = await testRedis();
    try {
      const [, maxmemoryBefore] = (await redis.config("GET", "maxmemory")) as string[];
      const out = tempCsv();
      const constrained = tiny({ strategies: ["redis"], server: { cpuLimit: 0.5, redisMaxmemoryMb: 64 } });
      const summary = await runExperiment(constrained, { name: "unit", out, services, ...quiet });
      if (typeof summary === "string") throw new Error(summary);
      const [row] = readRows(out);
      expect(row?.invalid_reason).toBe("");
      // cgroup v1 here (FACTS §10); taskset only where no cpu controller is usable.
      expect(row?.server_cpu_limit).toBe("0.5 CPU (cgroup v1 cfs quota 50000/100000)");
      expect(row?.redis_maxmemory).toStartWith("maxmemory 64.0 MiB (67108864 bytes), allkeys-lru");
      expect(Number(row?.redis_evicted_keys)).toBeGreaterThanOrEqual(0);
      expect((await redis.config("GET", "maxmemory"))[1]).toBe(maxmemoryBefore);
      // The cell's group is gone with its server.
      const left = readdirSync("/sys/fs/cgroup/cpu").filter((name) => name.startsWith(`cachelab-`));
      expect(left.filter((name) => name.endsWith(`-${process.pid}`))).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  test("a maxmemory left on the lab's Redis (a killed run's) is warned about and recorded in the rows", async () => {
    const redis = await testRedis();
    const [, before] = (await redis.config("GET", "maxmemory")) as string[];
    try {
      await redis.config("SET", "maxmemory", String(512 * 1_048_576));
      const out = tempCsv();
      const lines: string[] = [];
      const summary = await runExperiment(tiny({ strategies: ["redis"] }), {
        name: "unit",
        out,
        services,
        ...quiet,
        log: (line) => lines.push(line),
      });
      if (typeof summary === "string") throw new Error(summary);
      expect(
        lines.some((line) => line.startsWith("warning: the lab's Redis already has maxmemory 512.0 MiB")),
      ).toBe(true);
      expect(readRows(out)[0]?.redis_maxmemory).toEndWith("(found, not set by this run)");
    } finally {
      await redis.config("SET", "maxmemory", before ?? "0");
      redis.disconnect();
    }
  });

  test("a server answering a wrong version is caught by verification and its row is invalid", async () => {
    const out = tempCsv();
    const summary = await runExperiment(tiny(), {
      name: "unit",
      out,
      services,
      serverEntry: join(import.meta.dir, "testdata", "broken_server.ts"),
      ...quiet,
    });
    if (typeof summary === "string") throw new Error(summary);
    const [row] = readRows(out);
    expect(row?.valid).toBe("false");
    expect(row?.invalid_reason).toContain("body differs from the database row");
    expect(row?.achieved_rps).toBe("");
  });

  test("a tool that fails leaves an invalid row with the reason, and the run goes on", async () => {
    const bin = mkdtempSync(join(testTmpdir(), "cachelab-fake-oha-"));
    const fake = join(bin, "oha");
    // Answers --version like oha, then crashes on the attack without writing its JSON.
    writeFileSync(
      fake,
      '#!/bin/sh\n[ "$1" = "--version" ] && { echo "oha 1.15.0"; exit 0; }\necho "boom" >&2\nexit 3\n',
    );
    chmodSync(fake, 0o755);
    const path = process.env.PATH;
    process.env.PATH = `${bin}:${path}`;
    try {
      const out = tempCsv();
      const summary = await runExperiment(tiny({ tools: ["oha"], strategies: ["none", "local"] }), {
        name: "unit",
        out,
        services,
        ...quiet,
      });
      if (typeof summary === "string") throw new Error(summary);
      const rows = readRows(out);
      expect(rows.map((row) => row.strategy)).toEqual(["none", "local"]);
      for (const row of rows) {
        expect(row.valid).toBe("false");
        expect(row.invalid_reason).toContain("tool failed");
      }
    } finally {
      process.env.PATH = path;
    }
  });

  test("a cell whose server cannot start is recorded as invalid and the run goes on", async () => {
    const out = tempCsv();
    const summary = await runExperiment(tiny({ strategies: ["none", "local"] }), {
      name: "unit",
      out,
      services,
      serverEntry: join(import.meta.dir, "testdata", "exiting_server.ts"),
      ...quiet,
    });
    if (typeof summary === "string") throw new Error(summary);
    const rows = readRows(out);
    expect(rows.map((row) => [row.strategy, row.valid])).toEqual([
      ["none", "false"],
      ["local", "false"],
    ]);
    expect(rows[0]?.invalid_reason).toContain("cell crashed: server did not start");
  });

  test("a results file with another header is left alone and rows go to a versioned file", async () => {
    const out = tempCsv();
    writeFileSync(out, "run_id,something_old\nold,1\n");
    const summary = await runExperiment(tiny(), { name: "unit", out, services, ...quiet });
    if (typeof summary === "string") throw new Error(summary);
    expect(summary.csvPath).toBe(out.replace(/\.csv$/, ".v2.csv"));
    expect(readFileSync(out, "utf8")).toBe("run_id,something_old\nold,1\n");
    expect(readRows(summary.csvPath)).toHaveLength(1);
  });
});
