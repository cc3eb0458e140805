import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel } from "../../plan/attack_plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { timelineTotals } from "../request_timeline.ts";
import { runTool } from "../run_attack.ts";
import type { RawOutput } from "../tool.ts";
import { tool } from "./oha.ts";
import type { TestServer } from "./tool_testing.ts";
import { expectTimeline, notFound, startTestServer, testdata, testPlan } from "./tool_testing.ts";

function plan(model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return testPlan(model, {
    name: "oha-test",
    requests: [{ name: "get", weight: 1, method: "GET", path: "/products/{id}" }],
    ...overrides,
  });
}

/** A captured run through oha_runner.ts: oha's JSON, its db rows as text, and its start mark. */
function captured(name: string): RawOutput {
  const file = (suffix: string) => testdata(`oha-1.15.0-${name}.${suffix}`);
  return {
    stdout: "",
    stderr: "Storing results to oha.db\n",
    exitCode: 0,
    outputs: {
      "oha.json": file("json"),
      "oha-requests.csv": file("requests.csv"),
      "oha-start.json": file("start.json"),
    },
  };
}

/** `raw` with output `name` replaced. */
function withOutput(raw: RawOutput, name: string, text: string): RawOutput {
  return { ...raw, outputs: { ...raw.outputs, [name]: text } };
}

const OPEN_100 = { plan: plan({ kind: "open", rateRps: 100 }), durationS: 2, toolVersion: "1.15.0" };

