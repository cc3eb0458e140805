import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel, Target } from "../../plan/plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { runTool } from "../attack.ts";
import type { TestServer } from "./_fixture.ts";
import {
  capturedRun,
  DETAIL,
  editedJson,
  notFound,
  ROWS,
  SMALL_PLAN,
  STOCK,
  startTestServer,
  testPlan,
} from "./_fixture.ts";
import type { Detection, RawOutput, RunContext } from "./_tool.ts";
import { tool } from "./autocannon.ts";
import { type RunnerConfig, type RunnerOutput, stripe } from "./autocannon_runner.ts";

function plan(model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return testPlan(model, {
    name: "autocannon-test",
    ...SMALL_PLAN,
    requests: [DETAIL, STOCK],
    maxConnections: 4,
    ...overrides,
  });
}

/** A captured run: the runner's result file, with the context it was run in. */
function captured(name: string): { raw: RawOutput; context: RunContext } {
  return capturedRun(`autocannon-9.0.0-${name}`, "result.json");
}

/** The captured normal result with the runner's output edited. */
function edited(edit: (output: RunnerOutput) => void): RawOutput {
  return editedJson(captured("normal").raw, { file: "result.json", edit });
}

describe("autocannon parse", () => {
  test("autocannon parse reads a normal closed run exactly, with integer ms and no p95", () => {
    const { raw, context } = captured("normal");
    expect(tool.parse(raw, context)).toEqual({
      tool: "autocannon",
      toolVersion: "9.0.0",
      model: "closed",
      offeredRps: null,
      requests: 13_065,
      completed: 13_061,
      ok: 11_889,
      statusCounts: { "200": 11_889, "404": 1_172 },
      errorCounts: {},
      droppedOrAborted: null,
      achievedRps: 13_061 / 2.02,
      okRps: 11_889 / 2.02,
      // autocannon's own latency.min is 1 here (HdrHistogram minNonZeroValue) although p50 is 0.
      latencyMs: { min: 0, mean: 0.32, p50: 0, p90: 1, p95: null, p99: 4, p99_9: 8, max: 33 },
      bytesIn: 4_019_890,
      durationS: 2.02,
      drainS: null,
      sent: { kind: "stripes", counts: expect.any(Array) },
    });
  });

  test("autocannon parse counts statuses, refused connections, timeouts and lost requests of an error-heavy run", () => {
    const { raw, context } = captured("errors");
    const result = tool.parse(raw, context);
    expect(result.statusCounts).toEqual({ "200": 104, "400": 38, "404": 14 });
    expect(result.completed).toBe(156);
    expect(result.ok).toBe(104);
    // After the kill every connection reconnects at once, again and again: 55 945 refusals in 1.5 s. The
    // request each of the 8 connections had in flight at the kill is no error to autocannon.
    expect(result.errorCounts).toEqual({
      "request timed out": 8,
      ECONNRESET: 1,
      ECONNREFUSED: 55_945,
      "connection closed with the request in flight (autocannon counts no error)": 8,
    });
    expect(result.requests).toBe(56_126);
    expect(result.durationS).toBe(3.02);
    expect(result.achievedRps).toBe(156 / 3.02);
    expect(result.latencyMs).toEqual({
      min: 0,
      mean: 0.72,
      p50: 0,
      p90: 2,
      p95: null,
      p99: 11,
      p99_9: 12,
      max: 12,
    });
    expect(result.bytesIn).toBe(22_064);
    expect(result.droppedOrAborted).toBeNull();
  });

  test("autocannon parse drops the latency of connections that lost a request, whose timings are stale", () => {
    const { raw, context } = captured("drops");
    const output = JSON.parse(raw.outputs["result.json"] as string) as RunnerOutput;
    // autocannon's own figures for a server that always answers in 20 ms: p50 61, p99 650.
    expect(output.result.latency).toMatchObject({ min: 20, p50: 61, p99: 650 });
    expect(output.connections.map((c) => [c.lost, c.staleResponses])).toEqual([
      [4, 28],
      [2, 67],
    ]);
    const result = tool.parse(raw, context);
    expect(result.completed).toBe(100);
    expect(result.requests).toBe(108);
    expect(result.errorCounts).toEqual({
      "connection closed with the request in flight (autocannon counts no error)": 6,
    });
    expect(Object.values(result.latencyMs).every((value) => value === null)).toBe(true);
  });

  test("autocannon parse reports no latency, not 0 ms, when nothing was answered", () => {
    const { context } = captured("normal");
    const raw = edited((output) => {
      const result = output.result as { latency: Record<string, number>; requests: { total: number } };
      result.latency = { ...result.latency, totalCount: 0, min: 0, p50: 0 };
      result.requests.total = 0;
      output.result.statusCodeStats = {};
    });
    const result = tool.parse(raw, context);
    expect(result.completed).toBe(0);
    expect(Object.values(result.latencyMs).every((value) => value === null)).toBe(true);
  });

  test("autocannon parse throws, naming what is missing, instead of returning zeros", () => {
    const { raw, context } = captured("normal");
    expect(() => tool.parse({ ...raw, outputs: {}, exitCode: 1, stderr: "boom" }, context)).toThrow(
      "Cannot parse autocannon output: result.json was not written (exit code 1):\nboom",
    );
    expect(() => tool.parse({ ...raw, outputs: { "result.json": "[" } }, context)).toThrow(
      "result.json is not JSON",
    );
    const noConnections = edited((output) => {
      output.connections = [];
    });
    expect(() => tool.parse(noConnections, context)).toThrow("result.json has no per-connection counts");
    const noDuration = edited((output) => {
      delete output.result.duration;
    });
    expect(() => tool.parse(noDuration, context)).toThrow("no number at result.duration");
    const lostErrors = edited((output) => {
      output.result.errors = 3;
    });
    expect(() => tool.parse(lostErrors, context)).toThrow("errorCounts do not sum to result.errors (3)");
    const lostStatus = edited((output) => {
      output.result.statusCodeStats = { "200": { count: 1 } };
    });
    expect(() => tool.parse(lostStatus, context)).toThrow(
      "statusCodeStats sum to 1 but requests.total is 13061",
    );
  });
});

