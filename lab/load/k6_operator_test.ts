/**
 * The k6-operator export, validated against the operator's published TestRun CRD (v1.6.0, vendored in
 * testdata), and its import round-tripped on outputs of local k6 runners started as the operator starts them.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv";
import { parse } from "csv-parse/sync";
import { main as attackMain } from "../cli/attack.ts";
import { holdTrace } from "../trace/loaded.ts";
import { compactTrace } from "../trace/trace.ts";
import { exportK6Operator, importK6Json, K6_OPERATOR_VERSION, SAMPLES_PATH } from "./k6_operator.ts";
import { nearestRank } from "./request_timeline.ts";
import { findTool } from "./run_attack.ts";
import { startTestServer, type TestServer, testPlan } from "./tools/tool_testing.ts";

const READS = [{ name: "detail", weight: 1, method: "GET" as const, path: "/products/{id}" }];

type Schema = Record<string, unknown>;

/**
 * The CRD's openAPIV3Schema as a strict JSON Schema, as `kubectl apply --validate=strict` reads it: an
 * object that lists its properties takes no others (unless it preserves unknown fields), and an
 * int-or-string is either.
 */
function strictSchema(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key.startsWith("x-kubernetes-")) continue;
    if (key === "properties") {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([name, child]) => [name, strictSchema(child)]),
      );
    } else if (key === "items" || key === "additionalProperties") {
      out[key] = typeof value === "object" ? strictSchema(value as Schema) : value;
    } else if (key !== "format") out[key] = value;
  }
  if (schema["x-kubernetes-int-or-string"] === true) {
    delete out.type;
    out.anyOf = [{ type: "integer" }, { type: "string" }];
  }
  if (
    out.properties &&
    schema["x-kubernetes-preserve-unknown-fields"] !== true &&
    !out.additionalProperties
  ) {
    out.additionalProperties = false;
  }
  return out;
}

function testRunValidator() {
  const text = readFileSync(
    join(import.meta.dir, "testdata", `k6-operator-${K6_OPERATOR_VERSION}-k6.io_testruns.yaml`),
    "utf8",
  );
  const parsed = Bun.YAML.parse(text) as Schema | Schema[];
  const crd = (Array.isArray(parsed) ? parsed[0] : parsed) as {
    spec: { versions: { name: string; schema: { openAPIV3Schema: Schema } }[] };
  };
  const version = crd.spec.versions.find((v) => v.name === "v1alpha1");
  if (!version) throw new Error("the CRD has no v1alpha1");
  const ajv = new Ajv({ strict: false, allErrors: true });
  return ajv.compile(strictSchema(version.schema.openAPIV3Schema));
}

