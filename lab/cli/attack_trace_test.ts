/**
 * `bun run attack --trace`: a trace replayed in order against a reset cachelab server gives a row whose hit
 * ratio equals the simulation of what was sent and whose distinct keys are exactly the segment's; a tool
 * that cannot keep the order, and a trace too short for the plan, exit 2 before anything is sent.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { type ServerProcess, startServer } from "../cell/server_process.ts";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { testDatabaseUrl } from "../shared/testing.ts";

const dir = mkdtempSync(join(testTmpdir(), "cachelab-attack-trace-"));
const trace = join(dir, "t.txt");
// 1 200 requests over 150 keys, one in seven a key never seen before.
writeFileSync(
  trace,
  Array.from({ length: 1_200 }, (_, i) => (i % 7 === 0 ? `new:${i}` : `k${(i * 13) % 150}`)).join("\n"),
);
const cli = join(import.meta.dir, "attack.ts");
let server: ServerProcess;

beforeAll(async () => {
  const databaseUrl = await testDatabaseUrl({ rows: 2_000, seed: 7, descriptionBytes: 64 });
  server = await startServer({ env: { CACHE_STRATEGY: "local", DATABASE_URL: databaseUrl } });
});
afterAll(async () => {
  await server.stop();
});

async function attack(...args: string[]) {
  const proc = Bun.spawn(["bun", cli, "--url", `${server.url}/products/{id}`, "--trace", trace, ...args], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, CACHELAB_ADMIN_TOKEN: server.adminToken ?? "" },
  });
  const [stdout, stderr] = [await new Response(proc.stdout).text(), await new Response(proc.stderr).text()];
  return { code: await proc.exited, output: stdout + stderr };
}

describe("bun run attack --trace", () => {
  test("a reset server's row: hit ratio equal to the simulation, distinct keys exactly the segment's", async () => {
    const csv = join(dir, "rows.csv");
    const out = join(dir, "raw");
    const { code, output } = await attack(
      "--rate",
      "200",
      "--warmup",
      "1s",
      "--duration",
      "2s",
      "--reset",
      "--csv",
      csv,
      "--out",
      out,
    );
    expect(output).toContain("targets:");
    expect(code).toBe(0);
    const [row] = parse(await Bun.file(csv).text(), { columns: true }) as Record<string, string>[];
    expect(row?.invalid_reason).toBe("");
    expect(row?.key_distribution).toBe("trace");
    expect(Number(row?.keyspace)).toBe(150 + 172);
    expect(Math.abs(Number(row?.hit_ratio) - Number(row?.hit_ratio_expected))).toBeLessThanOrEqual(0.02);
    expect(Number(row?.hit_ratio)).toBeGreaterThan(0.5);
    expect(Number(row?.distinct_keys)).toBe(Number(row?.distinct_keys_expected));
  }, 60_000);

  test("oha cannot keep the order, and a trace shorter than the plan is never replayed: exit 2", async () => {
    const oha = await attack("--rate", "100", "--duration", "1s", "--tool", "oha");
    expect(oha.code).toBe(2);
    expect(oha.output).toContain("Cannot replay the trace with oha: it draws each request at random");
    const long = await attack("--rate", "1000", "--duration", "2s");
    expect(long.code).toBe(2);
    expect(long.output).toContain("it holds 1200 requests");
  }, 30_000);
});
