/**
 * One plan through two rate-split vegeta processes against the real server: the merged counts equal the
 * server's own counter, the merged percentiles equal those computed here from the union of the generators'
 * per-request results, and the generators together sent the stream's stripes, no position twice.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseCsv } from "csv-parse/sync";
import { generateTargets } from "../plan/targets.ts";
import { runGenerators, splitInteger, splitPlan } from "./distributed.ts";
import { nearestRank } from "./request_timeline.ts";
import { findTool } from "./run_attack.ts";
import { startTestServer, type TestServer, testPlan } from "./tools/tool_testing.ts";

const READS = [{ name: "detail", weight: 1, method: "GET" as const, path: "/products/{id}" }];

describe("several vegeta generators", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer("vegeta");
  });
  afterAll(async () => {
    await server.stop();
  });

  test("the split: rates differ by at most 1 and sum to the plan's, generator g walks stripe g", () => {
    expect(splitInteger(301, 2)).toEqual([151, 150]);
    expect(splitInteger(10, 3)).toEqual([4, 3, 3]);
    const plan = testPlan({ kind: "open", rateRps: 301 }, { name: "split", requests: READS });
    const targets = generateTargets(plan, 10);
    const shares = splitPlan(plan, targets, 3);
    expect(shares.map((share) => share.plan.model)).toEqual([
      { kind: "open", rateRps: 101 },
      { kind: "open", rateRps: 100 },
      { kind: "open", rateRps: 100 },
    ]);
    expect(shares[1]?.targets.map((target) => target.url)).toEqual(
      [1, 4, 7].map((i) => targets[i]?.url ?? ""),
    );
    expect(() => splitPlan(plan, targets.slice(0, 2), 3)).toThrow("fewer targets (2) than generators (3)");
    expect(() => splitPlan({ ...plan, model: { kind: "open", rateRps: 2 } }, targets, 3)).toThrow(
      "3 generators need at least 3 rps",
    );
  });

  test("two generators: merged counts equal the server's, merged percentiles equal the union's", async () => {
    const vegeta = await findTool("vegeta");
    const detection = await vegeta.detect();
    const plan = testPlan(
      { kind: "open", rateRps: 300 },
      { name: "merged", requests: READS, baseUrl: server.url },
    );
    const targets = generateTargets(plan, 1_000);
    const before = await server.requestCount();
    const { result, runs } = await runGenerators(vegeta, plan, {
      targets,
      durationS: 2,
      workDir: server.workDir,
      label: "merged",
      detection,
      generators: 2,
    });
    const served = (await server.requestCount()) - before;
    expect(runs).toHaveLength(2);
    expect(result.completed).toBe(served);
    expect(result.requests).toBe(600);
    expect(result.sent).toEqual({ kind: "stripes", counts: [300, 300] });
    // The union of the generators' own per-request results, read here independently.
    const latencies = runs
      .flatMap((_, g) =>
        readFileSync(join(server.workDir, "merged", `gen-${g}`, "results.jsonl"), "utf8")
          .trim()
          .split("\n")
          .map((line) => (JSON.parse(line) as { latency: number }).latency / 1e6),
      )
      .sort((a, b) => a - b);
    expect(latencies).toHaveLength(600);
    for (const [p, key] of [
      [50, "p50"],
      [90, "p90"],
      [99, "p99"],
      [99.9, "p99_9"],
    ] as const) {
      expect(result.latencyMs[key]).toBe(nearestRank(latencies, p));
    }
    expect(result.latencyMs.max).toBe(latencies.at(-1) ?? null);
    // Each generator's own result counts its share; the merge is their sum, not an average.
    expect(runs.map((run) => run.result.completed)).toEqual([300, 300]);
    // Past the seeded rows the server answers 404: the merged codes are the generators' codes added up.
    const added: Record<string, number> = {};
    for (const run of runs) {
      for (const [code, n] of Object.entries(run.result.statusCounts ?? {}))
        added[code] = (added[code] ?? 0) + n;
    }
    expect(result.statusCounts).toEqual(added);
    expect(Object.values(added).reduce((a, b) => a + b, 0)).toBe(600);
    expect(result.achievedRps).toBeGreaterThan(280);
    expect(result.timeline?.seconds.reduce((sum, second) => sum + second.sent, 0)).toBe(600);
  });

  test("two k6 execution segments: merged counts equal the server's, merged percentiles equal the union's samples", async () => {
    const k6 = await findTool("k6");
    const detection = await k6.detect();
    const plan = testPlan(
      { kind: "open", rateRps: 300 },
      { name: "segments", requests: READS, baseUrl: server.url, maxConnections: 50 },
    );
    const targets = generateTargets(plan, 1_000);
    const before = await server.requestCount();
    const { result, runs } = await runGenerators(k6, plan, {
      targets,
      durationS: 2,
      workDir: server.workDir,
      label: "segments",
      detection,
      generators: 2,
    });
    const served = (await server.requestCount()) - before;
    expect(result.completed).toBe(served);
    // 300 rps for 2 s: k6 starts an iteration at 0 s, and each segment may start one more at its very end
    // (602 seen in CI).
    const requests = result.requests ?? 0;
    expect(requests).toBeGreaterThanOrEqual(600);
    expect(requests).toBeLessThanOrEqual(602);
    expect(result.sent).toEqual({ kind: "prefix", count: requests });
    // Each segment sent its stripe (about half) and counted only that; the merge adds them up.
    const [first = 0, second = 0] = runs.map((run) => run.result.requests ?? 0);
    expect(first + second).toBe(requests);
    // About half each: a segment may start one iteration more or fewer at either end (2 apart seen in CI).
    expect(Math.abs(first - second)).toBeLessThanOrEqual(2);
    expect(runs[1]?.argv).toEqual(
      expect.arrayContaining(["--execution-segment", "1/2:2/2", "--execution-segment-sequence", "0,1/2,1"]),
    );
    const latencies = runs
      .flatMap((_, g) =>
        (
          parseCsv(readFileSync(join(server.workDir, "segments", `gen-${g}`, "samples.csv"), "utf8"), {
            columns: true,
          }) as Record<string, string>[]
        )
          .filter((row) => row.metric_name === "http_req_duration")
          .map((row) => Number(row.metric_value)),
      )
      .sort((a, b) => a - b);
    expect(latencies).toHaveLength(requests);
    for (const [p, key] of [
      [50, "p50"],
      [99, "p99"],
      [99.9, "p99_9"],
    ] as const) {
      expect(result.latencyMs[key]).toBe(nearestRank(latencies, p));
    }
    expect(result.timeline?.seconds.reduce((sum, second) => sum + second.sent, 0)).toBe(requests);
  });
});
