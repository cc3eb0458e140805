import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel, Target } from "../../plan/attack_plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { timelineTotals } from "../request_timeline.ts";
import type { Detection, RawOutput, RunContext } from "../tool.ts";
import { tool } from "./k6.ts";
import type { TestServer } from "./tool_testing.ts";
import {
  capturedRun,
  DETAIL,
  detailPlan,
  editedJson,
  expectTimeline,
  notFound,
  ROWS,
  replayed,
  STOCK,
  startTestServer,
} from "./tool_testing.ts";

function plan(model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return detailPlan("k6-test", model, overrides);
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
        min: 0.167078,
        mean: 0.8834714613466332,
        p50: 0.695157,
        p90: 1.704062,
        p95: 2.063267,
        p99: 3.295966,
        p99_9: 4.864653000000013,
        max: 5.086937,
      },
      bytesIn: 122_705,
      durationS: 2,
      drainS: expect.closeTo(0.002691074, 9),
      sent: { kind: "prefix", count: 401 },
      timeline: {
        source: expect.stringMatching(/^k6 summary, per-second sub-metrics/),
        // setup_data.startS 1796090861; the scenario started 0.12 s into it.
        seconds: [
          {
            epochS: 1_796_090_861,
            sent: 176,
            ok: 157,
            errors: 19,
            p50Ms: 0.8486834999999999,
            p99Ms: 3.646404,
          },
          {
            epochS: 1_796_090_862,
            sent: 200,
            ok: 184,
            errors: 16,
            p50Ms: 0.626247,
            p99Ms: 2.3245462099999985,
          },
          { epochS: 1_796_090_863, sent: 25, ok: 20, errors: 5, p50Ms: 0.557312, p99Ms: 1.0371339199999998 },
        ],
      },
    });
  });

  test("k6 parse counts statuses, refused connections, EOFs and timeouts of an error-heavy run", () => {
    const { raw, context } = captured("errors");
    const result = tool.parse(raw, context);
    expect(result.requests).toBe(301);
    expect(result.completed).toBe(133);
    expect(result.ok).toBe(94);
    expect(result.statusCounts).toEqual({ "200": 94, "400": 29, "404": 10 });
    expect(result.errorCounts).toEqual({
      "1000 generic error": 6,
      "1050 request timeout": 2,
      "1212 dial: connection refused": 160,
    });
    expect(result.droppedOrAborted).toBe(0);
    // A 3 s scenario: the send window; the 1.6 ms after it is the drain.
    expect(result.durationS).toBe(3);
    expect(result.drainS).toBeCloseTo(0.001570241, 9);
    expect(result.achievedRps).toBe(133 / 3);
    expect(result.okRps).toBe(94 / 3);
    // http_req_duration covers failed requests too: refused dials count 0 ms, timeouts ~1000 ms.
    expect(result.latencyMs).toEqual({
      min: 0,
      mean: 23.625747348837216,
      p50: 0,
      p90: 0.369079,
      p95: 0.73723,
      p99: 845.849389,
      p99_9: 1000.8151648,
      max: 1001.015983,
    });
    expect(result.bytesIn).toBe(17_954);
    // The server died 1.5 s in: the seconds after it hold only errors (refused dials, 0 ms each), and the
    // 1 s timeouts count in the second they were sent, not the one they failed in.
    expect(result.timeline?.seconds).toEqual([
      { epochS: 1_796_090_863, sent: 75, ok: 50, errors: 25, p50Ms: 0.314509, p99Ms: 1000.52063144 },
      { epochS: 1_796_090_864, sent: 100, ok: 44, errors: 56, p50Ms: 0.218196, p99Ms: 576.2798663600005 },
      { epochS: 1_796_090_865, sent: 100, ok: 0, errors: 100, p50Ms: 0, p99Ms: 0 },
      { epochS: 1_796_090_866, sent: 26, ok: 0, errors: 26, p50Ms: 0, p99Ms: 0 },
    ]);
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
      // The four extra requests started in second 1 (the timeline must hold every request).
      for (const name of ["http_reqs{sec:1}", "http_req_duration{sec:1}"]) {
        (metrics[name] as { values: Record<string, number> }).values.count = 204;
      }
    });
    const result = tool.parse(raw, context);
    expect(result.completed).toBe(404);
    expect(result.statusCounts).toEqual({ "200": 361, "404": 40, other: 3 });
    expect(result.errorCounts).toEqual({ "other k6 error_code": 1 });
    expect(result.timeline?.seconds[1]).toMatchObject({ sent: 204, ok: 184, errors: 20 });
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

  test("k6 parse throws when the per-second sub-metrics miss a request or setup_data is gone", () => {
    const { raw, context } = captured("normal");
    // A request that started in no second with a sub-metric (e.g. a scenario started late) is caught.
    const short = edited((metrics) => {
      (metrics["http_reqs{sec:0}"] as { values: Record<string, number> }).values.count = 175;
      (metrics["http_req_duration{sec:0}"] as { values: Record<string, number> }).values.count = 175;
    });
    expect(() => tool.parse(short, context)).toThrow(
      "the per-second sub-metrics hold 400 requests but http_reqs 401: some started outside seconds 0..3",
    );
    const untimed = edited((metrics) => {
      (metrics["http_req_duration{sec:1}"] as { values: Record<string, number> }).values.count = 199;
    });
    expect(() => tool.parse(untimed, context)).toThrow(
      "second 1: 200 requests, 184 of them 2xx, 199 durations",
    );
    const moreOk = edited((metrics) => {
      (
        metrics["http_reqs{sec:1,expected_response:true}"] as { values: Record<string, number> }
      ).values.count = 185;
    });
    expect(() => tool.parse(moreOk, context)).toThrow(
      "the per-second sub-metrics hold 362 2xx responses but the status counts 361",
    );
    const noSecond = edited((metrics) => {
      delete metrics["http_reqs{sec:3}"];
    });
    expect(() => tool.parse(noSecond, context)).toThrow("http_reqs{sec:3} has no count (timeline thresholds");
    const noSetup = editedJson<{ setup_data?: unknown }>(raw, {
      file: "summary.json",
      edit: (summary) => {
        delete summary.setup_data;
      },
    });
    expect(() => tool.parse(noSetup, context)).toThrow("summary.json setup_data is not an object");
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
    const {
      run: toolRun,
      targets,
      served,
      fromMs,
      toMs,
    } = await server.run(tool, attack, {
      durationS,
      label,
      detection,
    });
    // Replay is in order, so the targets sent are exactly 0..requests−1 (wrapping).
    const sent = replayed(targets, toolRun.result.requests ?? 0);
    const timeline = expectTimeline(toolRun.result, {
      sent: toolRun.result.requests as number,
      fromMs,
      toMs,
    });
    return { result: toolRun.result, served, sent, timeline };
  }

  test("k6 detect finds the pinned binary", () => {
    expect(detection).toMatchObject({ installed: true, version: "1.8.1" });
    expect(detection.path).toEndWith("/k6");
  });

  test("k6 open plan completes every request it sends, at the offered rate, with exact 404s", async () => {
    const attack = plan({ kind: "open", rateRps: 150 }, { baseUrl: server.url });
    const { result, served, sent, timeline } = await run(attack, "open");
    expect(result.completed).toBe(served);
    expect(timelineTotals(timeline)).toEqual({
      sent: result.requests as number,
      ok: sent.length - notFound(sent),
      errors: notFound(sent),
    });
    // 150 a second from a start inside a second: two or three seconds, none much fuller than the rate (an
    // iteration started late by a busy VU is stamped late, so allow 10%).
    expect(timeline.seconds.length).toBeGreaterThanOrEqual(2);
    expect(timeline.seconds.length).toBeLessThanOrEqual(3);
    expect(Math.max(...timeline.seconds.map((second) => second.sent))).toBeLessThanOrEqual(165);
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
