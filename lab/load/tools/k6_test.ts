import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel, Target } from "../../plan/plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import type { TestServer } from "./_fixture.ts";
import {
  capturedRun,
  DETAIL,
  editedJson,
  notFound,
  ROWS,
  replayed,
  SMALL_PLAN,
  STOCK,
  startTestServer,
  testPlan,
} from "./_fixture.ts";
import type { Detection, RawOutput, RunContext } from "./_tool.ts";
import { tool } from "./k6.ts";
import { k6Options } from "./k6_script.ts";

function plan(model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return testPlan(model, {
    name: "k6-test",
    ...SMALL_PLAN,
    requests: [{ ...DETAIL, weight: 1 }],
    ...overrides,
  });
}

/** A captured run: the summary k6 wrote, with the context it was run in. */
function captured(name: string): { raw: RawOutput; context: RunContext } {
  return capturedRun(`k6-1.8.1-${name}`, "summary.json");
}

type Metrics = Record<string, { values: Record<string, number> }>;

/** The captured normal summary with its metrics edited. */
function edited(edit: (metrics: Metrics) => void): RawOutput {
  return editedJson<{ metrics: Metrics }>(captured("normal").raw, {
    file: "summary.json",
    edit: (summary) => edit(summary.metrics),
  });
}

describe("k6 parse", () => {
  test("k6 parse reads a normal open run exactly, in ms and s", () => {
    const { raw, context } = captured("normal");
    expect(tool.parse(raw, context)).toEqual({
      tool: "k6",
      toolVersion: "1.8.1",
      model: "open",
      offeredRps: 200,
      requests: 401,
      completed: 401,
      ok: 361,
      statusCounts: { "200": 361, "404": 40 },
      errorCounts: {},
      droppedOrAborted: 0,
      // The send window is the scenario's 2 s; the 2.6 ms after it is the drain.
      achievedRps: 401 / 2,
      okRps: 361 / 2,
      latencyMs: {
        min: 0.208171,
        mean: 1.141595718204489,
        p50: 0.807626,
        p90: 2.083004,
        p95: 2.848436,
        p99: 4.648787,
        p99_9: 15.09561880000011,
        max: 17.016556,
      },
      bytesIn: 122_705,
      durationS: 2,
      drainS: expect.closeTo(0.002574199, 9),
      sent: { kind: "prefix", count: 401 },
    });
  });

  test("k6 parse counts statuses, refused connections, EOFs and timeouts of an error-heavy run", () => {
    const { raw, context } = captured("errors");
    const result = tool.parse(raw, context);
    expect(result.requests).toBe(301);
    expect(result.completed).toBe(129);
    expect(result.ok).toBe(92);
    expect(result.statusCounts).toEqual({ "200": 92, "400": 28, "404": 9 });
    expect(result.errorCounts).toEqual({
      "1000 generic error": 6,
      "1050 request timeout": 2,
      "1212 dial: connection refused": 164,
    });
    expect(result.droppedOrAborted).toBe(0);
    // A 3 s scenario: the send window; the 1.3 ms after it is the drain.
    expect(result.durationS).toBe(3);
    expect(result.drainS).toBeCloseTo(0.00134019, 9);
    expect(result.achievedRps).toBe(129 / 3);
    expect(result.okRps).toBe(92 / 3);
    // http_req_duration covers failed requests too: refused dials count 0 ms, timeouts ~1000 ms.
    expect(result.latencyMs).toEqual({
      min: 0,
      mean: 22.431362096345513,
      p50: 0,
      p90: 0.522083,
      p95: 0.986588,
      p99: 802.768455,
      p99_9: 1000.1369953,
      max: 1000.219888,
    });
    expect(result.bytesIn).toBe(18_091);
  });

  test("k6 parse reads dropped_iterations, and reports none for a closed run", () => {
    const { context } = captured("normal");
    const dropped = edited((metrics) => {
      metrics.dropped_iterations = { values: { count: 7, rate: 3.5 } };
    });
    expect(tool.parse(dropped, context).droppedOrAborted).toBe(7);
    const closed = {
      ...context,
      plan: { ...context.plan, model: { kind: "closed", connections: 4 } as const },
    };
    const result = tool.parse(captured("normal").raw, closed);
    expect(result.droppedOrAborted).toBeNull();
    expect(result.offeredRps).toBeNull();
    expect(result.model).toBe("closed");
  });

  test("k6 parse offers the mean stage rate for ramping, and the start rate for its warm-up", () => {
    const { raw, context } = captured("normal");
    const ramping: LoadModel = {
      kind: "ramping",
      startRps: 100,
      stages: [
        { targetRps: 300, durationS: 1 },
        { targetRps: 300, durationS: 1 },
      ],
    };
    const measured = { ...context, plan: { ...context.plan, model: ramping } };
    expect(tool.parse(raw, measured)).toMatchObject({ model: "ramping", offeredRps: 250 });
    expect(tool.parse(raw, { ...measured, durationS: 1 })).toMatchObject({ model: "open", offeredRps: 100 });
  });

  test("k6 parse puts an unlisted status and an unlisted error code under other", () => {
    const { context } = captured("normal");
    const raw = edited((metrics) => {
      (metrics.http_reqs as { values: Record<string, number> }).values.count = 405;
      metrics["http_reqs{status:0}"] = { values: { count: 1, rate: 0 } };
    });
    const result = tool.parse(raw, context);
    expect(result.completed).toBe(404);
    expect(result.statusCounts).toEqual({ "200": 361, "404": 40, other: 3 });
    expect(result.errorCounts).toEqual({ "other k6 error_code": 1 });
  });

  test("k6 parse throws, naming what is missing, instead of returning zeros", () => {
    const { raw, context } = captured("normal");
    expect(() => tool.parse({ ...raw, outputs: {} }, context)).toThrow(
      "Cannot parse k6 output: summary.json was not written (exit code 0)",
    );
    expect(() => tool.parse({ ...raw, outputs: { "summary.json": "{" } }, context)).toThrow(
      "summary.json is not JSON",
    );
    const noStatus0 = edited((metrics) => {
      delete metrics["http_reqs{status:0}"];
    });
    expect(() => tool.parse(noStatus0, context)).toThrow("http_reqs{status:0} is missing");
    const noP999 = edited((metrics) => {
      delete metrics.http_req_duration?.values["p(99.9)"];
    });
    expect(() => tool.parse(noP999, context)).toThrow("http_req_duration has no p(99.9)");
    const noRequests = edited((metrics) => {
      delete metrics.http_reqs;
    });
    expect(() => tool.parse(noRequests, context)).toThrow("no http_reqs");
  });
});

