import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { type ServerProcess, startServer } from "../cell/server_process.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { processesWorkingIn, testDatabaseUrl } from "../shared/testing.ts";
import { UsageError } from "./args.ts";
import { main } from "./attack.ts";
import { parseDurationS, parseKeys, planFromArgs } from "./attack_args.ts";

describe("attack command line", () => {
  test("planFromArgs builds an open-model Zipf plan from the issue's example", () => {
    const { plan, tool, json } = planFromArgs([
      "--url",
      "http://127.0.0.1:3000/products/{id}",
      "--tool",
      "oha",
      "--rate",
      "500",
      "--duration",
      "10s",
      "--keys",
      "zipf:1.1",
      "--keyspace",
      "100000",
      "--json",
    ]);
    expect(tool).toBe("oha");
    expect(json).toBe(true);
    expect(plan.baseUrl).toBe("http://127.0.0.1:3000");
    expect(plan.model).toEqual({ kind: "open", rateRps: 500 });
    expect(plan.durationS).toBe(10);
    expect(plan.requests).toEqual([{ name: "request", weight: 1, method: "GET", path: "/products/{id}" }]);
    expect(plan.keys).toEqual({ distribution: { kind: "zipf", exponent: 1.1 }, keyspace: 100_000, seed: 42 });
  });

  test("planFromArgs builds a closed model from --connections and a ramp from --ramp", () => {
    expect(planFromArgs(["--url", "http://h:1/p/{id}", "--connections", "32"]).plan.model).toEqual({
      kind: "closed",
      connections: 32,
    });
    const ramp = planFromArgs([
      "--url",
      "http://h:1/p/{id}",
      "--rate",
      "10",
      "--ramp",
      "100:5s,200:10s",
    ]).plan;
    expect(ramp.model).toEqual({
      kind: "ramping",
      startRps: 10,
      stages: [
        { targetRps: 100, durationS: 5 },
        { targetRps: 200, durationS: 10 },
      ],
    });
    expect(ramp.durationS).toBe(15);
  });

  test("planFromArgs keeps query strings and headers", () => {
    const { plan } = planFromArgs([
      "--url",
      "http://h:1/products?category={id}&size=5",
      "--header",
      "X-Test: yes",
      "--method",
      "put",
      "--body",
      '{"stock":1}',
    ]);
    expect(plan.requests[0]).toEqual({
      name: "request",
      weight: 1,
      method: "PUT",
      path: "/products?category={id}&size=5",
      body: '{"stock":1}',
    });
    expect(plan.headers).toEqual({ "X-Test": "yes" });
  });

  test("planFromArgs rejects bad input with a message naming the flag and the valid values", () => {
    const cases: [string[], string][] = [
      [["--rate", "5"], "--url is required"],
      [["--url", "http://h/p", "--tool", "ab"], "expected one of oha, vegeta, k6, wrk, autocannon"],
      [["--url", "http://h/p", "--rate", "1.5"], "--rate"],
      [["--url", "http://h/p", "--rate", "5", "--connections", "2"], "Cannot combine"],
      [["--url", "http://h/p", "--duration", "ten"], "--duration"],
      [["--url", "http://h/p", "--keys", "pareto"], "expected uniform, zipf:EXPONENT"],
      [["--url", "http://h/p", "--bogus"], "Cannot use --bogus: no such option"],
      [["--url", "not a url"], "not a URL"],
      [["--url", "http://h/p", "--export", "helm"], "expected k6-operator"],
      [["--url", "http://h/p", "--import", "k6-json"], "needs the runners' JSON files"],
      [["--url", "http://h/p", "stray.json"], "files follow --import k6-json only"],
      [["--url", "http://h/p", "--export", "k6-operator", "--parallelism", "0"], "--parallelism"],
      [["--url", "http://h/p", "--volume-claim", "files"], "--volume-claim without --export k6-operator"],
    ];
    for (const [args, message] of cases) {
      expect(() => planFromArgs(args)).toThrow(UsageError);
      expect(() => planFromArgs(args)).toThrow(message);
    }
  });

  test("--export k6-operator and --import k6-json are read with their arguments", () => {
    const exported = planFromArgs([
      "--url",
      "http://h/products/{id}",
      "--export",
      "k6-operator",
      "--parallelism",
      "4",
    ]);
    expect(exported.exportTo).toEqual({ parallelism: 4, name: "cachelab" });
    expect(exported.importFiles).toBeNull();
    const imported = planFromArgs([
      "--url",
      "http://h/products/{id}",
      "--import",
      "k6-json",
      "a.json",
      "b.json",
    ]);
    expect(imported.importFiles).toEqual(["a.json", "b.json"]);
    expect(imported.exportTo).toBeNull();
  });

  test("--targets defaults to what the plan sends plus 1%, the longer run's; an explicit --targets wins", () => {
    const url = ["--url", "http://h/products/{id}", "--rate", "500", "--duration", "10s"];
    expect(planFromArgs(url).plan.targetCount).toBe(5_000 + 50 + 16);
    expect(planFromArgs([...url, "--warmup", "20s"]).plan.targetCount).toBe(10_000 + 100 + 16);
    expect(planFromArgs([...url, "--targets", "777"]).plan.targetCount).toBe(777);
    expect(planFromArgs([...url, "--targets", "777"]).targetsGiven).toBe(true);
    expect(planFromArgs(url).targetsGiven).toBe(false);
    // A local tool's list is capped (MAX_LIST_TARGETS); an exported script generates its stream, uncapped.
    const big = ["--url", "http://h/products/{id}", "--rate", "100000", "--duration", "10m"];
    expect(planFromArgs(big).plan.targetCount).toBe(3_000_000);
    expect(planFromArgs([...big, "--export", "k6-operator"]).plan.targetCount).toBe(60_600_016);
  });

  test("bun run attack refuses a sampling tool's default list that cannot stay fresh, naming --targets", async () => {
    const errors: string[] = [];
    const spy = spyOn(console, "error").mockImplementation((line: string) => {
      errors.push(line);
    });
    try {
      // oha draws 10^5 URLs with replacement: even 3 000 000 lines would re-send more than 1% of them.
      const code = await main([
        "--url",
        "http://127.0.0.1:1/products/{id}",
        "--tool",
        "oha",
        "--rate",
        "10000",
      ]);
      expect(code).toBe(2);
    } finally {
      spy.mockRestore();
    }
    expect(errors.join("\n")).toContain("Cannot size oha's target list");
    expect(errors.join("\n")).toContain("pass --targets N to accept re-sent targets");
  });

  test("parseDurationS and parseKeys read every documented form", () => {
    expect(parseDurationS("d", "1500ms")).toBe(1.5);
    expect(parseDurationS("d", "2m")).toBe(120);
    expect(parseKeys("hotspot:0.1:0.9")).toEqual({ kind: "hotspot", hotFraction: 0.1, hotShare: 0.9 });
    expect(parseKeys("sequential")).toEqual({ kind: "sequential" });
  });

  test("bun run attack exits 2 with the usage on an unknown tool", async () => {
    const proc = Bun.spawn(
      ["bun", `${import.meta.dir}/attack.ts`, "--url", "http://127.0.0.1:1/x", "--tool", "ab"],
      {
        stderr: "pipe",
      },
    );
    expect(await proc.exited).toBe(2);
    const stderr = await new Response(proc.stderr).text();
    expect(stderr).toContain("expected one of oha, vegeta, k6, wrk, autocannon");
    expect(stderr).toContain("see `bun run attack --help`");
  });
});

