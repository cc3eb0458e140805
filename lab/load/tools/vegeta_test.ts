import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel, Target } from "../../plan/attack_plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { timelineTotals } from "../request_timeline.ts";
import { runTool } from "../run_attack.ts";
import type { RawOutput } from "../tool.ts";
import type { TestServer } from "./tool_testing.ts";
import {
  expectedStatuses,
  expectTimeline,
  GET_AND_BAD_PUT,
  startTestServer,
  testdata,
  testPlan,
} from "./tool_testing.ts";
import { STRIP_BODIES, tool } from "./vegeta.ts";

function plan(model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return testPlan(model, { name: "vegeta-test", requests: GET_AND_BAD_PUT, ...overrides });
}

function captured(name: string): RawOutput {
  const read = (suffix: string) => testdata(`vegeta-12.13.0-open-${name}.${suffix}`);
  return {
    stdout: "",
    stderr: "",
    exitCode: 0,
    outputs: { "report.json": read("report.json"), "results.jsonl": read("results.jsonl") },
  };
}

const OPEN_200 = { plan: plan({ kind: "open", rateRps: 200 }), durationS: 2, toolVersion: "12.13.0" };

describe("vegeta parse", () => {
  test("vegeta parse reads a normal open run exactly, in ms and s", () => {
    const result = tool.parse(captured("normal"), OPEN_200);
    expect(result).toMatchObject({
      tool: "vegeta",
      toolVersion: "12.13.0",
      model: "open",
      offeredRps: 200,
      requests: 400,
      completed: 400,
      ok: 339,
      statusCounts: { "200": 339, "400": 35, "404": 26 },
      errorCounts: {},
      droppedOrAborted: null,
      bytesIn: 76_053,
    });
    // The send window is the report's duration; its wait is the drain after it.
    expect(result.durationS).toBeCloseTo(1.994721479, 12);
    expect(result.drainS).toBeCloseTo(0.000273078, 12);
    expect(result.sent).toEqual({ kind: "prefix", count: 400 });
    expect(result.achievedRps).toBeCloseTo(400 / 1.994721479, 9);
    expect(result.okRps).toBeCloseTo(339 / 1.994721479, 9);
    expect(result.latencyMs).toEqual({
      min: 0.135778,
      mean: 0.705295,
      p50: 0.485004,
      p90: 1.275819,
      p95: 1.537206,
      p99: 2.762104,
      p99_9: 6.218025,
      max: 6.218025,
    });
  });

  test("vegeta parse counts transport errors by cause and keeps HTTP errors as statuses", () => {
    const result = tool.parse(captured("errors"), OPEN_200);
    expect(result.requests).toBe(600);
    expect(result.completed).toBe(408);
    expect(result.ok).toBe(314);
    expect(result.statusCounts).toEqual({ "200": 314, "400": 56, "404": 38 });
    expect(result.errorCounts).toEqual({
      "context deadline exceeded (Client.Timeout exceeded while awaiting headers)": 10,
      "dial tcp 0.0.0.0:0->127.0.0.1:42879: connect: connection refused": 180,
      "read tcp 127.0.0.1:45067->127.0.0.1:42879: read: connection reset by peer": 1,
      "read tcp 127.0.0.1:60317->127.0.0.1:42879: read: connection reset by peer": 1,
    });
    expect(result.durationS).toBeCloseTo(2.995431757, 12);
    expect(result.drainS).toBeCloseTo(0.000168048, 12);
    expect(result.latencyMs.p99).toBe(1000.597365);
    expect(result.latencyMs.p99_9).toBe(1001.506137);
    expect(result.latencyMs.min).toBe(0.118103);
    expect(result.bytesIn).toBe(18_058);
  });

  test("vegeta parse puts every result in the epoch second of its timestamp, with exact per-second ranks", () => {
    const normal = tool.parse(captured("normal"), OPEN_200).timeline;
    expect(normal?.source).toStartWith("vegeta per-request results");
    // 2026-11-30T16:55:36.457948601Z is epoch second 1796057736; the run started .46 into it.
    expect(normal?.seconds).toEqual([
      { epochS: 1_796_057_736, sent: 109, ok: 91, errors: 18, p50Ms: 0.769736, p99Ms: 3.861548 },
      { epochS: 1_796_057_737, sent: 200, ok: 174, errors: 26, p50Ms: 0.432285, p99Ms: 2.216355 },
      { epochS: 1_796_057_738, sent: 91, ok: 74, errors: 17, p50Ms: 0.485586, p99Ms: 2.686082 },
    ]);
    // Timeouts (1 s) and refusals count as errors in the second they were sent, with their latency: bucketed
    // by end time, the 1 000 ms timeouts of the first second would land in the next.
    const errors = tool.parse(captured("errors"), OPEN_200).timeline;
    expect(errors?.seconds).toEqual([
      { epochS: 1_796_057_808, sent: 65, ok: 55, errors: 10, p50Ms: 0.495473, p99Ms: 1000.480193 },
      { epochS: 1_796_057_809, sent: 200, ok: 149, errors: 51, p50Ms: 0.447234, p99Ms: 1001.279442 },
      { epochS: 1_796_057_810, sent: 200, ok: 110, errors: 90, p50Ms: 0.312458, p99Ms: 542.111619 },
      { epochS: 1_796_057_811, sent: 135, ok: 0, errors: 135, p50Ms: 0.249207, p99Ms: 2.345801 },
    ]);
  });

  test("vegeta parse throws on a result line without a readable timestamp", () => {
    const base = captured("normal");
    const lines = (base.outputs["results.jsonl"] as string).replace(
      '"timestamp":"2026-11-30T16:55:36.457948601Z"',
      '"timestamp":"yesterday"',
    );
    expect(() =>
      tool.parse({ ...base, outputs: { ...base.outputs, "results.jsonl": lines } }, OPEN_200),
    ).toThrow('results.jsonl line 1 timestamp is not a time: received "yesterday"');
  });

  test("vegeta parse takes p99.9 as the nearest rank over every result", () => {
    const lines = Array.from({ length: 2_000 }, (_, i) =>
      JSON.stringify({
        code: 200,
        timestamp: "2026-11-30T16:55:36Z",
        latency: (2_000 - i) * 1_000_000,
        error: "",
      }),
    );
    const report = JSON.parse(captured("normal").outputs["report.json"] as string);
    report.requests = 2_000;
    report.status_codes = { "200": 2_000 };
    const raw = {
      ...captured("normal"),
      outputs: { "report.json": JSON.stringify(report), "results.jsonl": `${lines.join("\n")}\n` },
    };
    // rank ceil(0.999 × 2000) = 1998 of latencies 1..2000 ms
    expect(tool.parse(raw, OPEN_200).latencyMs.p99_9).toBe(1_998);
  });

  test("vegeta parse throws, naming vegeta, on missing or inconsistent output", () => {
    const base = captured("normal");
    expect(() => tool.parse({ ...base, outputs: {} }, OPEN_200)).toThrow(
      "Cannot parse vegeta output: report.json is missing or empty",
    );
    expect(() =>
      tool.parse({ ...base, outputs: { "report.json": base.outputs["report.json"] as string } }, OPEN_200),
    ).toThrow("results.jsonl is missing");
    const short = (base.outputs["results.jsonl"] as string).split("\n").slice(1).join("\n");
    expect(() =>
      tool.parse({ ...base, outputs: { ...base.outputs, "results.jsonl": short } }, OPEN_200),
    ).toThrow("results.jsonl holds 399 results but report.json counts 400 requests");
    expect(() => tool.parse({ ...base, exitCode: 2, stderr: "bad targets" }, OPEN_200)).toThrow(
      /exit code 2; stderr: bad targets/,
    );
  });
});