describe("k6 prepare and refusal", () => {
  test("k6 prepare runs an open plan as constant-arrival-rate with every VU pre-allocated", () => {
    const options = k6Options(plan({ kind: "open", rateRps: 150 }, { timeoutS: 1.5 }), 2);
    expect(options.scenarios).toEqual({
      main: {
        executor: "constant-arrival-rate",
        rate: 150,
        duration: "2000ms",
        timeUnit: "1s",
        preAllocatedVUs: 50,
        maxVUs: 50,
        gracefulStop: "2500ms",
      },
    });
    expect(options.summaryTrendStats).toContain("p(99.9)");
    expect(options.thresholds).toMatchObject({
      "http_reqs{status:0}": ["count>=0"],
      "http_reqs{status:404}": ["count>=0"],
      "http_reqs{error_code:1212}": ["count>=0"],
    });
  });

  test("k6 prepare runs ramping stages, and its shorter warm-up at the start rate", () => {
    const ramping = plan(
      { kind: "ramping", startRps: 0, stages: [{ targetRps: 80, durationS: 2 }] },
      { warmupS: 1 },
    );
    expect(k6Options(ramping, 2).scenarios).toEqual({
      main: {
        executor: "ramping-arrival-rate",
        startRate: 0,
        stages: [{ target: 80, duration: "2000ms" }],
        timeUnit: "1s",
        preAllocatedVUs: 50,
        maxVUs: 50,
        gracefulStop: "3000ms",
      },
    });
    // A ramp from 0 warms up at its first target: a constant rate of 0 is no warm-up.
    expect(k6Options(ramping, 1).scenarios).toMatchObject({
      main: { executor: "constant-arrival-rate", rate: 80, duration: "1000ms" },
    });
  });

  test("k6 prepare runs a closed plan as constant-vus and writes the script, targets and argv", () => {
    const closed = plan({ kind: "closed", connections: 4 });
    expect(k6Options(closed, 3).scenarios).toEqual({
      main: { executor: "constant-vus", vus: 4, duration: "3000ms", gracefulStop: "3000ms" },
    });
    const targets = generateTargets(closed);
    const prepared = tool.prepare(targets, {
      plan: closed,
      durationS: 3,
      toolVersion: "1.8.1",
      workDir: "/tmp/x",
      binary: "/bin/k6",
    });
    expect(prepared.argv).toEqual([
      "/bin/k6",
      "run",
      "--quiet",
      "--no-color",
      "--no-usage-report",
      "--address",
      "",
      "--summary-trend-stats",
      "min,avg,med,p(90),p(95),p(99),p(99.9),max,count",
      "script.js",
    ]);
    expect(prepared.outputs).toEqual(["summary.json"]);
    expect(JSON.parse(prepared.files["targets.json"] as string)).toEqual(targets);
    expect(prepared.files["script.js"]).toContain("targets[exec.scenario.iterationInTest % targets.length]");
  });

  test("k6 refusal names fractional rates, sub-second runs and missing VUs", () => {
    expect(tool.refusal(plan({ kind: "open", rateRps: 150 }))).toBeNull();
    expect(tool.refusal(plan({ kind: "open", rateRps: 12.5 }))).toBe(
      "k6 arrival rates are whole iterations per timeUnit: rate 12.5 rps is not a non-negative integer",
    );
    expect(tool.refusal(plan({ kind: "open", rateRps: 0 }))).toBe(
      "k6 constant-arrival-rate needs a rate above 0",
    );
    expect(tool.refusal(plan({ kind: "closed", connections: 4 }, { durationS: 0.5 }))).toBe(
      "k6 constant-* executors run at least 1 s: durationS 0.5",
    );
    expect(tool.refusal(plan({ kind: "open", rateRps: 10 }, { maxConnections: 0 }))).toContain(
      "k6 maxVUs comes from maxConnections",
    );
    expect(tool.refusal(plan({ kind: "ramping", startRps: 10, stages: [] }))).toBe(
      "k6 ramping-arrival-rate needs at least one stage",
    );
  });
});