describe("bun run attack --csv: one row of the experiments' schema, checked like one", () => {
  const servers: ServerProcess[] = [];
  let databaseUrl: string;
  // As its owner would: the server started with a token, the same token in this command's environment.
  const token = `attack-${crypto.randomUUID()}`;
  beforeAll(async () => {
    databaseUrl = await testDatabaseUrl({ rows: 2_000, seed: 7, descriptionBytes: 64 });
    process.env.CACHELAB_ADMIN_TOKEN = token;
  });
  afterAll(async () => {
    delete process.env.CACHELAB_ADMIN_TOKEN;
    await Promise.all(servers.map((server) => server.stop()));
  });

  async function server(entry?: string): Promise<ServerProcess> {
    const started = await startServer({
      env: { CACHE_STRATEGY: "local", DATABASE_URL: databaseUrl, CACHELAB_ADMIN_TOKEN: token },
      ...(entry ? { entry } : {}),
    });
    servers.push(started);
    return started;
  }

  /** One vegeta run against `url` into a fresh CSV: the exit code and the row. */
  async function attack(
    url: string,
    ...extra: string[]
  ): Promise<{ code: number; row?: Record<string, string> }> {
    const csv = join(mkdtempSync(join(testTmpdir(), "cachelab-attack-csv-")), "rows.csv");
    const code = await main([
      "--url",
      `${url}/products/{id}`,
      "--tool",
      "vegeta",
      "--rate",
      "200",
      "--warmup",
      "1s",
      "--duration",
      "2s",
      "--keyspace",
      "300",
      "--out",
      join(csv, "..", "raw"),
      "--csv",
      csv,
      ...extra,
    ]);
    if (code !== 0) return { code };
    const [row] = parse(readFileSync(csv, "utf8"), { columns: true }) as Record<string, string>[];
    return { code, row };
  }

  test("against a cachelab server reset first: its settings and counters fill the row, the hit ratio matches the simulation", async () => {
    const { url } = await server();
    const { code, row } = await attack(url, "--reset");
    expect(code).toBe(0);
    expect(row).toMatchObject({
      experiment: "attack",
      attack: "run",
      strategy: "local",
      tool: "vegeta",
      cache_ttl_ms: "60000",
      server_requests: row?.completed,
      invalid_reason: "",
      valid: "true",
    });
    expect(Math.abs(Number(row?.hit_ratio) - Number(row?.hit_ratio_expected))).toBeLessThanOrEqual(0.02);
    expect(Number(row?.hit_ratio)).toBeGreaterThan(0.3);
    // The same stream again, without a reset: a cache of unknown history, so no hit ratio is recorded.
    const again = await attack(url);
    expect(again.row?.hit_ratio).toBe("");
    expect(again.row?.hit_ratio_expected).toBe("");
    expect(again.row?.db_queries).toBe("0");
  });

  test("a server that caches wrongly but answers right: the simulation marks the row invalid", async () => {
    const { url } = await server(join(import.meta.dir, "..", "run", "testdata", "forgetful_server.ts"));
    const { row } = await attack(url, "--reset");
    expect(row?.valid).toBe("false");
    expect(row?.invalid_reason).toContain("deviates from the simulation of the same key stream");
  });

  test("--reset without the server's token is refused, naming CACHELAB_ADMIN_TOKEN", async () => {
    const { url } = await server();
    process.env.CACHELAB_ADMIN_TOKEN = "not-the-servers";
    const printed = spyOn(console, "error");
    try {
      expect((await attack(url, "--reset")).code).toBe(1);
      const said = printed.mock.calls.map((call) => String(call[0])).join("\n");
      expect(said).toContain("Cannot reset");
      expect(said).toContain(": 401 ");
      expect(said).toContain("set CACHELAB_ADMIN_TOKEN");
      const stats = (await (await fetch(`${url}/stats`)).json()) as { resets: number };
      expect(stats.resets).toBe(0);
    } finally {
      printed.mockRestore();
      process.env.CACHELAB_ADMIN_TOKEN = token;
    }
  });

  test("--reset of a URL that is not a cachelab server exits 2", async () => {
    expect((await attack("http://127.0.0.1:1", "--reset")).code).toBe(2);
  });
});

