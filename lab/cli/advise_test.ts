import { afterEach, beforeEach, describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../shared/repo.ts";
import { main } from "./advise.ts";

// Constructed for the tests, not a measurement: lab/model/testdata/README.md.
const FIXTURE = join(REPO_ROOT, "lab/model/testdata/advise_fixture.csv");
const LATEST = "20261202T000000-constructed-for-tests-not-a-measurement";
const OLDER = "20261101T000000-constructed-for-tests-not-a-measurement";

let out: string[];
let err: string[];
let dir: string;
beforeEach(() => {
  out = [];
  err = [];
  dir = mkdtempSync(join(tmpdir(), "cachelab-advise-"));
  spyOn(console, "log").mockImplementation((...args: unknown[]) => void out.push(args.join(" ")));
  spyOn(console, "error").mockImplementation((...args: unknown[]) => void err.push(args.join(" ")));
});
afterEach(() => {
  (console.log as unknown as { mockRestore(): void }).mockRestore();
  (console.error as unknown as { mockRestore(): void }).mockRestore();
});

async function json(args: string[]) {
  expect(await main(["--from", FIXTURE, "--charts", dir, "--json", ...args])).toBe(0);
  return JSON.parse(out.join("\n"));
}

const meanOf = (result: { strategies: { strategy: string; predicted_mean_ms: number }[] }, s: string) =>
  result.strategies.find((r) => r.strategy === s)?.predicted_mean_ms as number;

describe("bun run advise", () => {
  test("--help exits 0 with the usage", async () => {
    expect(await main(["--help"])).toBe(0);
    expect(out.join("\n")).toStartWith("usage: bun run advise");
  });

  test("unknown flags and bad values: one message, exit 2", async () => {
    expect(await main(["--nope"])).toBe(2);
    expect(err[0]).toStartWith("Cannot run bun run advise: Unknown option '--nope'");
    for (const [args, message] of [
      [["--hit-ratio", "1.5"], "Cannot parse --hit-ratio: expected a ratio in 0..1: received 1.5"],
      [["--miss-cost-ms=-1"], "Cannot parse --miss-cost-ms: expected milliseconds ≥ 0: received -1"],
      [["--redis-rtt-ms", "fast"], "Cannot parse --redis-rtt-ms: expected milliseconds ≥ 0: received fast"],
      [["--instances", "0"], "Cannot parse --instances: expected a positive integer: received 0"],
      [["--rate-rps", "0"], "Cannot parse --rate-rps: expected a rate > 0: received 0"],
      [["--write-ratio", "1"], "Cannot parse --write-ratio: expected a ratio in 0..1 (below 1): received 1"],
      [
        ["--hit-ratio", "0.8", "--trace", "t.txt"],
        "Cannot run bun run advise: --hit-ratio and --trace both give",
      ],
      [["--l1-entries", "10"], "Cannot run bun run advise: --l1-entries needs --trace"],
    ] as const) {
      err = [];
      expect(await main([...args])).toBe(2);
      expect(err.length).toBe(1);
      expect(err[0]).toStartWith(message);
    }
  });

  test("the committed reference is the default and says so; a --from run without srv_* columns: exit 2 naming the command that makes one", async () => {
    expect(await main(["--json", "--charts", dir])).toBe(0);
    expect(JSON.parse(out.join("\n")).from).toContain("docs/results/quickstart.csv#");
    // read_heavy's reference run of 2 December 2026, kept as it was: it predates the server's tier timing.
    const old = join(REPO_ROOT, "lab", "results", "testdata", "read_heavy_before_round_trips.csv");
    expect(await main(["--from", old, "--charts", dir])).toBe(2);
    expect(err[0]).toContain("has no srv_* columns");
    expect(err[0]).toContain("`bun run experiment quickstart`");
    expect(await main(["--from", `${FIXTURE}#nosuchrun`, "--charts", dir])).toBe(2);
    expect(err.at(-1)).toStartWith(`Cannot advise: no run nosuchrun in ${FIXTURE}: expected one of `);
    expect(err.at(-1)).toContain(OLDER);
    expect(await main(["--from", join(dir, "none.csv"), "--charts", dir])).toBe(2);
    expect(err.at(-1)).toBe(`Cannot read --from: no such file: received ${join(dir, "none.csv")}`);
  });

  test("--json: a cheap miss and a far Redis predict redis slower than none", async () => {
    const result = await json(["--hit-ratio", "0.8", "--miss-cost-ms", "0.05", "--redis-rtt-ms", "2"]);
    expect(meanOf(result, "redis")).toBeGreaterThan(meanOf(result, "none"));
    expect(meanOf(result, "none")).toBeCloseTo(0.85, 6);
    expect(result.from).toBe(`${FIXTURE}#${LATEST} (its latest run, attack zipf_reads_base)`);
    expect(result.inputs).toMatchObject({
      missCostMs: 0.05,
      redisRttMs: 2,
      hitRatio: 0.8,
      rateRps: 2000,
      instances: 1,
    });
    expect(Object.keys(result.strategies[0]).slice(0, 5)).toEqual([
      "strategy",
      "predicted_mean_ms",
      "db_qps",
      "redis_cmds_per_request",
      "staleness_bound_ms",
    ]);
    expect(result.crossovers).toContainEqual({
      axis: "redis_rtt_ms",
      belowFaster: "redis",
      aboveFaster: "none",
      atMs: 0.4,
      meanMs: 0.85,
    });
  });

  test("--json: a dear miss and a near Redis predict redis faster than none and local fastest", async () => {
    const result = await json(["--hit-ratio", "0.8", "--miss-cost-ms", "20", "--redis-rtt-ms", "0.5"]);
    expect(meanOf(result, "redis")).toBeLessThan(meanOf(result, "none"));
    expect(result.pick).toBe("local");
    expect(result.strategies[0].strategy).toBe("local");
    expect(result.check).toBe("bun run experiment quickstart --miss-cost-ms 20 --redis-rtt-ms 0.5");
  });

  test("#run_id picks an earlier run; its costs (twice the latest's) double the prediction at M = R = 0", async () => {
    const result = await json(["--hit-ratio", "0.8"]);
    out = [];
    expect(
      await main(["--from", `${FIXTURE}#${OLDER}`, "--charts", dir, "--json", "--hit-ratio", "0.8"]),
    ).toBe(0);
    const older = JSON.parse(out.join("\n"));
    expect(older.from).toBe(`${FIXTURE}#${OLDER} (attack zipf_reads)`);
    expect(meanOf(older, "redis")).toBeCloseTo(2 * meanOf(result, "redis"), 6);
  });

  test("the two charts are written as SVG with the crossovers marked; the card prints them as tables", async () => {
    expect(
      await main(["--from", FIXTURE, "--charts", dir, "--hit-ratio", "0.8", "--miss-cost-ms", "0.05"]),
    ).toBe(0);
    const text = out.join("\n");
    expect(text).toContain("Predicted mean (ms) against the Redis round trip, miss cost held at 0.05 ms:");
    expect(text).toContain("- crossover: redis = none at 0.4 ms (0.85 ms): redis faster below, none above");
    expect(text).toContain("note: p99 is not modelled");
    expect(text).toContain("Check it: bun run experiment quickstart --miss-cost-ms 0.05 --redis-rtt-ms 0");
    for (const axis of ["redis_rtt_ms", "miss_cost_ms"]) {
      const path = join(dir, `advise_${axis}.svg`);
      expect(existsSync(path)).toBe(true);
      expect(readFileSync(path, "utf8")).toStartWith("<svg");
      expect(text).toContain(`chart: ${path}`);
    }
    expect(readFileSync(join(dir, "advise_redis_rtt_ms.svg"), "utf8")).toContain("redis = none at 0.4");
  });

  test("--trace: in-process hit ratio from quick-lru at --l1-entries, Redis's from LRU with room for every key", async () => {
    // a a b a: quick-lru of 1 entry hits the second a only (1/4); LRU with room for both keys hits both repeats (2/4).
    const trace = join(dir, "t.txt");
    writeFileSync(trace, "a\na\nb\na\n");
    const result = await json(["--trace", trace, "--l1-entries", "1"]);
    expect(result.inputs).toMatchObject({ hitRatio: 0.5, l1HitRatio: 0.25, writeRatio: 0, redisEntries: 2 });
    expect(result.inputs.hitSource).toContain("quick-lru at 1 entries");
    expect(
      result.strategies.find((s: { strategy: string }) => s.strategy === "redis").redis_memory_bytes,
    ).toBe(700);
  });

  test("--staleness-budget-ms with several instances rules local out, and says so", async () => {
    const result = await json([
      "--hit-ratio",
      "0.8",
      "--miss-cost-ms",
      "20",
      "--instances",
      "3",
      "--staleness-budget-ms",
      "1000",
    ]);
    expect(result.pick).toBe("redis");
    expect(result.conditions[0]).toStartWith(
      "local excluded: staleness bound 60000 ms over the budget 1000 ms",
    );
  });
});
