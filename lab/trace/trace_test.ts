import { describe, expect, test } from "bun:test";
import { compactTrace, TRACE_OPS, type TraceRequest } from "./trace.ts";

const read = (key: string, sizeBytes: number | null = null, tsMs: number | null = null): TraceRequest => ({
  key,
  op: "read",
  sizeBytes,
  tsMs,
});

describe("compactTrace", () => {
  test("interns keys in first-seen order and keeps every request in order", () => {
    const requests = Array.from({ length: 5_000 }, (_, i) => read(`k${(i * 7) % 1_300}`));
    requests.push({ key: "k1", op: "write", sizeBytes: null, tsMs: null });
    const trace = compactTrace(requests);
    expect(trace.keyIndex.length).toBe(5_001);
    expect(trace.keys.length).toBe(1_300);
    for (let i = 0; i < requests.length; i++) {
      expect(trace.keys[trace.keyIndex[i] as number]).toBe(requests[i]?.key as string);
    }
    expect(trace.keys.slice(0, 3)).toEqual(["k0", "k7", "k14"]);
    expect(TRACE_OPS[trace.op[5_000] as number]).toBe("write");
    expect(trace.sizeBytes).toBeNull();
    expect(trace.tsMs).toBeNull();
  });

  test("sizes and times that start part-way mark the earlier requests as unknown", () => {
    const trace = compactTrace([read("a"), read("b", 300, 5), read("a", null, 7)]);
    expect([...(trace.sizeBytes ?? [])]).toEqual([-1, 300, -1]);
    expect([...(trace.tsMs ?? [])]).toEqual([Number.NaN, 5, 7]);
  });
});