describe("vegeta refusal and prepare", () => {
  test("vegeta refuses a non-integer rate, a zero rate and ramping", () => {
    expect(tool.refusal(plan({ kind: "open", rateRps: 12.5 }))).toBe(
      "vegeta's -rate takes a positive integer count per second (0 means unlimited): received 12.5",
    );
    expect(tool.refusal(plan({ kind: "open", rateRps: 0 }))).toMatch(/0 means unlimited/);
    expect(
      tool.refusal(plan({ kind: "ramping", startRps: 1, stages: [{ targetRps: 5, durationS: 1 }] })),
    ).toMatch(/no ramping model/);
    expect(tool.refusal(plan({ kind: "closed", connections: 3 }))).toBeNull();
  });

  test("vegeta prepare writes JSON targets with base64 bodies and a pipeline using the run's duration", () => {
    const closed = plan({ kind: "closed", connections: 3 }, { durationS: 30, timeoutS: 4 });
    const targets = generateTargets(closed);
    const prepared = tool.prepare(targets, {
      plan: closed,
      durationS: 2,
      toolVersion: "12.13.0",
      workDir: "/tmp",
      binary: "/opt/go bin/vegeta",
    });
    expect(prepared.argv[0]).toBe("bash");
    const script = prepared.argv[2] as string;
    expect(script).toContain(
      "'/opt/go bin/vegeta' attack -format=json -targets=targets.jsonl -rate=0 -workers=3 -max-workers=3 -duration=2s -timeout=4s -redirects=-1 -max-body=-1 -output=results.bin",
    );
    expect(script).toContain("'/opt/go bin/vegeta' report -type=json -output=report.json results.bin");
    const lines = (prepared.files["targets.jsonl"] as string)
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines.length).toBe(targets.length);
    const putIndex = targets.findIndex((target) => target.method === "PUT");
    const put = targets[putIndex] as Target;
    expect(lines[putIndex]).toEqual({
      method: "PUT",
      url: put.url,
      header: { accept: ["application/json"], "Content-Type": ["application/json"] },
      body: Buffer.from(put.body as string).toString("base64"),
    });
    expect(prepared.outputs).toEqual(["report.json", "results.jsonl"]);
  });

  test("the pipeline's sed drops bodies and headers from encoded lines, and nothing an error says", () => {
    const line = (fields: string) =>
      `{"attack":"","seq":1,"code":${fields},"method":"GET","url":"http://127.0.0.1:1/products/7"`;
    const encoded = [
      `${line('200,"error":"","body":"eyJpZCI6N30="')},"headers":{"Content-Type":["application/json"],"X-A":["{}"]}}`,
      // A transport error: no body, no headers, and a message quoting what looks like both.
      `${line('0,"error":"bad \\"body\\":\\"x\\",\\"headers\\":{}","body":null')},"headers":null}`,
    ].join("\n");
    const stripped = Bun.spawnSync(["bash", "-c", STRIP_BODIES], { stdin: Buffer.from(`${encoded}\n`) });
    expect(stripped.exitCode).toBe(0);
    expect(stripped.stdout.toString()).toBe(
      [line('200,"error":""'), line('0,"error":"bad \\"body\\":\\"x\\",\\"headers\\":{}"')]
        .map((text) => `${text}}`)
        .join("\n")
        .concat("\n"),
    );
    for (const text of stripped.stdout.toString().trimEnd().split("\n"))
      expect(JSON.parse(text)).toBeTruthy();
  });
});

