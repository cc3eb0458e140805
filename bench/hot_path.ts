/**
 * Is the server the bottleneck that hides the cache effect? Measures, in one run, with the same load tool
 * (oha, closed model, same connections, same URL list) and the same response body:
 *   raw Bun.serve (a fixed body) · the server's local-cache hits · redis hits · none (every request hits Postgres)
 * and the limits of the parts underneath: pgbench with our own prepared query (same connection count as the
 * server's pool) and redis-benchmark GET (same connections, same value size). Prints rps and the ratios.
 * Goals (issue 3): local-hit ÷ raw ≥ 0.90; none ÷ pgbench ≥ 0.60; redis-hit ÷ redis-benchmark ≥ 0.70.
 *
 *   bun run bench:hot-path [--duration-s 5] [--connections 32] [--keys 1000]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type ServerProcess, startServer } from "../lab/cell/server_process.ts";
import { servicesUp } from "../lab/services/services.ts";
import { freePort } from "../lab/shared/ports.ts";
import { DEFAULT_SEED_PLAN, ensureSeeded } from "../seed/seed.ts";
import { DEFAULT_CONFIG } from "../server_config.ts";

const { values } = parseArgs({
  options: {
    "duration-s": { type: "string", default: "5" },
    connections: { type: "string", default: "32" },
    keys: { type: "string", default: "1000" },
  },
  strict: true,
});
const durationS = Number(values["duration-s"]);
const connections = Number(values.connections);
const keys = Number(values.keys);
const poolMax = DEFAULT_CONFIG.pgPoolMax;

const services = await servicesUp({ log: () => {} });
{
  const postgres = (await import("postgres")).default;
  const sql = postgres(services.databaseUrl, { max: 1, onnotice: () => {} });
  await ensureSeeded(sql, DEFAULT_SEED_PLAN);
  await sql.end();
}
const work = mkdtempSync(join(tmpdir(), "cachelab-hot-path-"));

function run(argv: string[]): string {
  const proc = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0)
    throw new Error(`Cannot run ${argv[0]}: exit ${proc.exitCode}: ${proc.stderr.toString()}`);
  return proc.stdout.toString();
}

/** oha, closed model, over the same list of URLs; returns successful responses per second. */
function oha(origin: string): { rps: number; non2xx: number } {
  const urls = join(work, "urls.txt");
  writeFileSync(urls, Array.from({ length: keys }, (_, i) => `${origin}/products/${i + 1}`).join("\n"));
  const out = JSON.parse(
    run([
      "oha",
      "--no-tui",
      "--output-format",
      "json",
      "-c",
      String(connections),
      "-z",
      `${durationS}s`,
      "-w",
      "-t",
      "5s",
      "--urls-from-file",
      urls,
    ]),
  ) as { summary: { total: number }; statusCodeDistribution: Record<string, number> };
  const ok = out.statusCodeDistribution["200"] ?? 0;
  const all = Object.values(out.statusCodeDistribution).reduce((a, b) => a + b, 0);
  return { rps: ok / out.summary.total, non2xx: all - ok };
}

async function measureServer(strategy: string): Promise<number> {
  const server = await startServer({
    env: {
      CACHE_STRATEGY: strategy,
      DATABASE_URL: services.databaseUrl,
      REDIS_URL: services.redisUrl,
      REDIS_KEY_PREFIX: `cachelab-bench:${process.pid}:`,
      NODE_ENV: "production",
    },
  });
  try {
    for (let id = 1; id <= keys; id++) await fetch(`${server.url}/products/${id}`); // warm every key
    const { rps, non2xx } = oha(server.url);
    if (non2xx > 0) throw new Error(`Cannot trust the ${strategy} run: ${non2xx} non-200 answers`);
    return rps;
  } finally {
    await server.stop();
  }
}

async function measureRaw(): Promise<number> {
  const body = await (async () => {
    const server: ServerProcess = await startServer({
      env: { CACHE_STRATEGY: "none", DATABASE_URL: services.databaseUrl },
    });
    try {
      return await (await fetch(`${server.url}/products/1`)).text();
    } finally {
      await server.stop();
    }
  })();
  const port = await freePort();
  const script = join(work, "raw.ts");
  writeFileSync(
    script,
    `const body = ${JSON.stringify(body)};
Bun.serve({ port: ${port}, hostname: "127.0.0.1", reusePort: false, fetch: () => new Response(body, { headers: { "content-type": "application/json" } }) });
console.log("ready");`,
  );
  const proc = Bun.spawn(["bun", script], { stdout: "pipe" });
  const reader = proc.stdout.getReader();
  await reader.read(); // "ready"
  try {
    return oha(`http://127.0.0.1:${port}`).rps;
  } finally {
    proc.kill();
    await proc.exited;
  }
}

function measurePgbench(): number {
  const script = join(work, "select.sql");
  writeFileSync(script, `\\set id random(1, ${keys})\nSELECT * FROM products WHERE id = :id;\n`);
  const out = run([
    "pgbench",
    "-n",
    "-M",
    "prepared",
    "-c",
    String(poolMax),
    "-j",
    "2",
    "-T",
    String(durationS),
    "-f",
    script,
    services.databaseUrl,
  ]);
  const match = /tps = ([\d.]+) \(without initial connection time\)/.exec(out);
  if (!match?.[1]) throw new Error(`Cannot read pgbench output: ${out}`);
  return Number(match[1]);
}

function measureRedisBenchmark(valueBytes: number): number {
  const url = new URL(services.redisUrl);
  const requests = 50_000 * durationS;
  const out = run([
    "redis-benchmark",
    "-h",
    url.hostname,
    "-p",
    url.port || "6379",
    "-t",
    "get",
    "-c",
    String(connections),
    "-n",
    String(requests),
    "-d",
    String(valueBytes),
    "-r",
    String(keys),
    "--csv",
  ]);
  const line = out.split("\n").find((row) => row.startsWith('"GET"'));
  const rps = line ? Number(line.split(",")[1]?.replaceAll('"', "")) : Number.NaN;
  if (!Number.isFinite(rps)) throw new Error(`Cannot read redis-benchmark output: ${out}`);
  return rps;
}

try {
  const raw = await measureRaw();
  const local = await measureServer("local");
  const redis = await measureServer("redis");
  const none = await measureServer("none");
  const pgbench = measurePgbench();
  const redisBenchmark = measureRedisBenchmark(400);
  const oha = run(["oha", "--version"]).trim();
  console.log(
    `oha closed model: ${connections} connections, ${durationS} s, ${keys} keys; pool ${poolMax}; ${oha}`,
  );
  const rows: [string, number][] = [
    ["raw Bun.serve", raw],
    ["local hits", local],
    ["redis hits", redis],
    ["none (Postgres)", none],
    [`pgbench -M prepared -c ${poolMax}`, pgbench],
    [`redis-benchmark GET -c ${connections}`, redisBenchmark],
  ];
  for (const [name, rps] of rows) console.log(`${name.padEnd(32)} ${rps.toFixed(0).padStart(8)} rps`);
  const ratio = (name: string, a: number, b: number, goal: number) =>
    console.log(`${name.padEnd(32)} ${(a / b).toFixed(2).padStart(8)}   (goal ≥ ${goal.toFixed(2)})`);
  ratio("local-hit ÷ raw Bun.serve", local, raw, 0.9);
  ratio("none ÷ pgbench", none, pgbench, 0.6);
  ratio("redis-hit ÷ redis-benchmark", redis, redisBenchmark, 0.7);
} finally {
  rmSync(work, { recursive: true, force: true });
}
