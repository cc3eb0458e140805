import { afterEach, beforeEach, describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "../shared/repo.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { defaultFromIn, main, OWN_FROM, REFERENCE_FROM } from "./advise.ts";

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
  dir = mkdtempSync(join(testTmpdir(), "cachelab-advise-"));
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
    expect(err[0]).toStartWith("Cannot use --nope: no such option");
    for (const [args, message] of [
      [["--hit-ratio", "1.5"], "Cannot parse --hit-ratio: expected a ratio in 0..1: received 1.5"],
      [["--miss-cost-ms=-1"], "Cannot parse --miss-cost-ms: expected milliseconds ≥ 0: received -1"],
      [["--redis-rtt-ms", "fast"], "Cannot parse --redis-rtt-ms: expected milliseconds ≥ 0: received fast"],
      [["--instances", "0"], "Cannot parse --instances: expected a positive integer up to 10000: received 0"],
      [["--rate-rps", "0"], "Cannot parse --rate-rps: expected a rate in (0, 1e9]: received 0"],
      [["--rate-rps", "99999999999999999999"], "Cannot parse --rate-rps: expected a rate in (0, 1e9]"],
      [["--pool", "0"], "Cannot parse --pool: expected a positive integer up to 1000: received 0"],
      [["--cores", "-1"], "Cannot parse --cores: expected cores in (0, 4096]: received -1"],
      [["--cores=-1"], "Cannot parse --cores: expected cores in (0, 4096]: received -1"],
      [["--p99-target-ms", "0"], "Cannot parse --p99-target-ms: expected milliseconds > 0: received 0"],
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
      // One line and where the usage is, never the usage itself.
      expect(err[0]?.split("\n")).toHaveLength(2);
      expect(err[0]).toEndWith("see `bun run advise --help`");
    }
  });

  test("the committed reference is the default and says so; a --from run without srv_* columns: exit 2 naming the command that makes one", async () => {
    expect(await main(["--json", "--charts", dir])).toBe(0);
    // This machine's own quickstart when it has run one (defaultFromIn is tested below), else the reference.
    expect(JSON.parse(out.join("\n")).from).toContain(`${defaultFromIn(REPO_ROOT)}#`);
    // read_heavy's reference run of 2 December 2026, kept as it was: it predates the server's tier timing.
    const old = join(REPO_ROOT, "lab", "results", "testdata", "read_heavy_before_round_trips.csv");
    expect(await main(["--from", old, "--charts", dir])).toBe(2);
    expect(err[0]).toContain("has no srv_* columns");
    expect(err[0]).toContain("`bun run experiment quickstart`");
    expect(await main(["--from", `${FIXTURE}#nosuchrun`, "--charts", dir])).toBe(2);
    expect(err.at(-1)).toStartWith(`Cannot advise: no run nosuchrun in ${FIXTURE}: expected one of `);
    expect(err.at(-1)).toContain(OLDER);
    expect(await main(["--from", join(dir, "none.csv"), "--charts", dir])).toBe(2);
    expect(err.at(-1)).toBe(
      `Cannot read --from: no such file: received ${join(dir, "none.csv")}\nsee \`bun run advise --help\``,
    );
  });

  test("--json: a cheap miss and a far Redis predict redis slower than none", async () => {
    // Your figures are absolute: the base run's own are 0.3 ms (its probe) and 0.05 ms (its ping).
    const result = await json(["--hit-ratio", "0.8", "--miss-cost-ms", "0.35", "--redis-rtt-ms", "2.05"]);
    expect(meanOf(result, "redis")).toBeGreaterThan(meanOf(result, "none"));
    expect(meanOf(result, "none")).toBeCloseTo(0.85, 3);
    expect(result.from).toBe(`${FIXTURE}#${LATEST} (its latest run, attack zipf_reads_base)`);
    expect(result.inputs.missCostMs).toBeCloseTo(0.05, 9);
    expect(result.inputs.redisRttMs).toBeCloseTo(2, 9);
    expect(result.inputs).toMatchObject({
      askedMissCostMs: 0.35,
      askedRedisRttMs: 2.05,
      hitRatio: 0.8,
      rateRps: 2000,
      instances: 1,
    });
    expect(result.base).toMatchObject({
      file: FIXTURE,
      run_id: LATEST,
      machine: "constructed for tests (not a machine) × 2",
      miss_cost_ms: 0.3,
      redis_rtt_ms: 0.05,
    });
    expect(Object.keys(result.strategies[0]).slice(0, 6)).toEqual([
      "strategy",
      "predicted_mean_ms",
      "predicted_p99_ms",
      "predicted_client_p99_ms",
      "predicted_capacity_rps",
      "capacity_bound",
    ]);
    const crossing = result.crossovers.find(
      (c: { axis: string; belowFaster: string; aboveFaster: string }) =>
        c.axis === "redis_rtt_ms" && c.belowFaster === "redis" && c.aboveFaster === "none",
    );
    expect(crossing.atMs).toBeCloseTo(0.4, 6);
    expect(crossing.meanMs).toBeCloseTo(0.85, 6);
  });

  test("--json: a dear miss and a near Redis predict redis faster than none and local fastest", async () => {
    const result = await json(["--hit-ratio", "0.8", "--miss-cost-ms", "20", "--redis-rtt-ms", "0.5"]);
    expect(meanOf(result, "redis")).toBeLessThan(meanOf(result, "none"));
    expect(result.pick).toBe("local");
    expect(result.strategies[0].strategy).toBe("local");
    expect(result.check).toBe("bun run experiment quickstart --miss-cost-ms 20 --redis-rtt-ms 0.5");
  });

  test("a figure below the base run's own is refused, naming it", async () => {
    expect(await main(["--from", FIXTURE, "--charts", dir, "--miss-cost-ms", "0.1"])).toBe(2);
    expect(err).toEqual([
      "Cannot use --miss-cost-ms 0.1: below the base run's own, 0.3 ms (its idle probe of the server's own query (miss_cost_base_ms), on constructed for tests (not a machine) × 2): give at least 0.3\nsee `bun run advise --help`",
    ]);
    err = [];
    expect(await main(["--from", FIXTURE, "--charts", dir, "--redis-rtt-ms", "0.01"])).toBe(2);
    expect(err[0]).toStartWith("Cannot use --redis-rtt-ms 0.01: below the base run's own, 0.05 ms");
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
      await main(["--from", FIXTURE, "--charts", dir, "--hit-ratio", "0.8", "--miss-cost-ms", "0.35"]),
    ).toBe(0);
    const text = out.join("\n");
    expect(text.split("\n")[1]).toStartWith("costs from: constructed for tests (not a machine) × 2 — ");
    expect(text).toContain("miss cost 0.35 ms (yours; the base run's own 0.3 ms, 0.05 ms added)");
    expect(text).toContain(
      "Predicted mean at light load (ms) against the Redis round trip added, miss cost held at +0.05 ms:",
    );
    expect(text).toContain("- crossover: redis = none at 0.4 ms (0.85 ms): redis faster below, none above");
    expect(text).toContain("Check it: bun run experiment quickstart --miss-cost-ms 0.35");
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

describe("advise's base and its refusals", () => {
  test("no --from: this machine's own results/quickstart.csv when there is one, else the committed reference", () => {
    expect(defaultFromIn(dir)).toBe(REFERENCE_FROM);
    mkdirSync(join(dir, "results"));
    writeFileSync(join(dir, OWN_FROM), "run_id\n");
    expect(defaultFromIn(dir)).toBe(OWN_FROM);
  });

  test("a base attack with a fault, overload or a cold phase is refused, naming a fit one", async () => {
    const fixture = readFileSync(FIXTURE, "utf8").trimEnd().split("\n");
    const header = (fixture[0] as string).split(",");
    const column = (name: string) => header.indexOf(name);
    const edit = (line: string, name: string, value: string) => {
      const cells = line.split(",");
      cells[column(name)] = value;
      return cells.join(",");
    };
    for (const [name, value, said] of [
      ["faults", "redis_down@2s", "a fault was injected (faults redis_down@2s)"],
      ["shed", "40", "overloaded (shed 40, dropped 0"],
      ["warmup_s", "0", "a cold phase (warmup_s 0"],
    ] as const) {
      // The latest run's base attack made unfit in its last row; the older run stays as it was.
      const lines = fixture.map((line, i) => (i === fixture.length - 1 ? edit(line, name, value) : line));
      const file = join(dir, `${name}.csv`);
      writeFileSync(file, `${lines.join("\n")}\n`);
      err = [];
      expect(await main(["--from", file, "--charts", dir])).toBe(2);
      expect(err[0]).toStartWith(`Cannot advise from attack zipf_reads_base of ${file}#${LATEST}: ${said}`);
    }
    // --attack names one the run does not have: the ones it has are listed.
    err = [];
    expect(await main(["--from", FIXTURE, "--attack", "nope", "--charts", dir])).toBe(2);
    expect(err[0]).toBe(
      `Cannot advise: no attack nope in run ${LATEST} of ${FIXTURE}: expected one of zipf_reads_base\nsee \`bun run advise --help\``,
    );
  });

  test("--json writes no chart unless --charts is given", async () => {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      expect(await main(["--from", FIXTURE, "--json", "--hit-ratio", "0.8"])).toBe(0);
    } finally {
      process.chdir(cwd);
    }
    expect(existsSync(join(dir, "results"))).toBe(false);
    expect(JSON.parse(out.join("\n")).charts).toEqual([]);
  });

  test("the Done-when's figures: every strategy has a mean, p99, capacity and its bound; none pool-bound near 4 ÷ 10 ms", async () => {
    const result = await json([
      "--hit-ratio",
      "0.71",
      "--miss-cost-ms",
      "10",
      "--redis-rtt-ms",
      "0.5",
      "--pool",
      "4",
    ]);
    for (const s of result.strategies) {
      expect(typeof s.predicted_mean_ms).toBe("number");
      expect(typeof s.predicted_p99_ms).toBe("number");
      expect(typeof s.predicted_capacity_rps).toBe("number");
      expect(["cpu", "event_loop", "pool", "redis"]).toContain(s.capacity_bound);
    }
    const none = result.strategies.find((s: { strategy: string }) => s.strategy === "none");
    const local = result.strategies.find((s: { strategy: string }) => s.strategy === "local");
    expect(none.capacity_bound).toBe("pool");
    expect(Math.abs(none.predicted_capacity_rps / 400 - 1)).toBeLessThan(0.25);
    expect(Math.abs(local.predicted_capacity_rps / (none.predicted_capacity_rps / 0.29) - 1)).toBeLessThan(
      0.15,
    );
    // Figures as the spread supports, never 0.03742500000000004.
    out = [];
    expect(
      await main(["--from", FIXTURE, "--charts", dir, "--hit-ratio", "0.71", "--write-ratio", "0.037425"]),
    ).toBe(0);
    expect(out.join("\n")).toContain("write ratio 0.0374,");
  });

  test("--rate-rps says per strategy whether it holds the target there, and how many instances it needs", async () => {
    const result = await json([
      "--hit-ratio",
      "0.71",
      "--miss-cost-ms",
      "10",
      "--pool",
      "4",
      "--rate-rps",
      "1000",
    ]);
    const check = (s: string) =>
      result.strategies.find((r: { strategy: string }) => r.strategy === s).rate_check;
    expect(check("local")).toEqual({ rps: 1000, under: true, instances: 1 });
    expect(check("none")).toMatchObject({ rps: 1000, under: false, instances: 3 });
  });

  test("several instances: tracking's staleness bound is its L1 TTL, and local's pick says what it costs", async () => {
    const result = await json(["--hit-ratio", "0.8", "--miss-cost-ms", "20", "--instances", "4"]);
    expect(result.pick).toBe("local");
    expect(result.conditions.join("\n")).toContain("with 4 instances each local copy is stale until its TTL");
  });
});