describe("bun run attack on Ctrl-C", () => {
  let server: ServerProcess;
  beforeAll(async () => {
    const databaseUrl = await testDatabaseUrl({ rows: 2_000, seed: 7, descriptionBytes: 64 });
    server = await startServer({ env: { CACHE_STRATEGY: "local", DATABASE_URL: databaseUrl } });
  });
  afterAll(async () => {
    await server.stop();
  });

  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    test(`${signal} mid-attack exits 130 only once vegeta's whole group is gone, zombies included`, async () => {
      const raw = join(mkdtempSync(join(testTmpdir(), "cachelab-attack-sigint-")), "raw");
      const cli = join(import.meta.dir, "attack.ts");
      const args = [
        "--url",
        `${server.url}/products/{id}`,
        "--tool",
        "vegeta",
        "--rate",
        "20",
        "--duration",
        "30s",
      ];
      const proc = Bun.spawn(["bun", cli, ...args, "--keyspace", "300", "--out", raw], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const seen = new Map<number, string>();
      const deadlineMs = performance.now() + 15_000;
      // vegeta attacking, and its pipeline's other stages started (a shell leads the group).
      while (
        ![...seen.values()].filter((comm) => comm === "vegeta").length &&
        performance.now() < deadlineMs
      ) {
        for (const [pid, comm] of processesWorkingIn(raw)) seen.set(pid, comm);
        await Bun.sleep(50);
      }
      expect([...seen.values()]).toContain("vegeta");
      await Bun.sleep(500); // into the attack
      for (const [pid, comm] of processesWorkingIn(raw)) seen.set(pid, comm);
      proc.kill(signal);
      expect(await proc.exited).toBe(130);
      // Right after the runner's exit: no process of the tool's, not even a zombie waiting for init.
      const left = [...seen].filter(([pid]) => existsSync(`/proc/${pid}`));
      expect(left).toEqual([]);
      expect(await new Response(proc.stderr).text()).toContain(`${signal}: stopping the tool`);
    }, 30_000);
  }
});
