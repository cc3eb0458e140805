/**
 * A user's trace through the whole run, in every format the readers take: the rows are valid, their hit
 * ratios equal their simulations of the exact segment sent, and the distinct keys the server saw equal the
 * segment's exactly. A trace whose plan would run past its end, or with a bad line, stops before any row.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync, zstdCompressSync } from "node:zlib";
import type { TraceKeys } from "../plan/attack_plan.ts";
import type { ExperimentAttack } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { SAMPLE_TRACE_DEFAULTS, sampleTrace } from "../trace/sample_trace.ts";
import { num, runRows, seededServices, testExperiment } from "./run_testing.ts";

// Its own database: the trace's keys become more rows than the other runner tests seed.
const SEED = { rows: 3_000, seed: 9, descriptionBytes: 64 };
let services: Services;
beforeAll(async () => {
  services = await seededServices(SEED);
});

const dir = mkdtempSync(join(testTmpdir(), "cachelab-run-trace-"));
// 2 400 requests of the sample's shape: 1.5 s + 2.5 s at 500 rps need 2 056 of them.
const csv = sampleTrace({ ...SAMPLE_TRACE_DEFAULTS, requests: 2_400, catalogKeys: 800 });
const requests = csv
  .trim()
  .split("\n")
  .slice(1)
  .map((line) => {
    const [ts, key, op, size] = line.split(",") as [string, string, string, string];
    return { tsMs: Number(ts), key, op, size: Number(size) };
  });
const numeric = new Map<string, number>();
const idOf = (key: string) => numeric.get(key) ?? numeric.set(key, numeric.size + 1).get(key);

/** The sample written in each format (the same keys and operations, as each format spells them). */
const files: Record<string, TraceKeys> = {
  csv: { kind: "trace", file: write("t.csv.gz", gzipSync(csv)) },
  keys: { kind: "trace", file: write("t.txt", requests.map((r) => r.key).join("\n")) },
  twitter: {
    kind: "trace",
    format: "twitter",
    file: write(
      "cluster_t.zst",
      zstdCompressSync(
        requests
          .map((r) => `${Math.floor(r.tsMs / 1_000)},${r.key},${r.key.length},${r.size},7,${r.op},0`)
          .join("\n"),
      ),
    ),
  },
  delimited: {
    kind: "trace",
    format: "delimited",
    columns: "time-col=1,key-col=3,op-col=2,has-header=false,delimiter=\\t",
    file: write("t.tsv", requests.map((r) => `${Math.floor(r.tsMs / 1_000)}\t${r.op}\t${r.key}`).join("\n")),
  },
  "access-log": {
    kind: "trace",
    route: "^/api/products/(\\d+)$",
    file: write(
      "access.log",
      [
        ...requests.map((r) => {
          const method = r.op === "get" ? "GET" : r.op === "set" ? "PUT" : "DELETE";
          return `10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "${method} /api/products/${idOf(r.key)} HTTP/1.1" 200 ${r.size} "-" "app"`;
        }),
        '10.0.0.1 - - [10/Oct/2000:13:55:37 -0700] "GET /health HTTP/1.1" 200 15 "-" "probe"',
      ].join("\n"),
    ),
  },
};

function write(name: string, content: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function replay(keys: TraceKeys, overrides: Partial<ExperimentAttack> = {}): ExperimentAttack {
  return {
    name: "replay",
    model: { kind: "open", rateRps: 500 },
    durationS: 2.5,
    warmupS: 1.5,
    requests: [
      { name: "read", weight: 1, method: "GET", path: "/products/{id}" },
      { name: "write", weight: 1, method: "PUT", path: "/products/{id}", body: '{"stock":3}' },
    ],
    keys: { distribution: keys, seed: 3 },
    ...overrides,
  };
}

describe("a trace through the whole run", () => {
  for (const [format, keys] of Object.entries(files)) {
    test(`${format}: valid rows whose hit ratio and distinct keys equal the simulation's and the segment's`, async () => {
      const strategies = format === "csv" ? (["local", "two_tier"] as const) : (["local"] as const);
      const rows = await runRows(
        testExperiment([replay(keys)], { seed: SEED, strategies: [...strategies] }),
        {
          name: `trace-${format}`,
          services,
        },
      );
      if (typeof rows === "string") throw new Error(rows);
      expect(rows).toHaveLength(strategies.length);
      for (const row of rows) {
        expect(row.invalid_reason).toBe("");
        expect(row.valid).toBe("true");
        expect(row.key_distribution).toBe("trace");
        expect(row.trace_order).toBe("in order");
        expect(num(row, "trace_requests")).toBe(2_400);
        expect(num(row, "trace_skipped_lines")).toBe(format === "access-log" ? 1 : 0);
        expect(num(row, "hit_ratio")).toBeGreaterThan(0.2);
        expect(Math.abs(num(row, "hit_ratio") - num(row, "hit_ratio_expected"))).toBeLessThanOrEqual(0.02);
        expect(num(row, "distinct_keys")).toBe(num(row, "distinct_keys_expected"));
        expect(num(row, "targets_sent")).toBeGreaterThanOrEqual(1_240);
      }
    }, 90_000);
  }

  test("a plan longer than its trace, and a trace with a bad line, stop before any row", async () => {
    const long = await runRows(
      testExperiment([replay(files.csv as TraceKeys, { durationS: 10 })], { seed: SEED }),
      {
        name: "trace-long",
        services,
      },
    );
    expect(long).toMatch(
      /holds 2400 requests; a 1.5 s warm-up and a 10 s run of replay need \d+, and a trace is never replayed/,
    );
    const bad: TraceKeys = { kind: "trace", format: "csv", file: write("bad.csv", "ts_ms,key\n1,a\nx,b\n") };
    const refused = await runRows(testExperiment([replay(bad)], { seed: SEED }), {
      name: "trace-bad",
      services,
    });
    expect(refused).toMatch(/bad.csv: line 3/);
  }, 30_000);
});
