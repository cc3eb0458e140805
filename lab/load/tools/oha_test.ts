import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel } from "../../plan/plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { runTool } from "../attack.ts";
import type { TestServer } from "./_fixture.ts";
import { notFound, startTestServer, testdata, testPlan } from "./_fixture.ts";
import type { RawOutput } from "./_tool.ts";
import { tool } from "./oha.ts";

function plan(model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return testPlan(model, {
    name: "oha-test",
    requests: [{ name: "get", weight: 1, method: "GET", path: "/products/{id}" }],
    ...overrides,
  });
}

function captured(file: string): RawOutput {
  return { stdout: "", stderr: "", exitCode: 0, outputs: { "oha.json": testdata(file) } };
}

const OPEN_200 = { plan: plan({ kind: "open", rateRps: 200 }), durationS: 2, toolVersion: "1.15.0" };

describe("oha parse", () => {
  test("oha parse reads a normal open run exactly, in ms and s", () => {
    const result = tool.parse(captured("oha-1.15.0-open-normal.json"), OPEN_200);
    expect(result).toMatchObject({
      tool: "oha",
      toolVersion: "1.15.0",
      model: "open",
      offeredRps: 200,
      requests: 400,
      completed: 400,
      ok: 371,
      statusCounts: { "200": 371, "404": 29 },
      errorCounts: {},
      droppedOrAborted: 0,
      bytesIn: 80_606,
      // -z 2s is the send window; the rest of summary.total is -w waiting for the last responses.
      durationS: 2,
      sent: { kind: "sampled", count: 400 },
    });
    expect(result.drainS).toBeCloseTo(0.003259586, 9);
    expect(result.achievedRps).toBeCloseTo(400 / 2, 9);
    expect(result.okRps).toBeCloseTo(371 / 2, 9);
    expect(result.latencyMs.p99).toBeCloseTo(9.150926, 9);
    expect(result.latencyMs.p99_9).toBeCloseTo(13.048274, 9);
    expect(result.latencyMs.p50).toBeCloseTo(0.28917, 9);
    expect(result.latencyMs.min).toBeCloseTo(0.116974, 9);
    expect(result.latencyMs.mean).toBeCloseTo(0.72933712, 9);
    expect(result.latencyMs.max).toBeCloseTo(13.048274, 9);
  });

  test("oha parse counts statuses and transport errors of an error-heavy run, not 5xx-style success", () => {
    const result = tool.parse(captured("oha-1.15.0-open-errors.json"), OPEN_200);
    expect(result.statusCounts).toEqual({ "200": 345, "400": 35, "404": 34 });
    expect(result.completed).toBe(414);
    expect(result.ok).toBe(345);
    expect(result.errorCounts).toEqual({
      "Connection refused (os error 111)": 165,
      "connection closed before message completed": 10,
      "operation was canceled": 1,
      timeout: 10,
    });
    expect(result.requests).toBe(600);
    expect(result.droppedOrAborted).toBe(0);
    expect(result.durationS).toBe(2);
    expect(result.drainS).toBeCloseTo(1.001853484, 9);
    expect(result.achievedRps).toBeCloseTo(414 / 2, 9);
    expect(result.latencyMs.p95).toBeCloseTo(0.487658, 9);
  });

  test("oha parse reports deadline aborts as droppedOrAborted, not as errors", () => {
    const closed = { plan: plan({ kind: "closed", connections: 4 }), durationS: 2, toolVersion: "1.15.0" };
    const result = tool.parse(captured("oha-1.15.0-closed-no-wait.json"), closed);
    expect(result.droppedOrAborted).toBe(4);
    expect(result.errorCounts).toEqual({});
    expect(result.requests).toBe(59_524);
    expect(result.completed).toBe(59_520);
    expect(result.offeredRps).toBeNull();
    expect(result.latencyMs.p90).toBeCloseTo(0.229487, 9);
  });

  test("oha parse reports empty statistics as null, never 0", () => {
    const json = JSON.parse(testdata("oha-1.15.0-open-errors.json"));
    json.statusCodeDistribution = {};
    json.summary.fastest = json.summary.average = json.summary.slowest = null;
    for (const key of Object.keys(json.latencyPercentiles)) json.latencyPercentiles[key] = null;
    const result = tool.parse(
      { ...captured("oha-1.15.0-open-errors.json"), outputs: { "oha.json": JSON.stringify(json) } },
      OPEN_200,
    );
    expect(result.completed).toBe(0);
    expect(Object.values(result.latencyMs)).toEqual([null, null, null, null, null, null, null, null]);
  });

  test("oha parse throws, naming oha, when the output is missing or unreadable", () => {
    const base = captured("oha-1.15.0-open-normal.json");
    expect(() => tool.parse({ ...base, outputs: {}, stderr: "error: boom" }, OPEN_200)).toThrow(
      /Cannot parse oha output: oha\.json is missing.*boom/,
    );
    expect(() => tool.parse({ ...base, outputs: { "oha.json": "{" } }, OPEN_200)).toThrow(
      /oha\.json is not JSON/,
    );
    expect(() => tool.parse({ ...base, outputs: { "oha.json": "{}" } }, OPEN_200)).toThrow(
      /summary is not an object/,
    );
    expect(() => tool.parse({ ...base, exitCode: 1 }, OPEN_200)).toThrow(/did not exit with 0/);
  });
});

