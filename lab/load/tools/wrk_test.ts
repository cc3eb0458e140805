import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel, Target } from "../../plan/attack_plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { eventually } from "../../shared/testing.ts";
import { runTool } from "../run_attack.ts";
import type { RawOutput } from "../tool.ts";
import type { TestServer } from "./tool_testing.ts";
import { expectedStatus, GET_AND_BAD_PUT, startTestServer, testdata, testPlan } from "./tool_testing.ts";
import { tool, type WrkThreadCounts, wrkThreads } from "./wrk.ts";

function plan(model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return testPlan(model, { name: "wrk-test", requests: GET_AND_BAD_PUT, ...overrides });
}

function captured(name: string): RawOutput {
  const text = testdata(`wrk-4.1.0-closed-${name}.json`);
  return { stdout: "", stderr: "", exitCode: 0, outputs: { "wrk.json": text } };
}

const CLOSED_4 = { plan: plan({ kind: "closed", connections: 4 }), durationS: 2, toolVersion: "4.1.0" };

describe("wrk parse", () => {
  test("wrk parse reads a normal closed run exactly, µs to ms", () => {
    const result = tool.parse(captured("normal"), CLOSED_4);
    expect(result).toMatchObject({
      tool: "wrk",
      toolVersion: "4.1.0",
      model: "closed",
      offeredRps: null,
      requests: 65_312,
      completed: 65_310,
      ok: 54_955,
      statusCounts: { "200": 54_955, "400": 6_133, "404": 4_222 },
      errorCounts: {},
      droppedOrAborted: null,
      bytesIn: 19_551_590,
      durationS: 2.095325,
      // No per-request output: the caller uses the server's per-second counters instead.
      timeline: null,
    });
    expect(tool.capabilities.timeline).toBe(false);
    expect(result.achievedRps).toBeCloseTo(65_310 / 2.095325, 9);
    expect(result.okRps).toBeCloseTo(54_955 / 2.095325, 9);
    expect(result.latencyMs).toEqual({
      min: 0.012,
      mean: 0.4293468485948551, // 429.34684859485509 µs as wrk.json prints it (%.17g)
      p50: 0.088,
      p90: 0.522,
      p95: 1.4,
      p99: 7.251,
      p99_9: 29.728,
      max: 39.84,
    });
  });

  test("wrk parse keeps wrk's error kinds and counts slow responses as completed", () => {
    const result = tool.parse(captured("errors"), { ...CLOSED_4, durationS: 3 });
    expect(result.requests).toBe(51_680 + 43_907);
    expect(result.completed).toBe(271);
    expect(result.ok).toBe(214);
    expect(result.statusCounts).toEqual({ "200": 214, "400": 34, "404": 23 });
    expect(result.errorCounts).toEqual({ read: 12, write: 95_304, timeout: 8 });
    expect(result.durationS).toBe(3.092067);
    expect(result.latencyMs.p95).toBe(2.712);
    expect(result.latencyMs.max).toBe(6.636);
  });

  test("wrk parse throws, naming wrk, on missing or inconsistent output", () => {
    const base = captured("normal");
    expect(() => tool.parse({ ...base, outputs: {}, stderr: "wrk.lua: syntax error" }, CLOSED_4)).toThrow(
      /Cannot parse wrk output: wrk\.json \(written by the script's done\(\)\) is missing.*syntax error/,
    );
    const json = JSON.parse(base.outputs["wrk.json"] as string);
    json.statuses["200"] -= 1;
    expect(() => tool.parse({ ...base, outputs: { "wrk.json": JSON.stringify(json) } }, CLOSED_4)).toThrow(
      "the response() hook counted 65309 statuses but wrk counts 65310 requests",
    );
    expect(() => tool.parse({ ...base, outputs: { "wrk.json": "Running 2s test" } }, CLOSED_4)).toThrow(
      /not JSON/,
    );
  });
});

describe("wrk refusal and prepare", () => {
  test("wrk refuses open and ramping plans", () => {
    expect(tool.refusal(plan({ kind: "open", rateRps: 100 }))).toBe(
      "wrk has no open model; use wrk2/oha/vegeta/k6",
    );
    expect(
      tool.refusal(plan({ kind: "ramping", startRps: 1, stages: [{ targetRps: 9, durationS: 2 }] })),
    ).toBe("wrk has no open model; use wrk2/oha/vegeta/k6");
  });

  test("wrk refuses durations and timeouts that are not whole seconds", () => {
    expect(tool.refusal(plan({ kind: "closed", connections: 2 }, { durationS: 1.5 }))).toBe(
      "wrk takes whole seconds (-d, --timeout): durationS must be an integer >= 1: received 1.5",
    );
    expect(tool.refusal(plan({ kind: "closed", connections: 2 }, { timeoutS: 0.5 }))).toMatch(
      /timeoutS must be an integer/,
    );
    expect(tool.refusal(plan({ kind: "closed", connections: 2 }))).toBeNull();
  });

  test("wrk threads divide the connections evenly, at most one per CPU", () => {
    expect(wrkThreads(4, 2)).toBe(2);
    expect(wrkThreads(5, 2)).toBe(1);
    expect(wrkThreads(6, 4)).toBe(3);
    expect(wrkThreads(8, 16)).toBe(8);
    expect(wrkThreads(1, 2)).toBe(1);
  });

  test("wrk prepare writes the Lua script, hex bodies and an argv using the run's duration", () => {
    const closed = plan({ kind: "closed", connections: 6 }, { durationS: 30, timeoutS: 3 });
    const targets = generateTargets(closed);
    const prepared = tool.prepare(targets, {
      plan: closed,
      durationS: 2,
      toolVersion: "4.1.0",
      workDir: "/tmp",
      binary: "/usr/bin/wrk",
    });
    const threads = wrkThreads(6);
    expect(prepared.argv).toEqual([
      "/usr/bin/wrk",
      "-t",
      String(threads),
      "-c",
      "6",
      "-d",
      "2s",
      "--timeout",
      "3s",
      "-s",
      "wrk.lua",
      "http://127.0.0.1:3000",
    ]);
    expect(prepared.files["wrk.lua"]).toContain(`local THREADS = ${threads}`);
    const lines = (prepared.files["wrk-targets.tsv"] as string).trimEnd().split("\n");
    const put = targets.findIndex((target) => target.method === "PUT");
    expect(lines[put]).toBe(
      `PUT\t${new URL((targets[put] as Target).url).pathname}\t${Buffer.from((targets[put] as Target).body as string).toString("hex")}`,
    );
    expect(prepared.outputs).toEqual(["wrk.json"]);
  });
});

describe("wrk against the real server", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer("wrk");
  });
  afterAll(async () => {
    await server?.stop();
  });

  test("wrk closed run: threads walk the targets in plan order and every status is accounted for", async () => {
    const detection = await tool.detect();
    expect(detection.version, `wrk 4.1.0 expected; install: ${detection.install}`).toBe("4.1.0");
    // A header with a quote and a backslash checks the script's Lua string escaping end to end.
    const closed = plan(
      { kind: "closed", connections: 4 },
      { baseUrl: server.url, headers: { accept: "application/json", "x-note": 'a "quoted" \\ value' } },
    );
    const targets = generateTargets(closed);
    const before = await server.requestCount();
    const run = await runTool(tool, closed, {
      targets,
      durationS: 2,
      workDir: server.workDir,
      label: "closed",
      detection,
    });
    const result = run.result;
    expect(result.errorCounts).toEqual({});
    // wrk has no per-request output: no timeline, never an empty or made-up one.
    expect(result.timeline).toBeNull();
    const requests = result.requests as number;
    const completed = result.completed as number;
    // Requests written before wrk stopped reach the server even though wrk never reads their answers.
    expect(await eventually(async () => (await server.requestCount()) - before === requests)).toBe(true);
    expect(requests - completed).toBeGreaterThanOrEqual(0);
    expect(requests - completed).toBeLessThanOrEqual(4);
    const statuses = result.statusCounts ?? {};
    expect(Object.values(statuses).reduce((a, b) => a + b, 0)).toBe(completed);
    expect(result.ok).toBe(statuses["200"] as number);

    // Thread k of T sent targets k, k+T, k+2T, …; its answers are those minus the ones still in flight.
    const threads = JSON.parse(run.raw.outputs["wrk.json"] as string).threads as WrkThreadCounts[];
    const perThreadConnections = 4 / threads.length;
    threads.forEach((thread, k) => {
      const expected: Record<string, number> = {};
      for (let i = 0; i < thread.issued; i++) {
        const key = expectedStatus(targets[(k + i * threads.length) % targets.length] as Target);
        expected[key] = (expected[key] ?? 0) + 1;
      }
      const answered = Object.values(thread.statuses).reduce((a, b) => a + b, 0);
      const inFlight = thread.issued - answered;
      expect(inFlight).toBeGreaterThanOrEqual(0);
      expect(inFlight).toBeLessThanOrEqual(perThreadConnections);
      for (const [code, n] of Object.entries(expected)) {
        const got = thread.statuses[code] ?? 0;
        expect(got).toBeLessThanOrEqual(n);
        expect(got).toBeGreaterThanOrEqual(n - inFlight);
      }
      expect(Object.keys(thread.statuses).every((code) => code in expected)).toBe(true);
    });
    expect(result.latencyMs.p50 as number).toBeLessThanOrEqual(result.latencyMs.p99 as number);
    expect(result.durationS as number).toBeGreaterThanOrEqual(2);
  });

  test("wrk runTool refuses an open plan before starting", async () => {
    const detection = await tool.detect();
    const open = plan({ kind: "open", rateRps: 100 }, { baseUrl: server.url });
    await expect(
      runTool(tool, open, {
        targets: generateTargets(open),
        durationS: 2,
        workDir: server.workDir,
        label: "refused",
        detection,
      }),
    ).rejects.toThrow("Cannot run wrk: wrk has no open model; use wrk2/oha/vegeta/k6");
  });
});
