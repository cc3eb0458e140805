import { describe, expect, test } from "bun:test";
import { UsageError } from "./args.ts";
import { parseDurationS, parseKeys, planFromArgs } from "./attack.ts";

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
      [["--url", "http://h/p", "--bogus"], "Unknown option '--bogus'"],
      [["--url", "not a url"], "not a URL"],
      [["--url", "http://h/p", "--export", "helm"], "expected k6-operator"],
      [["--url", "http://h/p", "--import", "k6-json"], "needs the runners' JSON files"],
      [["--url", "http://h/p", "stray.json"], "files follow --import k6-json only"],
      [["--url", "http://h/p", "--export", "k6-operator", "--parallelism", "0"], "--parallelism"],
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
    expect(stderr).toContain("usage: bun run attack");
  });
});
