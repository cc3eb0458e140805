import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { generateTargets } from "../../plan/targets.ts";
import { testTmpdir } from "../../shared/test_tmpdir.ts";
import { runTool } from "../run_attack.ts";
import { tool } from "./oha.ts";
import { dumpRequests, type OhaStart } from "./oha_runner.ts";
import { expectTimeline, testPlan } from "./tool_testing.ts";

describe("oha's --db-url rows", () => {
  test("oha's db holds times relative to its start, and the tick a late request was due at under latency correction", async () => {
    const detection = await tool.detect();
    // One connection to a server that takes 50 ms: 40 ticks a second, 20 answers a second, so the
    // connection falls ever further behind its ticks.
    const slow = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => Bun.sleep(50).then(() => new Response("x")),
    });
    const workDir = mkdtempSync(join(testTmpdir(), "cachelab-oha-db-"));
    try {
      const late = testPlan(
        { kind: "open", rateRps: 40 },
        {
          name: "oha-test",
          requests: [{ name: "get", weight: 1, method: "GET", path: "/products/{id}" }],
          baseUrl: `http://127.0.0.1:${slow.port}`,
          maxConnections: 1,
        },
      );
      const fromMs = Date.now();
      const run = await runTool(tool, late, {
        targets: generateTargets(late),
        durationS: 2,
        workDir,
        label: "late",
        detection,
      });
      const toMs = Date.now();
      const start = JSON.parse(run.raw.outputs["oha-start.json"] as string) as OhaStart;
      // `run` is oha's start second, truncated; the mark (the -o file's birth) falls inside it.
      expect(Math.floor(start.startedAtMs / 1_000)).toBe(start.run as number);
      expect(start.startedAtMs).toBeGreaterThanOrEqual(start.spawnedAtMs);
      const { text, rows } = dumpRequests(join(workDir, "late", "oha.db"));
      expect(text).toBe(run.raw.outputs["oha-requests.csv"] as string);
      expect(rows).toBe(run.result.completed as number);
      const requests = text
        .trim()
        .split("\n")
        .slice(1)
        .map((line) => line.split(",").map(Number) as [number, number, number, number]);
      // Relative seconds: the first request within a few ms of oha's start, none past the run.
      expect(Math.min(...requests.map(([startS]) => startS))).toBeLessThan(0.05);
      expect(Math.max(...requests.map(([startS]) => startS))).toBeLessThan(
        (toMs - start.startedAtMs) / 1_000,
      );
      // Each request went out when the connection freed up, long after the tick it was due at; its
      // duration runs from the tick (end − tick), so the latency includes the wait.
      expect(requests.every(([startS, tickS]) => tickS <= startS)).toBe(true);
      const lastTickS = Math.max(...requests.map(([, tickS]) => tickS));
      const lastStartS = Math.max(...requests.map(([startS]) => startS));
      expect(lastStartS - lastTickS).toBeGreaterThan(0.5);
      // The timeline counts each request in the epoch second of its tick, not of its send.
      const perSecond = (column: 0 | 1) => {
        const counts = new Map<number, number>();
        for (const request of requests) {
          const epochS = Math.floor((start.startedAtMs + request[column] * 1_000) / 1_000);
          counts.set(epochS, (counts.get(epochS) ?? 0) + 1);
        }
        return [...counts].sort(([a], [b]) => a - b);
      };
      const timeline = expectTimeline(run.result, { sent: rows, fromMs, toMs });
      const counted = timeline.seconds.filter((s) => s.sent > 0).map((s) => [s.epochS, s.sent]);
      expect(counted).toEqual(perSecond(1));
      expect(counted).not.toEqual(perSecond(0));
      expect(Math.max(...timeline.seconds.map((second) => second.p99Ms ?? 0))).toBeGreaterThan(500);
    } finally {
      slow.stop(true);
      rmSync(workDir, { recursive: true, force: true });
    }
  });
});