describe("vegeta against the real server", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer("vegeta");
  });
  afterAll(async () => {
    await server?.stop();
  });

  async function attack(model: LoadModel, label: string) {
    const detection = await tool.detect();
    expect(detection.version, `vegeta 12.13.0 expected; install: ${detection.install}`).toBe("12.13.0");
    const attackPlan = plan(model, { baseUrl: server.url });
    const { run, targets, served, fromMs, toMs } = await server.run(tool, attackPlan, {
      durationS: 2,
      label,
      detection,
    });
    return { run, targets, delta: served, window: { fromMs, toMs } };
  }

  test("vegeta open run: sends the targets in order, every one answered, at the offered rate", async () => {
    const { run, targets, delta, window } = await attack({ kind: "open", rateRps: 200 }, "open");
    // Workers unbounded, connections capped at the plan's maxConnections.
    expect(run.argv[2]).toContain("-rate=200/1s -max-connections=50 ");
    const result = run.result;
    expect(result.errorCounts).toEqual({});
    expect(result.requests).toBe(400);
    const timeline = expectTimeline(result, { sent: 400, ...window });
    expect(timelineTotals(timeline)).toEqual({
      sent: 400,
      ok: result.ok as number,
      errors: 400 - (result.ok as number),
    });
    // 200 a second from a start inside a second: two or three seconds, none much fuller than the rate
    // (a worker late on its tick stamps it late, so allow 10%).
    expect(timeline.seconds.length).toBeGreaterThanOrEqual(2);
    expect(timeline.seconds.length).toBeLessThanOrEqual(3);
    expect(Math.max(...timeline.seconds.map((second) => second.sent))).toBeLessThanOrEqual(220);
    expect(result.completed).toBe(delta);
    expect(result.statusCounts).toEqual(expectedStatuses(targets, result.completed as number));
    expect(result.ok).toBe(result.statusCounts?.["200"] as number);
    expect(Math.abs((result.achievedRps as number) - 200)).toBeLessThanOrEqual(200 * 0.02);
    expect(result.latencyMs.p99_9 as number).toBeGreaterThanOrEqual(result.latencyMs.p99 as number);
  });

  test("vegeta closed run: 4 workers, statuses match the targets sent, completed equals the server's count", async () => {
    const { run, targets, delta, window } = await attack({ kind: "closed", connections: 4 }, "closed");
    const result = run.result;
    expect(run.argv[2]).toContain("-rate=0 -workers=4 -max-workers=4");
    expectTimeline(result, { sent: result.requests as number, ...window });
    expect(result.errorCounts).toEqual({});
    expect(result.offeredRps).toBeNull();
    expect(result.completed).toBe(delta);
    expect(result.statusCounts).toEqual(expectedStatuses(targets, result.completed as number));
    expect(result.durationS as number).toBeGreaterThanOrEqual(1.9);
  });

  test("vegeta runTool refuses a non-integer rate before starting", async () => {
    const detection = await tool.detect();
    const fractional = plan({ kind: "open", rateRps: 33.3 }, { baseUrl: server.url });
    await expect(
      runTool(tool, fractional, {
        targets: generateTargets(fractional),
        durationS: 2,
        workDir: server.workDir,
        label: "refused",
        detection,
      }),
    ).rejects.toThrow("Cannot run vegeta: vegeta's -rate takes a positive integer count per second");
  });
});
