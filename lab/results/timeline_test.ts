import { describe, expect, test } from "bun:test";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import type { SkippedRow } from "./csv_read.ts";
import {
  appendTimeline,
  faultLabels,
  faultOutcomes,
  readTimeline,
  TIMELINE_COLUMNS,
  type TimelineRow,
  timelinePath,
} from "./timeline.ts";

const START_EPOCH_S = 1_767_225_600;

/** One second of a redis-strategy vegeta run at 1 000 rps, hit ratio 0.8. */
function second(at: number, overrides: Partial<TimelineRow> = {}): TimelineRow {
  return {
    run_id: "20260101T000000-abcd1234",
    experiment: "redis_outage",
    strategy: "redis",
    tool: "vegeta",
    attack: "zipf_reads",
    repeat: 1,
    second: at,
    epoch_s: START_EPOCH_S + at,
    sent: 1_000,
    ok: 1_000,
    errors: 0,
    p50_ms: 0.24,
    p99_ms: 1.6,
    timeline_source: "vegeta per-request results",
    server_requests: 1_000,
    server_reads: 1_000,
    l1_hits: null,
    l1_misses: null,
    l2_hits: 800,
    l2_misses: 200,
    db_queries: 200,
    hit_ratio: 0.8,
    cache_errors: 0,
    faults: "",
    ...overrides,
  };
}

/** `n` seconds; `at` overrides chosen seconds. */
function run(n: number, at: Record<number, Partial<TimelineRow>> = {}): TimelineRow[] {
  return Array.from({ length: n }, (_, s) => second(s, at[s] ?? {}));
}

/** A second with this hit ratio over 1 000 reads, all looked up in Redis. */
function ratio(value: number): Partial<TimelineRow> {
  const hits = Math.round(value * 1_000);
  return { l2_hits: hits, l2_misses: 1_000 - hits, db_queries: 1_000 - hits, hit_ratio: hits / 1_000 };
}

function tempDir(): string {
  return mkdtempSync(join(testTmpdir(), "cachelab-timeline-"));
}