describe("oha refusal and prepare", () => {
  test("oha refuses a plan that mixes methods", () => {
    const mixed = plan(
      { kind: "open", rateRps: 100 },
      {
        requests: [
          { name: "get", weight: 9, method: "GET", path: "/products/{id}" },
          { name: "put", weight: 1, method: "PUT", path: "/products/{id}", body: '{"stock": 1}' },
        ],
      },
    );
    expect(tool.refusal(mixed)).toBe(
      "oha sends one method per run (-m) and picks URLs at random, so it cannot replay a mix of GET, PUT; use vegeta, k6 or wrk",
    );
  });

  test("oha refuses a body that varies per target but sends a constant one", () => {
    const put = (body: string) =>
      plan(
        { kind: "closed", connections: 2 },
        { requests: [{ name: "put", weight: 1, method: "PUT", path: "/products/{id}", body }] },
      );
    expect(tool.refusal(put('{"stock": {id}}'))).toMatch(/cannot be paired with its URL/);
    const constant = put('{"stock": 1}');
    expect(tool.refusal(constant)).toBeNull();
    const prepared = tool.prepare(generateTargets(constant), {
      plan: constant,
      durationS: 2,
      toolVersion: "1.15.0",
      workDir: "/tmp",
      binary: "oha",
    });
    expect(prepared.argv.join(" ")).toContain(
      "-m PUT -H accept: application/json -H content-type: application/json -D body.txt",
    );
    expect(prepared.files["body.txt"]).toBe('{"stock": 1}');
  });

  test("oha refuses ramping and a zero rate", () => {
    expect(
      tool.refusal(plan({ kind: "ramping", startRps: 10, stages: [{ targetRps: 20, durationS: 2 }] })),
    ).toMatch(/no ramping model/);
    expect(tool.refusal(plan({ kind: "open", rateRps: 0 }))).toMatch(/needs a rate > 0/);
  });

  test("oha prepare uses the run's duration, a timeout, -w and latency correction in the open model", () => {
    const open = plan({ kind: "open", rateRps: 150 }, { durationS: 30, timeoutS: 3, maxConnections: 64 });
    const prepared = tool.prepare(generateTargets(open), {
      plan: open,
      durationS: 2,
      toolVersion: "1.15.0",
      workDir: "/tmp",
      binary: "/bin/oha",
    });
    expect(prepared.argv).toEqual([
      "/bin/oha",
      "--no-tui",
      "--output-format",
      "json",
      "-o",
      "oha.json",
      "-z",
      "2s",
      "-w",
      "-t",
      "3s",
      "-r",
      "0",
      "-q",
      "150",
      "--latency-correction",
      "-c",
      "64",
      "-m",
      "GET",
      "-H",
      "accept: application/json",
      "--urls-from-file",
      "urls.txt",
    ]);
    expect(prepared.files["urls.txt"]?.split("\n").length).toBe(2_001);
    expect(prepared.outputs).toEqual(["oha.json"]);
  });
});