describe("oha parse", () => {
  test("oha parse reads a normal open run exactly, in ms and s", () => {
    const result = tool.parse(captured("open-normal"), OPEN_100);
    expect(result).toMatchObject({
      tool: "oha",
      toolVersion: "1.15.0",
      model: "open",
      offeredRps: 100,
      requests: 200,
      completed: 200,
      ok: 186,
      statusCounts: { "200": 186, "404": 14 },
      errorCounts: {},
      droppedOrAborted: 0,
      bytesIn: 40_421,
      // -z 2s is the send window; the rest of summary.total is -w waiting for the last responses.
      durationS: 2,
      sent: { kind: "sampled", count: 200 },
    });
    expect(result.drainS).toBeCloseTo(0.002176708, 9);
    expect(result.achievedRps).toBeCloseTo(200 / 2, 9);
    expect(result.okRps).toBeCloseTo(186 / 2, 9);
    expect(result.latencyMs.p99).toBeCloseTo(4.903534, 9);
    expect(result.latencyMs.p99_9).toBeCloseTo(7.770014, 9);
    expect(result.latencyMs.p50).toBeCloseTo(0.500186, 9);
    expect(result.latencyMs.min).toBeCloseTo(0.072938, 9);
    expect(result.latencyMs.mean).toBeCloseTo(0.69198405, 9);
    expect(result.latencyMs.max).toBeCloseTo(7.770014, 9);
  });

  test("oha parse places the db's rows in the epoch seconds of their scheduled ticks, answered requests only", () => {
    const timeline = tool.parse(captured("open-normal"), OPEN_100).timeline;
    // oha-start.json: its -o file was born at 1796090806.2 s (oha's db says run 1796090806).
    expect(timeline?.source).toContain("by scheduled tick");
    expect(timeline?.seconds).toEqual([
      { epochS: 1_796_090_806, sent: 83, ok: 78, errors: null, p50Ms: 0.925871, p99Ms: 7.770014 },
      { epochS: 1_796_090_807, sent: 100, ok: 95, errors: null, p50Ms: 0.225647, p99Ms: 1.637302 },
      { epochS: 1_796_090_808, sent: 17, ok: 13, errors: null, p50Ms: 0.567446, p99Ms: 1.015986 },
    ]);
    // Transport errors are not in the db: 206 answered of 300 sent, and errors stays null.
    const errors = tool.parse(captured("open-errors"), { ...OPEN_100, durationS: 3 }).timeline;
    expect(errors?.seconds).toEqual([
      { epochS: 1_796_090_850, sent: 60, ok: 47, errors: null, p50Ms: 0.44295, p99Ms: 8.199629 },
      { epochS: 1_796_090_851, sent: 96, ok: 79, errors: null, p50Ms: 0.360208, p99Ms: 3.889621 },
      { epochS: 1_796_090_852, sent: 50, ok: 41, errors: null, p50Ms: 0.273418, p99Ms: 3.179913 },
    ]);
  });

  test("oha parse counts statuses and transport errors of an error-heavy run, not 5xx-style success", () => {
    const result = tool.parse(captured("open-errors"), { ...OPEN_100, durationS: 3 });
    expect(result.statusCounts).toEqual({ "200": 167, "400": 14, "404": 25 });
    expect(result.completed).toBe(206);
    expect(result.ok).toBe(167);
    expect(result.errorCounts).toEqual({
      "Connection refused (os error 111)": 83,
      "connection closed before message completed": 2,
      "operation was canceled": 1,
      timeout: 8,
    });
    expect(result.requests).toBe(300);
    expect(result.droppedOrAborted).toBe(0);
    expect(result.durationS).toBe(3);
    expect(result.drainS).toBeCloseTo(0.003238389, 9);
    expect(result.achievedRps).toBeCloseTo(206 / 3, 9);
    expect(result.latencyMs.p95).toBeCloseTo(1.536692, 9);
  });

  test("oha parse gives the 2xx responses' own p50 and p99 from its rows, not every answer's", () => {
    const result = tool.parse(captured("open-errors"), { ...OPEN_100, durationS: 3 });
    // Nearest rank over the 167 rows with a 2xx status (over all 206 answered rows p99 is 3.749211 ms).
    expect(result.okLatencyMs?.p50).toBeCloseTo(0.367598, 9);
    expect(result.okLatencyMs?.p99).toBeCloseTo(3.889621, 9);
  });

  test("oha parse reports deadline aborts as droppedOrAborted, not as errors", () => {
    const closed = { plan: plan({ kind: "closed", connections: 4 }), durationS: 1, toolVersion: "1.15.0" };
    const result = tool.parse(captured("closed-no-wait"), closed);
    expect(result.droppedOrAborted).toBe(4);
    expect(result.errorCounts).toEqual({});
    expect(result.requests).toBe(196);
    expect(result.completed).toBe(192);
    expect(result.offeredRps).toBeNull();
    expect(result.latencyMs.p90).toBeCloseTo(20.617701, 9);
    // Without --latency-correction the rows carry no tick: each request counts at its start.
    expect(result.timeline?.source).toContain("by request start");
    expect(result.timeline?.seconds.map((second) => [second.epochS, second.sent])).toEqual([
      [1_796_090_811, 148],
      [1_796_090_812, 44],
    ]);
  });

  test("oha parse reports empty statistics as null, never 0", () => {
    const json = JSON.parse(testdata("oha-1.15.0-open-errors.json"));
    json.statusCodeDistribution = {};
    json.summary.fastest = json.summary.average = json.summary.slowest = null;
    for (const key of Object.keys(json.latencyPercentiles)) json.latencyPercentiles[key] = null;
    const raw = withOutput(captured("open-errors"), "oha.json", JSON.stringify(json));
    const empty = withOutput(raw, "oha-requests.csv", "start,start_latency_correction,duration,status\n");
    const result = tool.parse(
      withOutput(empty, "oha-start.json", '{"startedAtMs":1796090850216,"run":null}'),
      {
        ...OPEN_100,
        durationS: 3,
      },
    );
    expect(result.completed).toBe(0);
    expect(Object.values(result.latencyMs)).toEqual([null, null, null, null, null, null, null, null]);
    expect(result.timeline?.seconds).toEqual([]);
  });

  test("oha parse throws, naming oha, when the output is missing or unreadable", () => {
    const base = captured("open-normal");
    expect(() => tool.parse({ ...base, outputs: {}, stderr: "error: boom" }, OPEN_100)).toThrow(
      /Cannot parse oha output: oha\.json is missing.*boom/,
    );
    expect(() => tool.parse(withOutput(base, "oha.json", "{"), OPEN_100)).toThrow(/oha\.json is not JSON/);
    expect(() => tool.parse(withOutput(base, "oha.json", "{}"), OPEN_100)).toThrow(
      /summary is not an object/,
    );
    expect(() => tool.parse({ ...base, exitCode: 1 }, OPEN_100)).toThrow(/did not exit with 0/);
  });

  test("oha parse throws when the db's rows do not match the JSON or the start mark is not oha's start second", () => {
    const base = captured("open-normal");
    const csv = base.outputs["oha-requests.csv"] as string;
    const short = csv.split("\n").slice(0, -2).join("\n");
    expect(() => tool.parse(withOutput(base, "oha-requests.csv", short), OPEN_100)).toThrow(
      "oha-requests.csv holds 199 requests but oha.json counts 200 responses",
    );
    expect(() => tool.parse(withOutput(base, "oha-requests.csv", `${csv}x,,1,200\n`), OPEN_100)).toThrow(
      "oha-requests.csv line 202 is not start,scheduled,duration,status: received x,,1,200",
    );
    const { outputs, ...rest } = base;
    const { "oha-start.json": _, ...withoutStart } = outputs;
    expect(() => tool.parse({ ...rest, outputs: withoutStart }, OPEN_100)).toThrow(
      "oha-start.json is missing or empty",
    );
    // The spawn time is up to oha's start-up early; a mark a second off is caught by oha's own run second.
    const start = JSON.parse(base.outputs["oha-start.json"] as string);
    const early = JSON.stringify({ ...start, startedAtMs: start.startedAtMs - 1_000 });
    expect(() => tool.parse(withOutput(base, "oha-start.json", early), OPEN_100)).toThrow(
      /startedAtMs 1796090805\d+(\.\d+)? is not in oha's own start second \(run 1796090806\)/,
    );
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
    // oha_runner.ts runs oha, then dumps its --db-url rows and marks its start (the timeline's epoch).
    expect(prepared.argv).toEqual([
      process.execPath,
      expect.stringMatching(/\/lab\/load\/tools\/oha_runner\.ts$/),
      "/bin/oha",
      "--no-tui",
      "--output-format",
      "json",
      "-o",
      "oha.json",
      "--db-url",
      "oha.db",
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
    expect(prepared.outputs).toEqual(["oha.json", "oha-requests.csv", "oha-start.json"]);
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
    const { run, targets, served, fromMs, toMs } = await server.run(tool, attackPlan, {
      durationS: 2,
      label,
      detection,
    });
    // Uniform keys over 1..2200 with 2000 rows: the share of targets oha can pick that answer 404.
    const notFoundShare = notFound(targets) / targets.length;
    return { run, delta: served, notFoundShare, window: { fromMs, toMs } };
  }

  function expectPlausible404s(completed: number, notFound: number, share: number): void {
    const sd = Math.sqrt(completed * share * (1 - share));
    expect(Math.abs(notFound - completed * share)).toBeLessThanOrEqual(5 * sd);
  }

  test("oha open run: every request the server saw is counted and the rate holds", async () => {
    const { run, delta, notFoundShare, window } = await attack({ kind: "open", rateRps: 200 }, "open");
    const result = run.result;
    expect(result.errorCounts).toEqual({});
    expect(result.droppedOrAborted).toBe(0);
    expect(result.completed).toBe(delta);
    // The db holds answered requests: every one of them, in the seconds of their scheduled ticks.
    const timeline = expectTimeline(result, { sent: result.completed as number, ...window });
    expect(timeline.source).toContain("by scheduled tick");
    expect(timelineTotals(timeline)).toEqual({ sent: delta, ok: result.ok as number, errors: null });
    // Ticks fire at start + i/200 s: no second holds many more than 200 (10% for a ticker woken late).
    expect(Math.max(...timeline.seconds.map((second) => second.sent))).toBeLessThanOrEqual(220);
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
    const { run, delta, notFoundShare, window } = await attack({ kind: "closed", connections: 4 }, "closed");
    const result = run.result;
    expect(run.argv).toContain("-c");
    expect(expectTimeline(result, { sent: delta, ...window }).source).toContain("by request start");
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