describe("k6 operator", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer("k6");
  });
  afterAll(async () => {
    await server.stop();
  });

  test("the exported TestRun validates against the operator's published CRD; a wrong one does not", async () => {
    const plan = testPlan({ kind: "open", rateRps: 300 }, { name: "x", requests: READS, maxConnections: 50 });
    const exported = await exportK6Operator(plan, {
      parallelism: 4,
      name: "cachelab-x",
      k6Version: "1.8.1",
    });
    const validate = testRunValidator();
    expect(validate(exported.testRun), JSON.stringify(validate.errors)).toBe(true);
    // The runners run the k6 the import's rows name.
    expect((exported.testRun.spec as { runner?: unknown }).runner).toEqual({ image: "grafana/k6:1.8.1" });
    // The YAML on disk is the same object.
    expect(Bun.YAML.parse(exported.files["testrun.yaml"] as string)).toEqual(exported.testRun);
    const spec = exported.testRun.spec as Record<string, unknown>;
    for (const wrong of [
      { ...exported.testRun, spec: { ...spec, parallelism: "4" } },
      { ...exported.testRun, spec: { ...spec, paralelism: 4 } },
      { ...exported.testRun, spec: { ...spec, script: { configMap: { file: "script.js" } } } },
    ]) {
      expect(validate(wrong)).toBe(false);
    }
    await expect(exportK6Operator(plan, { parallelism: 100, name: "x" })).rejects.toThrow("maxConnections");
    await expect(exportK6Operator(plan, { parallelism: 2, name: "Bad_Name" })).rejects.toThrow("DNS label");
  });

  test("a trace goes beside the script in the ConfigMap when it fits, else on a volume claim, else it is refused naming the fix", async () => {
    const validate = testRunValidator();
    const traced = (requests: number) => {
      const keys = { kind: "trace" as const, file: `trace-${requests}.keys` };
      const ops = Array.from({ length: requests }, (_, i) => ({
        key: `k${i % 5_000}`,
        op: "read" as const,
        sizeBytes: null,
        tsMs: null,
      }));
      holdTrace(keys, compactTrace(ops));
      return testPlan(
        { kind: "open", rateRps: 300 },
        {
          name: "trace",
          requests: READS,
          keys: { distribution: keys, keyspace: 5_000, seed: 1 },
          targetCount: requests,
        },
      );
    };
    const fits = await exportK6Operator(traced(1_000), { parallelism: 2, name: "trace" });
    expect(fits.generated).toBe(false);
    const configMap = Bun.YAML.parse(fits.files["configmap.yaml"] as string) as {
      data: Record<string, string>;
    };
    expect(Object.keys(configMap.data).sort()).toEqual(["script.js", "targets.json"]);
    expect(JSON.parse(configMap.data["targets.json"] as string)).toHaveLength(1_000);
    // 30 000 targets of ~110 bytes: over a ConfigMap's 1 MiB.
    const big = traced(30_000);
    await expect(exportK6Operator(big, { parallelism: 2, name: "trace" })).rejects.toThrow(
      /cannot be generated from a seed: its requests are recorded, so its 30000 targets go beside the script as targets\.json, and the two take \d+ bytes, more than a ConfigMap holds \(1 MiB\): pass --volume-claim NAME and copy script\.js and targets\.json onto that PersistentVolumeClaim/,
    );
    const claimed = await exportK6Operator(big, {
      parallelism: 2,
      name: "trace",
      volumeClaim: "cachelab-files",
    });
    expect(Object.keys(claimed.files).sort()).toEqual(["script.js", "targets.json", "testrun.yaml"]);
    expect((claimed.testRun.spec as { script: unknown }).script).toEqual({
      volumeClaim: { name: "cachelab-files", file: "script.js", readOnly: true },
    });
    expect(validate(claimed.testRun), JSON.stringify(validate.errors)).toBe(true);
  });

  test("runners started as the operator starts them: the import's counts equal the server's, its percentiles the union's", async () => {
    const k6 = await findTool("k6");
    const { path: binary } = await k6.detect();
    const plan = testPlan(
      { kind: "open", rateRps: 300 },
      { name: "operator", requests: READS, baseUrl: server.url, maxConnections: 50, durationS: 2 },
    );
    // The script generates the plan's stream itself: the ConfigMap holds it alone.
    const exported = await exportK6Operator(plan, { parallelism: 2, name: "cachelab-rt" });
    expect(Object.keys(exported.files)).not.toContain("targets.json");
    const dir = join(server.workDir, "operator");
    mkdirSync(dir, { recursive: true });
    for (const [name, content] of Object.entries(exported.files)) writeFileSync(join(dir, name), content);
    const spec = exported.testRun.spec as { arguments: string };
    const before = await server.requestCount();
    // What the operator passes runner i of N (pkg/segmentation, jobs/runner.go), plus the TestRun's arguments.
    const outputs = await Promise.all(
      [1, 2].map(async (i) => {
        const out = join(dir, `run-${i}.json`);
        const args = spec.arguments.replace(SAMPLES_PATH, out).split(" ");
        const proc = Bun.spawn(
          [
            binary ?? "k6",
            "run",
            "--quiet",
            "--address",
            "",
            `--execution-segment=${i - 1}/2:${i}/2`,
            "--execution-segment-sequence=0,1/2,1",
            "--tag",
            `instance_id=${i}`,
            ...args,
            "script.js",
          ],
          { cwd: dir, stdout: "pipe", stderr: "pipe" },
        );
        expect(await proc.exited).toBe(0);
        return readFileSync(out, "utf8");
      }),
    );
    const served = (await server.requestCount()) - before;
    const result = importK6Json(outputs, plan, "1.8.1");
    expect(result.completed).toBe(served);
    expect(result.requests).toBeGreaterThanOrEqual(600);
    // Each of the two runners may start one iteration at its very end.
    expect(result.requests).toBeLessThanOrEqual(602);
    expect(result.sent).toEqual({ kind: "prefix", count: result.requests ?? -1 });
    const latencies = outputs
      .flatMap((text) =>
        text
          .split("\n")
          .filter((line) => line.includes('"metric":"http_req_duration"') && line.includes('"type":"Point"'))
          .map((line) => (JSON.parse(line) as { data: { value: number } }).data.value),
      )
      .sort((a, b) => a - b);
    expect(latencies).toHaveLength(result.requests ?? -1);
    expect(result.latencyMs.p50).toBe(nearestRank(latencies, 50));
    expect(result.latencyMs.p99).toBe(nearestRank(latencies, 99));
    expect(result.latencyMs.max).toBe(latencies.at(-1) ?? null);
    expect(() => importK6Json(["{not json"], plan, "1.8.1")).toThrow("line 1 is not JSON");
    // A runner's file given twice would count its requests twice; a missing one reads as dropped load.
    const [first, second] = outputs as [string, string];
    expect(() => importK6Json([first, second, second], plan, "1.8.1")).toThrow(
      "runner 2's samples are given twice (file 3 again)",
    );
    expect(() => importK6Json([second], plan, "1.8.1")).toThrow("runner 1 of at least 2 missing");
    expect(() => importK6Json([first + second], plan, "1.8.1")).toThrow(
      "file 1 holds the samples of runners 1, 2",
    );

    // The CLI's import: the same result as one row of the experiments' CSV schema.
    const csv = join(dir, "rows.csv");
    const files = [1, 2].map((i) => join(dir, `run-${i}.json`));
    const flags = ["--url", `${server.url}/products/{id}`, "--rate", "300", "--duration", "2s"];
    const code = await attackMain([
      "--import",
      "k6-json",
      ...files,
      ...flags,
      "--max-connections",
      "50",
      "--targets",
      "1000",
      "--keyspace",
      "2200",
      "--seed",
      "5",
      "--csv",
      csv,
    ]);
    expect(code).toBe(0);
    const [row] = parse(readFileSync(csv, "utf8"), { columns: true }) as Record<string, string>[];
    const local = (await (await findTool("k6")).detect()).version;
    expect(row).toMatchObject({
      experiment: "attack",
      attack: "k6-operator import",
      tool: "k6",
      tool_version: local,
      load_model: "open",
      offered_rps: "300",
      loadgen_hosts: "2",
      requests: String(result.requests),
      completed: String(result.completed),
      latency_p50_ms: String(result.latencyMs.p50),
      latency_p99_ms: String(result.latencyMs.p99),
      list_targets: "1000",
      target_reuse_ratio: "0",
      server_requests: "",
      hit_ratio: "",
      status_counts: JSON.stringify(result.statusCounts),
      // Judged as a run is: the plan's keys past the 2 000 seeded rows answer 404, errors over 1%.
      valid: "false",
      invalid_reason: expect.stringMatching(/^error ratio 0\.\d+ > 0\.01 \(\d+ of 60[012]\)$/),
    });
    expect(Number(row?.errors)).toBe(result.statusCounts?.["404"] ?? -1);
    expect(row?.topology).toStartWith("k6 operator: 2 runner pods");
  });
});