describe("oha against the real server", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer("oha");
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function attack(model: LoadModel, label: string) {
    const detection = await tool.detect();
    expect(detection.version, `oha 1.15.0 expected; install: ${detection.install}`).toBe("1.15.0");
    const attackPlan = plan(model, { baseUrl: server.url });
    const { run, targets, served } = await server.run(tool, attackPlan, { durationS: 2, label, detection });
    // Uniform keys over 1..2200 with 2000 rows: the share of targets oha can pick that answer 404.
    const notFoundShare = notFound(targets) / targets.length;
    return { run, delta: served, notFoundShare };
  }

  function expectPlausible404s(completed: number, notFound: number, share: number): void {
    const sd = Math.sqrt(completed * share * (1 - share));
    expect(Math.abs(notFound - completed * share)).toBeLessThanOrEqual(5 * sd);
  }

  test("oha open run: every request the server saw is counted and the rate holds", async () => {
    const { run, delta, notFoundShare } = await attack({ kind: "open", rateRps: 200 }, "open");
    const result = run.result;
    expect(result.errorCounts).toEqual({});
    expect(result.droppedOrAborted).toBe(0);
    expect(result.completed).toBe(delta);
    const statuses = result.statusCounts ?? {};
    expect(Object.keys(statuses).sort()).toEqual(["200", "404"]);
    expect(Object.values(statuses).reduce((a, b) => a + b, 0)).toBe(result.completed as number);
    expect(result.ok).toBe(statuses["200"] as number);
    expectPlausible404s(result.completed as number, statuses["404"] as number, notFoundShare);
    expect(Math.abs((result.achievedRps as number) - 200)).toBeLessThanOrEqual(200 * 0.02);
    expect(result.durationS).toBeGreaterThanOrEqual(2);
    expect(result.latencyMs.p50 as number).toBeLessThanOrEqual(result.latencyMs.p99 as number);
  });

  test("oha closed run: completed equals the server's count with 4 connections", async () => {
    const { run, delta, notFoundShare } = await attack({ kind: "closed", connections: 4 }, "closed");
    const result = run.result;
    expect(run.argv).toContain("-c");
    expect(result.errorCounts).toEqual({});
    expect(result.droppedOrAborted).toBe(0);
    expect(result.completed).toBe(delta);
    expect(result.offeredRps).toBeNull();
    const statuses = result.statusCounts ?? {};
    expect(Object.values(statuses).reduce((a, b) => a + b, 0)).toBe(result.completed as number);
    expectPlausible404s(result.completed as number, statuses["404"] as number, notFoundShare);
  });

  test("oha sends a constant body with its content-type", async () => {
    const detection = await tool.detect();
    // A valid update of an id with no row: 404 proves the JSON body and content-type arrived (else 400),
    // and no seeded row changes.
    const put = plan(
      { kind: "closed", connections: 2 },
      {
        baseUrl: server.url,
        durationS: 1,
        requests: [{ name: "put", weight: 1, method: "PUT", path: "/products/999999", body: '{"stock": 1}' }],
      },
    );
    const run = await runTool(tool, put, {
      targets: generateTargets(put),
      durationS: 1,
      workDir: server.workDir,
      label: "put",
      detection,
    });
    expect(run.result.errorCounts).toEqual({});
    expect(Object.keys(run.result.statusCounts ?? {})).toEqual(["404"]);
    expect(run.result.ok).toBe(0);
  });

  test("oha runTool refuses a mixed-method plan before starting", async () => {
    const detection = await tool.detect();
    const mixed = plan(
      { kind: "closed", connections: 2 },
      {
        baseUrl: server.url,
        requests: [
          { name: "get", weight: 1, method: "GET", path: "/products/{id}" },
          { name: "delete", weight: 1, method: "DELETE", path: "/products/{id}" },
        ],
      },
    );
    await expect(
      runTool(tool, mixed, {
        targets: generateTargets(mixed),
        durationS: 2,
        workDir: server.workDir,
        label: "refused",
        detection,
      }),
    ).rejects.toThrow("Cannot run oha: oha sends one method per run");
  });
});