describe("k6 against the real server", () => {
  let server: TestServer;
  let detection: Detection;

  beforeAll(async () => {
    server = await startTestServer("k6");
    detection = await tool.detect();
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** Runs the plan once for `durationS` and returns the result with the server's request count delta. */
  async function run(attack: AttackPlan, label: string, durationS = attack.durationS) {
    const { run: toolRun, targets, served } = await server.run(tool, attack, { durationS, label, detection });
    // Replay is in order, so the targets sent are exactly 0..requests−1 (wrapping).
    const sent = replayed(targets, toolRun.result.requests ?? 0);
    return { result: toolRun.result, served, sent };
  }

  test("k6 detect finds the pinned binary", () => {
    expect(detection).toMatchObject({ installed: true, version: "1.8.1" });
    expect(detection.path).toEndWith("/k6");
  });

  test("k6 open plan completes every request it sends, at the offered rate, with exact 404s", async () => {
    const attack = plan({ kind: "open", rateRps: 150 }, { baseUrl: server.url });
    const { result, served, sent } = await run(attack, "open");
    expect(result.completed).toBe(served);
    expect(result.requests).toBe(result.completed);
    expect(Object.values(result.statusCounts ?? {}).reduce((a, b) => a + b, 0)).toBe(
      result.completed as number,
    );
    expect(result.statusCounts).toEqual({ "200": sent.length - notFound(sent), "404": notFound(sent) });
    expect(result.errorCounts).toEqual({});
    expect(result.droppedOrAborted).toBe(0);
    expect(result.offeredRps).toBe(150);
    expect(Math.abs((result.achievedRps as number) / 150 - 1)).toBeLessThan(0.02);
    expect(result.latencyMs.p99_9).toBeGreaterThan(0);
  });

  test("k6 closed plan replays the targets in order across its VUs", async () => {
    const attack = plan({ kind: "closed", connections: 4 }, { baseUrl: server.url });
    const { result, served, sent } = await run(attack, "closed");
    // gracefulStop lets the last iterations finish, so nothing is left in flight.
    expect(result.completed).toBe(served);
    expect(result.statusCounts).toEqual({ "200": sent.length - notFound(sent), "404": notFound(sent) });
    expect(result.errorCounts).toEqual({});
    expect(result.droppedOrAborted).toBeNull();
    expect(result.offeredRps).toBeNull();
    expect(result.durationS).toBeGreaterThanOrEqual(2);
  });

  test("k6 ramping plan follows its stages, and its warm-up holds the start rate", async () => {
    const ramping = plan(
      { kind: "ramping", startRps: 50, stages: [{ targetRps: 150, durationS: 2 }] },
      { baseUrl: server.url, warmupS: 1 },
    );
    const warmup = await run(ramping, "ramping-warmup", ramping.warmupS);
    expect(warmup.result).toMatchObject({ model: "open", offeredRps: 50, droppedOrAborted: 0 });
    expect(warmup.result.completed).toBe(warmup.served);
    const measured = await run(ramping, "ramping");
    expect(measured.result).toMatchObject({ model: "ramping", offeredRps: 100, droppedOrAborted: 0 });
    expect(measured.result.completed).toBe(measured.served);
    expect(Math.abs((measured.result.achievedRps as number) / 100 - 1)).toBeLessThan(0.02);
  });

  test("k6 PUT mix sends JSON bodies that the server answers with 200 and applies", async () => {
    const attack = plan({ kind: "open", rateRps: 100 }, { baseUrl: server.url, requests: [DETAIL, STOCK] });
    await server.restoringPutRows(generateTargets(attack), async (sql, saved) => {
      const { result, served, sent } = await run(attack, "put-mix");
      expect(result.completed).toBe(served);
      expect(result.statusCounts).toEqual({ "200": sent.length - notFound(sent), "404": notFound(sent) });
      const puts = sent.filter((target) => target.method === "PUT" && (target.key as number) <= ROWS);
      expect(puts.length).toBeGreaterThan(5);
      // A key PUT once in the run holds exactly the stock that was sent, one version up.
      const once = puts.find((put) => puts.filter((other) => other.key === put.key).length === 1) as Target;
      const [row] = await sql<{ stock: number; version: number }[]>`
        select stock, version from products where id = ${once.key as number}`;
      const before = saved.find((s) => s.id === once.key);
      expect(row).toEqual({
        stock: JSON.parse(once.body as string).stock,
        version: (before?.version as number) + 1,
      });
    });
  });
});
