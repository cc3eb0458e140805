/**
 * A trace through the real tools that can replay one (vegeta, k6): the recording server below receives the
 * trace's keys and operations in the trace's order, warm-up segment first, then the measured one; the tools
 * that cannot keep the order (oha draws at random; wrk and autocannon run closed models) are refused.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { findTool, runAttack } from "../load/run_attack.ts";
import type { AttackPlan, ToolName, TraceKeys } from "../plan/attack_plan.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { holdTrace } from "./loaded.ts";
import { compactTrace, type TraceOp } from "./trace.ts";
import { traceRefusal } from "./trace_plan.ts";

let server: Server<undefined>;
const received: string[] = [];

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      received.push(`${request.method} ${new URL(request.url).pathname}`);
      return new Response("{}", { headers: { "content-type": "application/json" } });
    },
  });
});
afterAll(() => {
  server.stop(true);
});

// 900 requests over 60 keys, one in ten a write or a delete, in a fixed order.
const ops: [string, TraceOp][] = Array.from({ length: 900 }, (_, i) => [
  `user:${(i * 37) % 60}`,
  i % 10 === 3 ? "write" : i % 10 === 7 ? "delete" : "read",
]);
const KEYS: TraceKeys = { kind: "trace", file: "/tmp/trace_replay_test.csv" };
const trace = holdTrace(
  KEYS,
  compactTrace(ops.map(([key, op]) => ({ key, op, sizeBytes: null, tsMs: null }))),
);

function plan(): AttackPlan {
  return {
    name: "replay",
    baseUrl: `http://127.0.0.1:${server.port}`,
    // Slow enough that each request is usually answered before the next starts.
    model: { kind: "open", rateRps: 50 },
    durationS: 2,
    warmupS: 1,
    timeoutS: 2,
    headers: {},
    requests: [
      { name: "read", weight: 1, method: "GET", path: "/products/{id}" },
      { name: "write", weight: 1, method: "PUT", path: "/products/{id}", body: '{"stock":1}' },
    ],
    keys: { distribution: KEYS, keyspace: trace.keys.length, seed: 1 },
    targetCount: 250,
    maxConnections: 8,
  };
}

/** What the server should receive for trace positions `from` .. `from + count − 1`. */
function expected(from: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const position = from + i;
    const id = (trace.keyIndex[position] as number) + 1;
    return `${trace.op[position] === 0 ? "GET" : "PUT"} /products/${id}`;
  });
}

/** How far each of `want`'s requests landed from its place in `got` (the k-th copy of a request to the k-th). */
function displacements(want: string[], got: string[]): number[] {
  const places = new Map<string, number[]>();
  got.forEach((request, i) => {
    places.set(request, [...(places.get(request) ?? []), i]);
  });
  const seen = new Map<string, number>();
  return want.map((request, i) => {
    const k = seen.get(request) ?? 0;
    seen.set(request, k + 1);
    return Math.abs(((places.get(request) ?? [])[k] ?? Number.POSITIVE_INFINITY) - i);
  });
}

describe("a trace replayed through the real tools", () => {
  for (const name of ["vegeta", "k6"] as ToolName[]) {
    test(`${name}: the server receives the trace's keys and operations in the trace's order`, async () => {
      received.length = 0;
      const workDir = mkdtempSync(join(testTmpdir(), `cachelab-replay-${name}-`));
      const run = await runAttack(plan(), { tool: name, workDir });
      const warmupSent = run.warmup?.result.requests ?? 0;
      const measuredSent = run.measured.result.requests ?? 0;
      expect(warmupSent).toBeGreaterThanOrEqual(48);
      expect(measuredSent).toBeGreaterThanOrEqual(98);
      // The warm-up walks positions 0…, the measured run starts at its own segment (position 250). The tool
      // starts them in that order; requests in flight at once can arrive swapped on a busy machine (k6 by 2
      // places, vegeta by 3 in CI), so each may land a few places off; a shuffled or replayed list cannot pass.
      const want = [...expected(0, warmupSent), ...expected(250, measuredSent)];
      expect([...received].sort()).toEqual([...want].sort());
      const moved = displacements(want, received);
      expect(Math.max(0, ...moved)).toBeLessThanOrEqual(10);
      expect(moved.filter((d) => d > 0).length).toBeLessThanOrEqual(Math.ceil(want.length * 0.05));
    }, 60_000);
  }

  test("oha, wrk and autocannon refuse a trace, each with its reason", async () => {
    for (const name of ["oha", "wrk", "autocannon"] as ToolName[]) {
      const tool = await findTool(name);
      const closed: AttackPlan = { ...plan(), model: { kind: "closed", connections: 4 } };
      const reason = traceRefusal(
        tool.capabilities.models.includes("open") ? plan() : closed,
        tool.capabilities.sends,
      );
      expect(reason).toMatch(name === "oha" ? /order cannot be kept/ : /replayed at a rate/);
    }
    const workDir = mkdtempSync(join(testTmpdir(), "cachelab-replay-oha-"));
    expect(runAttack(plan(), { tool: "oha", workDir })).rejects.toThrow(/Cannot replay the trace with oha/);
  });
});
