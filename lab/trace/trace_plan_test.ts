import { describe, expect, test } from "bun:test";
import { distinctExpectation, HIT_RATIO_TOLERANCE, judgeStream, type StreamEvidence } from "../cell/judge.ts";
import type { AttackPlan, TraceKeys } from "../plan/attack_plan.ts";
import type { Experiment, ExperimentAttack } from "../plan/experiment_plan.ts";
import { TargetStream } from "../plan/targets.ts";
import { distinctReads } from "../sim/distinct_reads.ts";
import { fromTargets } from "../sim/simulate.ts";
import { holdTrace } from "./loaded.ts";
import { compactTrace, type TraceOp } from "./trace.ts";
import { prepareTraces, recordedPace, traceOrder, traceRefusal } from "./trace_plan.ts";

const KEYS: TraceKeys = { kind: "trace", file: "/tmp/trace_plan_test.keys" };

function plan(overrides: Partial<AttackPlan> = {}): AttackPlan {
  return {
    name: "replay",
    baseUrl: "http://127.0.0.1:3000",
    model: { kind: "open", rateRps: 100 },
    durationS: 2,
    warmupS: 1,
    timeoutS: 2,
    headers: {},
    requests: [
      { name: "detail", weight: 1, method: "GET", path: "/products/{id}" },
      { name: "update", weight: 1, method: "PUT", path: "/products/{id}", body: '{"name":"n{id}"}' },
    ],
    keys: { distribution: KEYS, keyspace: 3, seed: 7 },
    targetCount: 100,
    maxConnections: 16,
    ...overrides,
  };
}

function hold(ops: [string, TraceOp][], keys: TraceKeys = KEYS) {
  return holdTrace(keys, compactTrace(ops.map(([key, op]) => ({ key, op, sizeBytes: null, tsMs: null }))));
}

describe("a trace as the stream", () => {
  test("its keys become ids in first-seen order, its ops the GET or PUT template, in trace order", () => {
    hold([
      ["user:9", "read"],
      ["user:3", "read"],
      ["user:9", "write"],
      ["user:5", "delete"],
      ["user:3", "read"],
    ]);
    const stream = new TargetStream(plan());
    const first = stream.take(2);
    const rest = stream.take(10);
    expect(rest).toHaveLength(3); // the trace ends: never replayed
    expect([...first, ...rest].map((t) => `${t.method} ${t.url}`)).toEqual([
      "GET http://127.0.0.1:3000/products/1",
      "GET http://127.0.0.1:3000/products/2",
      "PUT http://127.0.0.1:3000/products/1",
      "PUT http://127.0.0.1:3000/products/3",
      "GET http://127.0.0.1:3000/products/2",
    ]);
    expect(rest[0]?.body).toBe('{"name":"n1"}');
    expect(stream.take(5)).toEqual([]);
  });

  test("several instances get the trace round-robin by position", () => {
    hold([
      ["a", "read"],
      ["b", "read"],
      ["c", "read"],
    ]);
    const urls = ["http://127.0.0.1:3000", "http://127.0.0.1:3001"];
    const targets = new TargetStream(plan({ instanceUrls: urls })).take(3);
    expect(targets.map((t) => [t.instance, t.key])).toEqual([
      [0, 1],
      [1, 2],
      [0, 3],
    ]);
  });

  test("a trace with writes and no PUT template is refused, naming the attack", () => {
    hold([
      ["a", "read"],
      ["a", "write"],
    ]);
    const reads = plan().requests.slice(0, 1);
    expect(() => new TargetStream(plan({ requests: reads }))).toThrow(
      /has writes or deletes and the attack replay has no PUT template/,
    );
    expect(() => new TargetStream(plan({ requests: plan().requests.slice(1) }))).toThrow(
      /no GET template with \{id\}/,
    );
  });

  test("a plan whose trace was never read is an error naming the file", () => {
    const unread: TraceKeys = { kind: "trace", file: "/tmp/never-read.keys" };
    const keys = { distribution: unread, keyspace: 1, seed: 1 };
    expect(() => new TargetStream(plan({ keys }))).toThrow(/never-read.keys: it was not read/);
  });
});

