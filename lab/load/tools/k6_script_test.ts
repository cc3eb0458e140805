/** k6's plan as it runs: the options and scenarios k6_script.ts builds, the files prepare writes, refusals. */
import { describe, expect, test } from "bun:test";
import type { AttackPlan, LoadModel } from "../../plan/attack_plan.ts";
import { generateTargets } from "../../plan/targets.ts";
import { tool } from "./k6.ts";
import { k6Options } from "./k6_script.ts";
import { detailPlan } from "./tool_testing.ts";

function plan(model: LoadModel, overrides: Partial<AttackPlan> = {}): AttackPlan {
  return detailPlan("k6-test", model, overrides);
}

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
    // The timeline's sub-metrics: seconds 0..3 after setup's second cover a 2 s scenario started late in it.
    const thresholds = options.thresholds as Record<string, string[]>;
    expect(thresholds).toMatchObject({
      "http_reqs{sec:0}": ["count>=0"],
      "http_reqs{sec:3,expected_response:true}": ["count>=0"],
      "http_req_duration{sec:3}": ["max>=0"],
    });
    expect(Object.keys(thresholds).filter((name) => name.includes("{sec:")).length).toBe(4 * 3);
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
    const script = prepared.files["script.js"] as string;
    expect(script).toContain("targets[position % targets.length]");
    expect(script).toContain("targetAt(exec.scenario.iterationInTest)");
    // setup() fixes the start second; each request is tagged with its own second after it; 2xx = expected.
    expect(script).toContain("return { startS: Math.floor(Date.now() / 1000) };");
    expect(script).toContain("sec: String(Math.floor(Date.now() / 1000) - data.startS)");
    expect(script).toContain("http.expectedStatuses({ min: 200, max: 299 })");
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