describe("autocannon prepare and refusal", () => {
  test("autocannon refuses open and ramping plans, saying why", () => {
    expect(tool.refusal(plan({ kind: "closed", connections: 4 }))).toBeNull();
    const open = tool.refusal(plan({ kind: "open", rateRps: 100 }));
    expect(open).toStartWith("autocannon has no open model: its rate option (-R/overallRate) only caps");
    expect(open).toContain("back-fills synthetic samples");
    expect(
      tool.refusal(plan({ kind: "ramping", startRps: 1, stages: [{ targetRps: 5, durationS: 2 }] })),
    ).toStartWith("autocannon has no ramping model");
  });

  test("autocannon refuses what it would silently change: part seconds, sub-second timeouts, few targets", () => {
    const closed: LoadModel = { kind: "closed", connections: 4 };
    expect(tool.refusal(plan(closed, { durationS: 2.5 }))).toBe(
      "autocannon stops on its 1 s sampling tick, so it runs whole seconds only: received durationS 2.5",
    );
    expect(tool.refusal(plan(closed, { warmupS: 0.5 }))).toContain("received warmupS 0.5");
    expect(tool.refusal(plan(closed, { timeoutS: 0.5 }))).toBe(
      "autocannon timeouts are at least 1 s: received timeoutS 0.5",
    );
    expect(tool.refusal(plan(closed, { targetCount: 3 }))).toContain("targetCount 3 < 4 connections");
  });

  test("autocannon runTool rejects an open plan with the refusal before running anything", async () => {
    const detection = await tool.detect();
    const open = plan({ kind: "open", rateRps: 100 });
    await expect(
      runTool(tool, open, { targets: [], durationS: 2, workDir: "/nonexistent", label: "x", detection }),
    ).rejects.toThrow("Cannot run autocannon: autocannon has no open model");
  });

  test("autocannon prepare writes paths, bodies and the runner's argv", () => {
    const closed = plan(
      { kind: "closed", connections: 4 },
      { baseUrl: "http://127.0.0.1:3000/", headers: { a: "b" } },
    );
    const targets = generateTargets(closed);
    const prepared = tool.prepare(targets, {
      plan: closed,
      durationS: 3,
      toolVersion: "9.0.0",
      workDir: "/tmp/x",
      binary: "/repo/lab/tools/autocannon_runner.ts",
    });
    expect(prepared.argv).toEqual([
      process.execPath,
      "/repo/lab/tools/autocannon_runner.ts",
      "config.json",
      "result.json",
    ]);
    expect(prepared.outputs).toEqual(["result.json"]);
    const config = JSON.parse(prepared.files["config.json"] as string) as RunnerConfig;
    expect(config).toMatchObject({
      url: "http://127.0.0.1:3000",
      connections: 4,
      durationS: 3,
      timeoutS: 2,
      headers: { a: "b" },
    });
    const put = targets.findIndex((target) => target.method === "PUT");
    expect(config.requests[put]).toEqual({
      method: "PUT",
      path: `/products/${targets[put]?.key}`,
      body: targets[put]?.body as string,
    });
  });

  test("autocannon stripe gives connection i the targets i, i+C, i+2C, …", () => {
    const items = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    expect(stripe(items, 4, 0)).toEqual([0, 4, 8]);
    expect(stripe(items, 4, 1)).toEqual([1, 5, 9]);
    expect(stripe(items, 4, 3)).toEqual([3, 7]);
  });
});