describe("traceRefusal", () => {
  const long: TraceKeys = { kind: "trace", file: "/tmp/long.keys" };
  const keys = { distribution: long, keyspace: 50, seed: 1 };
  hold(
    Array.from({ length: 400 }, (_, i): [string, TraceOp] => [`k${i % 50}`, "read"]),
    long,
  );

  test("a sampling tool and a closed model are refused; order-keeping tools say how", () => {
    expect(traceRefusal(plan({ keys }), "sampled")).toMatch(/order cannot be kept/);
    expect(traceRefusal(plan({ keys, model: { kind: "closed", connections: 4 } }), "prefix")).toMatch(
      /replayed at a rate/,
    );
    expect(traceRefusal(plan({ keys }), "prefix")).toBeNull();
    expect(traceOrder(plan({ keys }), "stripes")).toBe("in order per connection");
    expect(traceOrder(plan({ keys }), "prefix")).toBe("in order");
  });

  test("a plan that needs more requests than the trace holds is refused with both numbers", () => {
    // 1 s + 2 s at 100 rps: 117 + 218 targets with the list margin; 400 are enough, 200 rps is not.
    expect(traceRefusal(plan({ keys }), "stripes")).toBeNull();
    expect(traceRefusal(plan({ keys, model: { kind: "open", rateRps: 200 } }), "prefix")).toMatch(
      /holds 400 requests; .* need 638, and a trace is never replayed/,
    );
  });
});

describe("distinctReads", () => {
  test("counts GET resources per instance, never writes or probes", () => {
    const targets = [
      { method: "GET", url: "http://h/products/1", instance: 0 },
      { method: "GET", url: "http://h/products/1", instance: 1 },
      { method: "GET", url: "http://h/products/1", instance: 0 },
      { method: "PUT", url: "http://h/products/2", instance: 0 },
      { method: "GET", url: "http://h/products?category=3&page=0&size=20", instance: 0 },
    ];
    const requests = fromTargets(targets, [1, 2, 3, 4, 5]);
    expect(distinctReads(requests)).toBe(3);
    expect(distinctReads([...requests, { op: "detail", id: 9, atMs: 6, probe: true }])).toBe(3);
  });
});

describe("recordedPace", () => {
  const timed = (times: number[]) =>
    compactTrace(times.map((tsMs, i) => ({ key: `k${i % 7}`, op: "read" as const, sizeBytes: null, tsMs })));

  test("the warm-up holds the first seconds' mean rate, then one stage per recorded second", () => {
    // 10 requests in second 0, 30 in second 1, 50 in second 2, 20 in second 3.
    const times = [
      ...Array.from({ length: 10 }, (_, i) => i * 100),
      ...Array.from({ length: 30 }, (_, i) => 1_000 + i * 33),
      ...Array.from({ length: 50 }, (_, i) => 2_000 + i * 20),
      ...Array.from({ length: 20 }, (_, i) => 3_000 + i * 50),
    ];
    expect(recordedPace(timed(times), { warmupS: 2, durationS: 2 }, 1)).toEqual({
      kind: "ramping",
      startRps: 20,
      stages: [
        { targetRps: 50, durationS: 1 },
        { targetRps: 20, durationS: 1 },
      ],
    });
    // Twice as fast: run second k is trace ms 500k … 500k + 499 (5, 5, then 16 and 14 of second 1's 30).
    expect(recordedPace(timed(times), { warmupS: 2, durationS: 2 }, 2)).toEqual({
      kind: "ramping",
      startRps: 5,
      stages: [
        { targetRps: 16, durationS: 1 },
        { targetRps: 14, durationS: 1 },
      ],
    });
  });

  test("a trace without timestamps, or out of time order, is refused", () => {
    const untimed = compactTrace([{ key: "a", op: "read", sizeBytes: null, tsMs: null }]);
    expect(recordedPace(untimed, { warmupS: 1, durationS: 1 }, 1)).toBe("the trace has no timestamps");
    expect(recordedPace(timed([0, 500, 400]), { warmupS: 1, durationS: 1 }, 1)).toMatch(
      /request 3 is out of time order/,
    );
  });
});

