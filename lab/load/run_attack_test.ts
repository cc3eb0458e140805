/**
 * End to end through every real tool: the keys a server actually receives follow the plan's Zipf
 * distribution. The server here is a tiny recording HTTP server (the subject is the load path, not the lab's
 * server), answering every /products/:id with 200.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { type AttackPlan, type LoadModel, TOOL_NAMES, type ToolName } from "../plan/attack_plan.ts";
import { generateTargets, rankProbabilities, rankToId } from "../plan/targets.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { findTool, runAttack, runTool } from "./run_attack.ts";

const KEYSPACE = 200;
const SEED = 11;
/** Rank buckets (0-based, end exclusive) compared between what the server saw and the distribution. */
const BUCKETS: [number, number][] = [
  [0, 1],
  [1, 3],
  [3, 10],
  [10, 50],
  [50, KEYSPACE],
];

let server: Server<undefined>;
const seen = new Map<number, number>();

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(request) {
      const id = Number(new URL(request.url).pathname.split("/")[2]);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      return new Response(`{"id":${id}}`, { headers: { "content-type": "application/json" } });
    },
  });
});
afterAll(() => {
  server.stop(true);
});

function plan(model: LoadModel): AttackPlan {
  return {
    name: "zipf",
    baseUrl: `http://127.0.0.1:${server.port}`,
    model,
    durationS: 2,
    warmupS: 0,
    timeoutS: 2,
    headers: {},
    requests: [{ name: "detail", weight: 1, method: "GET", path: "/products/{id}" }],
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, keyspace: KEYSPACE, seed: SEED },
    targetCount: 5_000,
    maxConnections: 32,
  };
}

const MODELS: Record<ToolName, LoadModel> = {
  oha: { kind: "open", rateRps: 400 },
  vegeta: { kind: "open", rateRps: 400 },
  k6: { kind: "open", rateRps: 400 },
  wrk: { kind: "closed", connections: 2 },
  autocannon: { kind: "closed", connections: 2 },
};

describe("key distribution through the real tools", () => {
  for (const name of TOOL_NAMES) {
    test(`${name}: the keys the server receives follow Zipf(1.1)`, async () => {
      seen.clear();
      const workDir = mkdtempSync(join(testTmpdir(), `cachelab-zipf-${name}-`));
      const run = await runAttack(plan(MODELS[name]), { tool: name, workDir });
      const total = [...seen.values()].reduce((a, b) => a + b, 0);
      expect(total).toBeGreaterThanOrEqual(500);
      // Closed models may leave one request per connection in flight at cut-off: sent, never counted.
      const model = MODELS[name];
      const inFlight = model.kind === "closed" ? model.connections : 0;
      expect(total - (run.measured.result.completed ?? 0)).toBeWithin(0, inFlight + 1);
      const ids = rankToId(KEYSPACE, SEED);
      const expected = rankProbabilities(plan(MODELS[name]).keys);
      let distance = 0;
      for (const [from, to] of BUCKETS) {
        let observed = 0;
        let probability = 0;
        for (let rank = from; rank < to; rank++) {
          observed += (seen.get(ids[rank] as number) ?? 0) / total;
          probability += expected[rank] as number;
        }
        distance += Math.abs(observed - probability) / 2;
      }
      // A uniform mix would be ~0.6 away; a correct Zipf sample of ≥ 500 requests stays well under 0.08.
      expect(distance).toBeLessThan(0.08);
    });
  }
});

describe("a run directory", () => {
  test("an old run's output is cleared first, so a failed run is never parsed as the old one", async () => {
    const workDir = mkdtempSync(join(testTmpdir(), "cachelab-stale-output-"));
    const oha = await findTool("oha");
    const detection = await oha.detect();
    const p = plan({ kind: "open", rateRps: 100 });
    const options = { targets: generateTargets(p, 200), durationS: 1, workDir, label: "measured" };
    const good = await runTool(oha, p, { ...options, detection });
    expect(existsSync(join(workDir, "measured", "oha.json"))).toBe(true);
    // The same label again, with a binary that fails before writing anything.
    const bin = mkdtempSync(join(testTmpdir(), "cachelab-failing-oha-"));
    writeFileSync(join(bin, "oha"), "#!/bin/sh\necho boom >&2\nexit 3\n");
    chmodSync(join(bin, "oha"), 0o755);
    const failing = runTool(oha, p, { ...options, detection: { ...detection, path: join(bin, "oha") } });
    expect(good.result.completed).toBeGreaterThan(50);
    await expect(failing).rejects.toThrow("oha.json");
  });
});