describe("timeline file", () => {
  test("timelinePath puts the timeline beside the experiment's CSV, versioned files included", () => {
    expect(timelinePath("results/redis_outage.csv")).toBe("results/redis_outage.timeline.csv");
    expect(timelinePath("/x/results/read_heavy.v2.csv")).toBe("/x/results/read_heavy.v2.timeline.csv");
    expect(() => timelinePath("results/x.timeline.csv")).toThrow("not a results CSV path");
    expect(() => timelinePath("results/x.json")).toThrow("not a results CSV path");
  });

  test("appendTimeline writes the header once, the columns in order, and readTimeline reads it back", () => {
    const path = join(tempDir(), "results", "redis_outage.timeline.csv");
    const first = run(3, { 1: { faults: "redis down;redis hang", p99_ms: 12.5 } });
    const wrk = run(2).map((row) => ({
      ...row,
      run_id: "other",
      tool: "wrk",
      sent: null,
      ok: null,
      errors: null,
      p50_ms: null,
      p99_ms: null,
      timeline_source: "none (wrk): server counters only",
    }));
    appendTimeline(path, first);
    appendTimeline(path, wrk);
    const text = readFileSync(path, "utf8");
    expect(text.split("\n")[0]).toBe(TIMELINE_COLUMNS.join(","));
    expect(text.match(/^run_id,/gm)).toHaveLength(1);
    expect(readTimeline(path)).toEqual([...first, ...wrk]);
  });

  test("an empty cell reads as null, never 0", () => {
    const path = join(tempDir(), "t.timeline.csv");
    appendTimeline(path, [second(0, { sent: null, p99_ms: null, l2_hits: 0 })]);
    const [row] = readTimeline(path);
    expect(row?.sent).toBeNull();
    expect(row?.p99_ms).toBeNull();
    expect(row?.l2_hits).toBe(0);
    expect(row?.l1_hits).toBeNull();
  });

  test("appendTimeline after a line cut short starts on a line of its own; a lenient read skips the cut line", () => {
    const path = join(tempDir(), "t.timeline.csv");
    appendTimeline(path, run(2));
    appendFileSync(path, "r,cut"); // a write cut short: no newline
    appendTimeline(path, run(1));
    const skipped: SkippedRow[] = [];
    expect(readTimeline(path, { onSkip: (line) => skipped.push(line) })).toHaveLength(3);
    expect(skipped).toEqual([{ path, line: 4, reason: "2 fields where the header has 24" }]);
    expect(() => readTimeline(path)).toThrow(`Cannot read ${path} line 4: 2 fields where the header has 24`);
  });

  test("readTimeline refuses another header and names the line of a malformed number", () => {
    const path = join(tempDir(), "t.timeline.csv");
    appendTimeline(path, run(3));
    const lines = readFileSync(path, "utf8").split("\n");
    const broken = (line: number, from: string, to: string) => {
      const copy = [...lines];
      copy[line - 1] = (copy[line - 1] as string).replace(from, to);
      writeFileSync(path, copy.join("\n"));
    };
    broken(3, ",1.6,", ",1.6ms,");
    expect(() => readTimeline(path)).toThrow(`${path} line 3: p99_ms is not a number: received "1.6ms"`);
    broken(4, ",1000,1000,0,", ",1000,,0,");
    expect(readTimeline(path)[2]?.ok).toBeNull();
    broken(2, ",1000,1000,0,", ",1e3x,1000,0,");
    expect(() => readTimeline(path)).toThrow("line 2: sent is not a number");
    broken(2, ",1000,1000,0,", ",1000.5,1000,0,");
    expect(() => readTimeline(path)).toThrow("line 2: sent is not an integer");
    broken(2, `,${START_EPOCH_S},`, ",,");
    expect(() => readTimeline(path)).toThrow("line 2: epoch_s is empty");
    writeFileSync(path, `${lines.join("\n")}only,three,cells\n`);
    expect(() => readTimeline(path)).toThrow(path);
    writeFileSync(path, lines.join("\n").replace("p99_ms", "p95_ms"));
    expect(() => readTimeline(path)).toThrow("its header is not the timeline schema");
    writeFileSync(path, "");
    expect(() => readTimeline(path)).toThrow("received an empty file");
  });

  test("appendTimeline never appends to a file with another header, and refuses a non-finite number", () => {
    const path = join(tempDir(), "t.timeline.csv");
    writeFileSync(path, "run_id,second\nr0,0\n");
    expect(() => appendTimeline(path, run(1))).toThrow("its header is not the timeline schema");
    expect(readFileSync(path, "utf8")).toBe("run_id,second\nr0,0\n");
    const fresh = join(tempDir(), "t.timeline.csv");
    expect(() => appendTimeline(fresh, [second(0), second(1, { p99_ms: Number.NaN })])).toThrow(
      "p99_ms of run 20260101T000000-abcd1234 second 1 is not a finite number: received NaN",
    );
    // Nothing of the refused batch was written, not even the header: a run's rows go in whole or not at all.
    expect(existsSync(fresh)).toBe(false);
  });

  test("concurrent writers never interleave partial lines and create one header", async () => {
    const path = join(tempDir(), "c.timeline.csv");
    const script = `import { appendTimeline } from "${import.meta.dir}/timeline.ts";
const id = process.argv[2];
const row = ${JSON.stringify(second(0, { timeline_source: "x".repeat(200) }))};
for (let i = 0; i < 100; i++) {
  appendTimeline(${JSON.stringify(path)}, Array.from({ length: 10 }, (_, s) => ({ ...row, run_id: id + "-" + i, second: s })));
}`;
    const file = join(tempDir(), "writer.ts");
    writeFileSync(file, script);
    const writers = ["a", "b", "c", "d"].map((id) => Bun.spawn(["bun", file, id]));
    expect(await Promise.all(writers.map((writer) => writer.exited))).toEqual([0, 0, 0, 0]);
    const rows = readTimeline(path);
    expect(rows).toHaveLength(4_000);
    expect(rows.every((row) => row.timeline_source === "x".repeat(200))).toBe(true);
    // One write per call: a run's ten seconds stay together.
    for (let i = 0; i < rows.length; i += 10) {
      const batch = rows.slice(i, i + 10);
      expect(new Set(batch.map((row) => row.run_id)).size).toBe(1);
      expect(batch.map((row) => row.second)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
  });

  test("faultLabels splits on ; and drops blanks", () => {
    expect(faultLabels({ faults: "" })).toEqual([]);
    expect(faultLabels({ faults: "redis down; redis hang;" })).toEqual(["redis down", "redis hang"]);
  });
});

describe("faultOutcomes", () => {
  test("a redis outage: worst one-second p99, failed requests and recovery of the hit ratio", () => {
    const down = { faults: "redis down", ...ratio(0), cache_errors: 1_000, db_queries: 1_000 };
    const rows = run(20, {
      2: ratio(0.79),
      3: ratio(0.8),
      4: ratio(0.81),
      5: { ...down, p99_ms: 3.1, errors: 2, ok: 998 },
      6: { ...down, p99_ms: 4.8, errors: 5, ok: 995 },
      7: { ...down, p99_ms: 2.2 },
      8: { ...down, p99_ms: 2.0 },
      9: { ...down, p99_ms: 2.4 },
      // Redis restarted empty: the hit ratio climbs back.
      10: ratio(0.45),
      11: ratio(0.62),
      12: ratio(0.71),
      13: ratio(0.77),
    });
    expect(faultOutcomes(rows)).toEqual([
      {
        fault: "redis down",
        startS: 5,
        endS: 9,
        worstP99Ms: 4.8,
        failed: 7,
        hitRatioBefore: expect.closeTo(0.8, 10) as unknown as number,
        recoveryS: 3,
        recoveryNote: null,
      },
    ]);
  });

  test("recovery 0: the first second after the window is already back within 5%", () => {
    const rows = run(10, { 4: { faults: "redis hang", p99_ms: 250 }, 5: ratio(0.762) });
    expect(faultOutcomes(rows)[0]).toMatchObject({ startS: 4, endS: 4, worstP99Ms: 250, recoveryS: 0 });
  });

  test("the tolerance is relative to the mean before, and its boundary counts as back", () => {
    // Mean before 0.8: within 5% is 0.76 … 0.84; 0.75 is out, 0.76 is back.
    const rows = run(10, { 3: { faults: "redis down" }, 4: ratio(0.5), 5: ratio(0.75), 6: ratio(0.76) });
    expect(faultOutcomes(rows)[0]?.recoveryS).toBe(2);
    const above = run(10, { 3: { faults: "redis down" }, 4: ratio(0.85), 5: ratio(0.84) });
    expect(faultOutcomes(above)[0]?.recoveryS).toBe(1);
    expect(faultOutcomes(above, { toleranceRatio: 0.1 })[0]?.recoveryS).toBe(0);
  });

  test("never back within the run: recovery is null and says so", () => {
    const rows = run(8, {
      3: { faults: "redis down" },
      4: ratio(0.5),
      5: ratio(0.6),
      6: ratio(0.7),
      7: ratio(0.7),
    });
    expect(faultOutcomes(rows)[0]).toMatchObject({
      hitRatioBefore: expect.closeTo(0.8, 10),
      recoveryS: null,
      recoveryNote: "not back within 5% before the run ended",
    });
    const lastSecond = run(5, { 4: { faults: "redis down" } });
    expect(faultOutcomes(lastSecond)[0]?.recoveryNote).toBe("not back within 5% before the run ended");
  });

  test("a window in the first 3 seconds has no baseline", () => {
    const rows = run(10, { 2: { faults: "redis down" } });
    expect(faultOutcomes(rows)[0]).toMatchObject({
      hitRatioBefore: null,
      recoveryS: null,
      recoveryNote: "fewer than 3 s before the window",
    });
    expect(faultOutcomes(rows, { baselineS: 2 })[0]?.recoveryS).toBe(0);
  });

  test("a baseline second under another fault or without lookups gives no baseline", () => {
    const after = run(12, {
      5: { faults: "redis hang" },
      6: { faults: "redis down" },
      7: { faults: "redis down" },
    });
    expect(faultOutcomes(after).map((o) => [o.fault, o.recoveryNote])).toEqual([
      ["redis hang", null],
      ["redis down", "a fault was in force in the 3 s before the window"],
    ]);
    const idle = run(10, {
      3: { server_reads: 0, l2_hits: 0, l2_misses: 0, db_queries: 0, hit_ratio: null },
      5: { faults: "redis down" },
    });
    expect(faultOutcomes(idle)[0]?.recoveryNote).toBe("no reads in second 3, before the window");
  });

  test("a strategy without a cache tier has no recovery; two_tier's counts reads its L2 answers as hits", () => {
    const none = run(10, { 5: { faults: "redis down" } }).map((row) => ({
      ...row,
      strategy: "none",
      l2_hits: null,
      l2_misses: null,
    }));
    expect(faultOutcomes(none)[0]).toMatchObject({ recoveryS: null, recoveryNote: "no cache tier" });
    // two_tier: L1 answers 700 of 1 000 reads, L2 100 of its 300 lookups (hit ratio 0.8). Redis is down at
    // second 5; in second 6 L1 has been flushed (resubscribed) and L2 answers what it misses: the database
    // is spared as before, so the hit ratio is back at once, though L1's own ratio is not.
    const tiers = { l1_hits: 700, l1_misses: 300, l2_hits: 100, l2_misses: 200, db_queries: 200 };
    const at: Record<number, Partial<TimelineRow>> = {
      5: { faults: "redis down", l2_hits: 0, l2_misses: 300, db_queries: 300, hit_ratio: 0.7 },
      6: { l1_hits: 300, l1_misses: 700, l2_hits: 500, l2_misses: 200, db_queries: 200 },
    };
    const twoTier = Array.from({ length: 10 }, (_, s) =>
      second(s, { strategy: "two_tier", ...tiers, ...(at[s] ?? {}) }),
    );
    expect(faultOutcomes(twoTier)[0]).toMatchObject({
      hitRatioBefore: expect.closeTo(0.8, 10),
      recoveryS: 0,
    });
  });

  test("each label's contiguous seconds are one window; overlaps and gaps split as they should", () => {
    const rows = run(20, {
      4: { faults: "redis hang" },
      5: { faults: "redis hang;redis down" },
      6: { faults: "redis down" },
      12: { faults: "redis down" },
    });
    expect(faultOutcomes(rows).map((o) => [o.fault, o.startS, o.endS])).toEqual([
      ["redis hang", 4, 5],
      ["redis down", 5, 6],
      ["redis down", 12, 12],
    ]);
    // A missing second ends a window: what happened in it is unknown.
    const gap = run(10, { 4: { faults: "redis down" }, 6: { faults: "redis down" } }).filter(
      (row) => row.second !== 5,
    );
    expect(faultOutcomes(gap).map((o) => [o.startS, o.endS])).toEqual([
      [4, 4],
      [6, 6],
    ]);
  });

  test("a tool without per-request results gives null p99 and failed, not 0", () => {
    const rows = run(10, { 5: { faults: "redis down" } }).map((row) => ({
      ...row,
      tool: "wrk",
      sent: null,
      ok: null,
      errors: null,
      p50_ms: null,
      p99_ms: null,
    }));
    expect(faultOutcomes(rows)[0]).toMatchObject({ worstP99Ms: null, failed: null, recoveryS: 0 });
  });

  test("no faults: no windows; rows in any order; rows of several runs or a repeated second are refused", () => {
    expect(faultOutcomes(run(10))).toEqual([]);
    const shuffled = run(10, { 5: { faults: "redis down", p99_ms: 9 } }).reverse();
    expect(faultOutcomes(shuffled)[0]).toMatchObject({ startS: 5, endS: 5, worstP99Ms: 9, recoveryS: 0 });
    expect(() => faultOutcomes([...run(2), second(2, { repeat: 2 })])).toThrow(
      "the rows are from several runs",
    );
    expect(() => faultOutcomes([...run(2), second(1)])).toThrow("second 1 appears twice");
  });
});
