import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel, Target } from "../../plan/attack_plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { timelineTotals } from "../request_timeline.ts";
import { runTool } from "../run_attack.ts";
import type { Detection, RawOutput, RunContext } from "../tool.ts";
import { tool } from "./autocannon.ts";
import { type RunnerConfig, type RunnerOutput, stripe } from "./autocannon_runner.ts";
import type { TestServer } from "./tool_testing.ts";
import {
  capturedRun,
  DETAIL,
  editedJson,
  expectTimeline,
  notFound,
  ROWS,
  SMALL_PLAN,
  STOCK,
  startTestServer,
  testPlan,
} from "./tool_testing.ts";

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
      requests: 30_565,
      completed: 30_561,
      ok: 27_824,
      statusCounts: { "200": 27_824, "404": 2_737 },
      errorCounts: {},
      droppedOrAborted: null,
      achievedRps: 30_561 / 2.01,
      okRps: 27_824 / 2.01,
      // autocannon's own latency.min is 1 here (HdrHistogram minNonZeroValue) although p50 is 0.
      latencyMs: { min: 0, mean: 0.08, p50: 0, p90: 0, p95: null, p99: 2, p99_9: 5, max: 11 },
      bytesIn: 9_408_327,
      durationS: 2.01,
      drainS: null,
      sent: { kind: "stripes", counts: [7_555, 7_211, 7_686, 8_113] },
      // Every request written, in the second it started; the timeline's latencies are the float ms of
      // autocannon's per-response events, not its integer-ms histogram.
      timeline: {
        source: expect.stringMatching(/^autocannon per-request events/),
        seconds: [
          { epochS: 1_796_090_866, sent: 7_622, ok: 6_933, errors: 689, p50Ms: 0.115312, p99Ms: 3.252 },
          {
            epochS: 1_796_090_867,
            sent: 16_444,
            ok: 14_975,
            errors: 1_469,
            p50Ms: 0.112488,
            p99Ms: 1.906293,
          },
          { epochS: 1_796_090_868, sent: 6_499, ok: 5_916, errors: 579, p50Ms: 0.112157, p99Ms: 1.571604 },
        ],
      },
    });
  });

  test("autocannon parse counts statuses, refused connections, timeouts and lost requests of an error-heavy run", () => {
    const { raw, context } = captured("errors");
    const result = tool.parse(raw, context);
    expect(result.statusCounts).toEqual({ "200": 104, "400": 38, "404": 14 });
    expect(result.completed).toBe(156);
    expect(result.ok).toBe(104);
    // After the kill every connection reconnects at once, again and again: 58 147 refusals in 1.5 s. The
    // request each of the 8 connections had in flight at the kill is no error to autocannon.
    expect(result.errorCounts).toEqual({
      "request timed out": 8,
      ECONNRESET: 1,
      ECONNREFUSED: 58_147,
      "connection closed with the request in flight (autocannon counts no error)": 8,
    });
    expect(result.requests).toBe(58_328);
    expect(result.durationS).toBe(3.01);
    expect(result.achievedRps).toBe(156 / 3.01);
    expect(result.latencyMs).toEqual({
      min: 0,
      mean: 0.44,
      p50: 0,
      p90: 1,
      p95: null,
      p99: 6,
      p99_9: 7,
      max: 7,
    });
    expect(result.bytesIn).toBe(21_108);
    expect(result.droppedOrAborted).toBeNull();
    // The refusal storm after the kill fills the last seconds with errors (no latency); the 8 requests in
    // flight at the cut-off are sent, neither ok nor errors; the timeouts count where they were sent.
    expect(result.timeline?.seconds).toEqual([
      { epochS: 1_796_090_868, sent: 85, ok: 55, errors: 30, p50Ms: 0.332276, p99Ms: 7.250305 },
      { epochS: 1_796_090_869, sent: 2_262, ok: 49, errors: 2_213, p50Ms: 0.168862, p99Ms: 2.502031 },
      { epochS: 1_796_090_870, sent: 36_771, ok: 0, errors: 36_771, p50Ms: null, p99Ms: null },
      { epochS: 1_796_090_871, sent: 19_210, ok: 0, errors: 19_202, p50Ms: null, p99Ms: null },
    ]);
  });

  test("autocannon parse drops the latency of connections that lost a request, whose timings are stale", () => {
    const { raw, context } = captured("drops");
    const output = JSON.parse(raw.outputs["result.json"] as string) as RunnerOutput;
    // autocannon's own figures for a server that always answers in 20 ms: p50 61, p99 650.
    expect(output.result.latency).toMatchObject({ min: 20, p50: 61, p99: 647 });
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
    // The timeline too has no latency once a connection's timings went stale; the 6 lost requests count
    // as errors where they were written, the 2 in flight at the cut-off as sent only.
    expect(result.timeline?.seconds).toEqual([
      { epochS: 1_796_090_871, sent: 11, ok: 9, errors: 2, p50Ms: 20.65728, p99Ms: 25.720782 },
      { epochS: 1_796_090_872, sent: 52, ok: 48, errors: 4, p50Ms: null, p99Ms: null },
      { epochS: 1_796_090_873, sent: 45, ok: 43, errors: 0, p50Ms: null, p99Ms: null },
    ]);
  });

  test("autocannon parse throws when the runner's timeline does not add up to the run", () => {
    const { context } = captured("normal");
    const edit = (change: (second: Record<string, unknown>) => void) =>
      edited((output) => {
        change(output.timeline.seconds[1] as unknown as Record<string, unknown>);
      });
    expect(() =>
      tool.parse(
        edit((second) => (second.sent = 16_443)),
        context,
      ),
    ).toThrow("Σ sent is 30564, the run's count 30565");
    expect(() =>
      tool.parse(
        edit((second) => (second.ok = 14_974)),
        context,
      ),
    ).toThrow("Σ ok is 27823, the 2xx responses 27824");
    expect(() =>
      tool.parse(
        edit((second) => (second.epochS = 1_796_090_869)),
        context,
      ),
    ).toThrow("does not follow");
    expect(() =>
      tool.parse(
        edit((second) => (second.errors = null)),
        context,
      ),
    ).toThrow("timeline.seconds[1].errors is not a count");
    expect(() =>
      tool.parse(
        edited((output) => {
          delete (output as { timeline?: unknown }).timeline;
        }),
        context,
      ),
    ).toThrow("result.json timeline is not an object");
  });

  test("autocannon parse reports no latency, not 0 ms, when nothing was answered", () => {
    const { context } = captured("normal");
    const raw = edited((output) => {
      const result = output.result as { latency: Record<string, number>; requests: { total: number } };
      result.latency = { ...result.latency, totalCount: 0, min: 0, p50: 0 };
      result.requests.total = 0;
      output.result.statusCodeStats = {};
      // Every request still in flight: sent, neither ok nor an error.
      const second = { epochS: 1_796_090_866, sent: 30_565, ok: 0, errors: 0, p50Ms: null, p99Ms: null };
      output.timeline = { ...output.timeline, seconds: [second] };
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
      "statusCodeStats sum to 1 but requests.total is 30561",
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
      const { run, served, fromMs, toMs } = await server.run(tool, attack, {
        targets,
        durationS: 2,
        label: "closed",
        detection,
      });
      const { result } = run;
      // Every request written, answered or still in flight at the cut-off, in the second it started.
      const timeline = expectTimeline(result, { sent: result.requests as number, fromMs, toMs });
      expect(timelineTotals(timeline)).toEqual({
        sent: result.requests as number,
        ok: result.ok as number,
        errors: (result.completed as number) - (result.ok as number),
      });
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