describe("prepareTraces", () => {
  const experiment: Experiment = {
    question: "q",
    expect: "e",
    strategies: ["local"],
    repeats: 1,
    seed: { rows: 3, seed: 1, descriptionBytes: 64 },
    attacks: [{ ...plan(), keys: { distribution: KEYS, seed: 1 } } as unknown as ExperimentAttack],
  };
  const sized = compactTrace([
    { key: "a", op: "read", sizeBytes: 900, tsMs: null },
    { key: "b", op: "read", sizeBytes: null, tsMs: null },
    { key: "a", op: "write", sizeBytes: 1_200, tsMs: null },
    { key: "c", op: "read", sizeBytes: 0, tsMs: null },
    { key: "d", op: "read", sizeBytes: 40, tsMs: null },
  ]);

  test("a sized trace seeds a row per key, each sized to its key's last size; an unsized one keeps the seed", async () => {
    const prepared = await prepareTraces(experiment, async () => sized);
    if (typeof prepared === "string") throw new Error(prepared);
    const [attack] = prepared.attacks;
    expect(attack?.keys.keyspace).toBe(4);
    expect(prepared.seed.rows).toBe(4);
    const payload = attack?.seed?.payloadBytes;
    expect(payload?.kind).toBe("per-id");
    // a: its last size; b: never sized (its row keeps descriptionBytes); c: 0 bytes, the smallest a row takes.
    expect([...(payload?.kind === "per-id" ? payload.sizesByKey : [])]).toEqual([1_200, -1, 1, 40]);
    expect(attack?.seed?.rows).toBe(4);
    const unsized = await prepareTraces(experiment, async () =>
      compactTrace([{ key: "a", op: "read", sizeBytes: null, tsMs: null }]),
    );
    if (typeof unsized === "string") throw new Error(unsized);
    expect(unsized.attacks[0]?.seed).toBeUndefined();
  });

  test("attacks naming the same trace (a base twin and its attack) share one read", async () => {
    const [only] = experiment.attacks as [ExperimentAttack];
    const twins = { ...experiment, attacks: [{ ...only, name: "replay_base" }, only] };
    let reads = 0;
    const lines: string[] = [];
    const prepared = await prepareTraces(
      twins,
      async () => {
        reads++;
        return sized;
      },
      (line) => lines.push(line),
    );
    if (typeof prepared === "string") throw new Error(prepared);
    expect(reads).toBe(1);
    expect(lines.length).toBe(1);
    expect(prepared.attacks.map((attack) => attack.keys.keyspace)).toEqual([4, 4]);
  });

  test("a value over the largest payload is refused, naming the limit", async () => {
    const huge = compactTrace([{ key: "a", op: "read", sizeBytes: 5 * 1024 * 1024, tsMs: null }]);
    expect(await prepareTraces(experiment, async () => huge)).toMatch(
      /Cannot replay trace .*: Cannot size a payload: .* must be an integer in 1\.\.\d+ bytes/,
    );
  });

  test("a trace with writes is refused for an attack that sends no PUT, before any target is made", async () => {
    const [only] = experiment.attacks as [ExperimentAttack];
    const reads = { ...experiment, attacks: [{ ...only, requests: only.requests.slice(0, 1) }] };
    expect(await prepareTraces(reads, async () => sized)).toMatch(
      /^Cannot replay trace .*: it has writes or deletes and the attack replay has no PUT template with \{id\}/,
    );
    const readsOnly = compactTrace([{ key: "a", op: "read", sizeBytes: null, tsMs: null }]);
    expect(typeof (await prepareTraces(reads, async () => readsOnly))).toBe("object");
  });
});

describe("a trace's distinct keys are judged exactly", () => {
  test("one key more or less than the segment sent makes the run invalid; the exact count passes", () => {
    hold([
      ["a", "read"],
      ["b", "read"],
      ["a", "write"],
      ["c", "read"],
    ]);
    const sent = fromTargets(new TargetStream(plan()).take(4), [1, 2, 3, 4]);
    const expected = distinctExpectation(plan(), sent, 4);
    expect(expected).toEqual({ mean: 3, sd: 0, tolerance: 0 });
    const evidence: StreamEvidence = {
      targetsSent: 4,
      reused: 0,
      allowedReuseRatio: 0,
      distinctKeys: 3,
      distinctKeysExpected: expected.mean,
      distinctKeysTolerance: expected.tolerance,
      hitRatio: null,
      hitRatioExpected: null,
      hitRatioTolerance: HIT_RATIO_TOLERANCE,
      cacheErrors: 0,
      faultsDeclared: false,
      faultsReachRedis: false,
      staleChecksFailed: 0,
    };
    expect(judgeStream(evidence)).toBeNull();
    expect(judgeStream({ ...evidence, distinctKeys: 4 })).toMatch(/distinct keys: the server saw 4/);
    expect(judgeStream({ ...evidence, distinctKeys: 2 })).toMatch(/distinct keys: the server saw 2/);
  });
});