describe("autocannon against the real server", () => {
  let server: TestServer;
  let detection: Detection;

  beforeAll(async () => {
    server = await startTestServer("autocannon");
    detection = await tool.detect();
  });
  afterAll(async () => {
    await server?.stop();
  });

  test("autocannon detect finds the npm dependency and the runner", () => {
    expect(detection).toMatchObject({ installed: true, version: "9.0.0", install: "bun install" });
    expect(detection.path).toEndWith("lab/load/tools/autocannon_runner.ts");
  });

  test("autocannon closed plan with a PUT mix: every response counted, statuses exact per connection", async () => {
    const connections = 4;
    const attack = plan({ kind: "closed", connections }, { baseUrl: server.url });
    const targets = generateTargets(attack);
    await server.restoringPutRows(targets, async () => {
      const { run, served } = await server.run(tool, attack, {
        targets,
        durationS: 2,
        label: "closed",
        detection,
      });
      const { result } = run;
      // Only the request each connection had in flight at the cut-off reached the server uncounted.
      expect(served - (result.completed as number)).toBeGreaterThanOrEqual(0);
      expect(served - (result.completed as number)).toBeLessThanOrEqual(connections);
      expect(Object.values(result.statusCounts ?? {}).reduce((a, b) => a + b, 0)).toBe(
        result.completed as number,
      );
      expect(result.errorCounts).toEqual({});
      expect(result.durationS).toBeGreaterThanOrEqual(2);
      expect(result.durationS).toBeLessThan(2.5);
      // Each connection answered its stripe in order, wrapping: rebuild exactly which targets were answered.
      const output = JSON.parse(run.raw.outputs["result.json"] as string) as RunnerOutput;
      const answered: Target[] = output.connections.flatMap((connection, i) => {
        const share = stripe(targets, connections, i);
        return Array.from({ length: connection.responses }, (_, j) => share[j % share.length] as Target);
      });
      expect(answered.length).toBe(result.completed as number);
      expect(output.connections.every((c) => c.lost === 0 && c.staleResponses === 0)).toBe(true);
      const missing = notFound(answered);
      expect(result.statusCounts).toEqual({ "200": answered.length - missing, "404": missing });
      expect(answered.some((target) => target.method === "PUT" && (target.key as number) <= ROWS)).toBe(true);
    });
  });
});
