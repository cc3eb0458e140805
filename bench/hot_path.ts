/**
 * Is the server the bottleneck that hides the cache effect? Each ratio sets a server path against the part
 * underneath it doing the same work, measured in the same run, interleaved run by run:
 *   P0 = local-cache hits ÷ a bare Elysia route answering the same body (the handler's own cost, issue 20)
 *   P1 = local-cache hits ÷ raw Bun.serve answering the same body (HTTP side: the framework and the strategy)
 *   P2 = none (every request one product query) ÷ pgbench running the server's own JSON-building SELECT,
 *        prepared, with as many clients as the server's pool (Postgres side, per PG_DRIVER)
 *   P3 = redis hits ÷ redis-benchmark GET of the same value size, with as many clients as the HTTP
 *        connections (the requests in flight; Redis side, per REDIS_CLIENT)
 * and their ceilings (bench/_ceilings.ts): a bare Bun.serve route doing the same query (per driver) or GET
 * (ioredis, node-redis, Bun's client) and nothing else; P2 and P3 are also read against them (goal: within 10%).
 * HTTP load: a closed model (`--connections`) over the same warmed ids, with oha and with wrk (1 thread, a
 * Lua script drawing the id), so a ratio is never one tool's artefact. Every run repeats the whole set in
 * the same order; the table gives the median and the range over the runs, ratios computed run by run.
 * P0 and P1 are also read from each server's own CPU time per response (/proc), which a busy machine moves
 * less than its throughput.
 *   M  = local-cache hits with METRICS=1 ÷ the same without (what GET /metrics's request timing costs)
 *   S  = a server's CPU per local hit at a fixed 20 000 rps with MAX_EVENT_LOOP_DELAY_MS=0 ÷ the default
 *        (what the event-loop sampler of server/loop_delay.ts costs below saturation; oha only)
 *   T  = local-cache hits (the server's tier timing on, its default) ÷ the same with TIER_TIMING=0, both
 *        served by one process (bench/_timing_pair.ts), the load alternating between them slice by slice
 * Goals: P0 ≥ 0.95; P1 ≥ 0.90, P2 ≥ 0.60, P3 ≥ 0.70; M ≥ 0.95; S ≥ 0.99; T ≥ 0.98.
 *
 * `--against REV` also measures REV's server.ts (checked out apart) in every round: a before/after of P0.
 * `--pin` puts each HTTP server on CPU 0 and its load tool on CPU 1 (taskset): on a 2-core VM the scheduler
 * otherwise moves them onto one core now and then, and a round's figures swing by a quarter.
 *
 *   bun run bench:hot-path [--duration-s 5] [--connections 32] [--keys 1000] [--runs 3] [--tools oha,wrk]
 *                          [--against REV] [--pin] [--only GROUPS]
 * `--only` measures some groups: base (raw Bun.serve, bare Elysia, local hits), metrics (local hits with and
 * without METRICS=1), timing (local hits with and without TIER_TIMING=0), shed (local hits at a fixed rate with
 * and without the event-loop sampler), redis, none (with pgbench and redis-benchmark); all by default.
 */
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processUsage } from "../lab/cell/counters.ts";
import { type ServerProcess, startServer } from "../lab/cell/server_process.ts";
import { LAB_ACQUIRE_TIMEOUT_MS } from "../lab/plan/experiment_plan.ts";
import { freePort } from "../lab/shared/ports.ts";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import { DEFAULT_CONFIG, PG_DRIVERS } from "../server_config.ts";
import { benchArgs, pinning, positiveInt } from "./_args.ts";
import {
  CEILING_CLIENTS,
  drizzleCeiling,
  getCeiling,
  localCeiling,
  productQuery,
  queryCeiling,
  strategyCeiling,
} from "./_ceilings.ts";
import { seededServices } from "./_seeded.ts";
import { median, spread, timingCost } from "./_tier_timing_cost.ts";
import { verify } from "./_verify.ts";
import { wrk as runWrk } from "./_wrk.ts";

const REDIS_CLIENTS = ["ioredis", "bun"] as const;
const TOOLS = ["oha", "wrk"] as const;
type HttpTool = (typeof TOOLS)[number];

const values = benchArgs(
  "bun run bench:hot-path [--duration-s 5] [--connections 32] [--keys 1000] [--runs 3] [--tools oha,wrk] [--against REV] [--pin] [--only GROUPS]",
  {
    "duration-s": { type: "string", default: "5" },
    connections: { type: "string", default: "32" },
    keys: { type: "string", default: "1000" },
    runs: { type: "string", default: "3" },
    tools: { type: "string", default: TOOLS.join(",") },
    against: { type: "string" },
    pin: { type: "boolean", default: false },
    only: { type: "string", default: "base,metrics,timing,shed,redis,none" },
  },
);
const durationS = positiveInt("duration-s", values["duration-s"]);
const connections = positiveInt("connections", values.connections);
const keys = positiveInt("keys", values.keys);
const runs = positiveInt("runs", values.runs);
const tools = (values.tools ?? "").split(",") as HttpTool[];
for (const tool of tools) {
  if (!(TOOLS as readonly string[]).includes(tool)) {
    console.error(`--tools takes ${TOOLS.join(", ")}: received ${tool}`);
    process.exit(2);
  }
}
const GROUPS = ["base", "metrics", "timing", "shed", "redis", "none"] as const;
/** Ratio S's fixed arrival rate: about a quarter of what a server answers in local hits here. */
const SHED_RATE_RPS = 20_000;
const only = new Set((values.only ?? "").split(","));
for (const group of only) {
  if (!(GROUPS as readonly string[]).includes(group)) {
    console.error(`--only takes ${GROUPS.join(", ")}: received ${group}`);
    process.exit(2);
  }
}
const poolMax = DEFAULT_CONFIG.pgPoolMax;
// --pin: every HTTP server on CPU 0 and its load tool on CPU 1.
const { server: serverCpu, tool: toolCpu } = pinning(values.pin);
// --against REV: that commit's server.ts too, checked out apart, its local hits measured in every round.
const against = values.against;
if (
  against !== undefined &&
  Bun.spawnSync(["git", "-C", REPO_ROOT, "rev-parse", "--verify", `${against}^{commit}`]).exitCode !== 0
) {
  console.error(`--against takes a commit of this repository: received ${against}`);
  process.exit(2);
}

const services = await seededServices();
const work = mkdtempSync(join(tmpdir(), "cachelab-hot-path-"));
const againstDir = join(work, "against");
if (against !== undefined) {
  run(["git", "-C", REPO_ROOT, "worktree", "add", "--detach", againstDir, against]);
  symlinkSync(join(REPO_ROOT, "node_modules"), join(againstDir, "node_modules"));
}

function run(argv: string[]): string {
  const proc = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0)
    throw new Error(`Cannot run ${argv[0]}: exit ${proc.exitCode}: ${proc.stderr.toString()}`);
  return proc.stdout.toString();
}

/** A tool's version line (wrk prints it with exit code 1). */
function versionLine(argv: string[]): string {
  const proc = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return `${proc.stdout.toString()}${proc.stderr.toString()}`.split("\n")[0]?.trim() ?? argv[0] ?? "";
}

/** oha, closed model, over the warmed ids; successful responses per second. */
/** A run's successful responses and how long it lasted, as the tool measured it. */
interface Run {
  ok: number;
  seconds: number;
}

function oha(origin: string, rateRps?: number): Run {
  const urls = join(work, "urls.txt");
  writeFileSync(urls, Array.from({ length: keys }, (_, i) => `${origin}/products/${i + 1}`).join("\n"));
  const out = JSON.parse(
    run([
      ...toolCpu,
      "oha",
      "--no-tui",
      "--output-format",
      "json",
      "-c",
      String(connections),
      // An open model at a fixed rate below saturation (ratio S), else a closed one.
      ...(rateRps === undefined ? [] : ["-q", String(rateRps)]),
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
  if (all !== ok) throw new Error(`Cannot trust the run: ${all - ok} non-200 answers`);
  return { ok, seconds: out.summary.total };
}

/** wrk, 1 thread, the same connections, a random warmed id per request (bench/_wrk.ts). */
function wrk(origin: string): Run {
  return runWrk(origin, { connections, durationS, keys, work, prefix: toolCpu });
}

/** A server's throughput and, read from /proc, the CPU it spent per response: a busy machine moves it less. */
interface Figure {
  rps: number;
  cpuUs: number;
}

function http(tool: HttpTool, origin: string, pid: number, rateRps?: number): Figure {
  const before = processUsage(pid);
  const { ok, seconds } = tool === "oha" ? oha(origin, rateRps) : wrk(origin);
  const after = processUsage(pid);
  if (before === null || after === null) throw new Error(`Cannot read the CPU time of server ${pid}`);
  return { rps: ok / seconds, cpuUs: ((after.cpuS - before.cpuS) * 1e6) / ok };
}

async function measureServer(
  env: Record<string, string>,
  tool: HttpTool,
  body: string,
  entry?: string,
  rateRps?: number,
): Promise<Figure> {
  const server = await startServer({
    ...(entry === undefined ? {} : { entry }),
    prefix: serverCpu,
    env: {
      DATABASE_URL: services.databaseUrl,
      REDIS_URL: services.redisUrl,
      REDIS_KEY_PREFIX: `cachelab-bench:${process.pid}:`,
      NODE_ENV: "production",
      // As the lab's cells run it (LAB_ACQUIRE_TIMEOUT_MS): without the admission gate.
      PG_ACQUIRE_TIMEOUT_MS: String(LAB_ACQUIRE_TIMEOUT_MS),
      ...env,
    },
  });
  try {
    for (let id = 1; id <= keys; id++) await fetch(`${server.url}/products/${id}`); // warm every key
    await verify(`the server (${JSON.stringify(env)})`, server.url, body);
    return http(tool, server.url, server.pid, rateRps);
  } finally {
    await server.stop();
  }
}

/**
 * Ratio T from one process serving local hits twice, timing on and off (bench/_timing_pair.ts), the load
 * moved between them slice by slice (on, off, off, on: each order once, so drift falls on both alike).
 */
async function measureTimingPair(tool: HttpTool, round: number): Promise<[Figure, Figure][]> {
  const untimedPort = await freePort();
  const server = await startServer({
    entry: join(REPO_ROOT, "bench", "_timing_pair.ts"),
    prefix: serverCpu,
    env: {
      CACHE_STRATEGY: "local",
      DATABASE_URL: services.databaseUrl,
      REDIS_URL: services.redisUrl,
      NODE_ENV: "production",
      PG_ACQUIRE_TIMEOUT_MS: String(LAB_ACQUIRE_TIMEOUT_MS),
      PORT_UNTIMED: String(untimedPort),
    },
  });
  const timed = server.url;
  const untimed = `http://127.0.0.1:${untimedPort}`;
  try {
    for (const origin of [timed, untimed])
      for (let id = 1; id <= keys; id++) await fetch(`${origin}/products/${id}`); // warm every key
    const pairs: [Figure, Figure][] = [];
    for (const onFirst of round % 2 === 1 ? [true, false] : [false, true]) {
      const first = http(tool, onFirst ? timed : untimed, server.pid);
      const second = http(tool, onFirst ? untimed : timed, server.pid);
      pairs.push(onFirst ? [first, second] : [second, first]);
    }
    return pairs;
  } finally {
    await server.stop();
  }
}

/** The body the server answers for id 1 (≈ the value size every path moves). */
async function productBody(): Promise<string> {
  const server: ServerProcess = await startServer({
    env: { CACHE_STRATEGY: "none", DATABASE_URL: services.databaseUrl },
  });
  try {
    return await (await fetch(`${server.url}/products/1`)).text();
  } finally {
    await server.stop();
  }
}

/**
 * Runs `source` (a server that prints "ready" once it listens on `port`) as a script and measures it, once it
 * has answered `GET /products/1` with `body`.
 */
async function measureScript(
  name: string,
  source: (port: number) => string,
  tool: HttpTool,
  body: string,
): Promise<Figure> {
  const port = await freePort();
  const script = join(work, `${name}.ts`);
  writeFileSync(script, source(port));
  // As the lab's servers run: NODE_ENV=production, which turns Bun.serve's development mode off.
  const env = { ...process.env, NODE_ENV: "production" };
  const proc = Bun.spawn([...serverCpu, "bun", script], { stdout: "pipe", env });
  await proc.stdout.getReader().read(); // "ready"
  try {
    await verify(name, `http://127.0.0.1:${port}`, body);
    return http(tool, `http://127.0.0.1:${port}`, proc.pid);
  } finally {
    proc.kill();
    await proc.exited;
  }
}

/** Raw Bun.serve answering the same bytes: the floor under any framework. */
function measureRaw(body: string, tool: HttpTool): Promise<Figure> {
  return measureScript(
    "raw",
    (port) => `const body = ${JSON.stringify(body)};
const headers = new Headers({ "content-type": "application/json" }); // built once, as server.ts's
Bun.serve({ port: ${port}, hostname: "127.0.0.1", reusePort: false, fetch: () => new Response(body, { headers }) });
console.log("ready");`,
    tool,
    body,
  );
}

/** A bare Elysia route answering the same bytes: the framework's own ceiling, without the handler's work. */
function measureBareElysia(body: string, tool: HttpTool): Promise<Figure> {
  // The script lives outside the repo, so it imports Elysia by the path this checkout resolves it to.
  return measureScript(
    "bare_elysia",
    (port) => `import { Elysia } from ${JSON.stringify(import.meta.resolve("elysia"))};
const body = ${JSON.stringify(body)};
const headers = new Headers({ "content-type": "application/json" }); // built once, as server.ts's
new Elysia({ serve: { reusePort: false } }).get("/products/:id", () => new Response(body, { headers })).listen({ port: ${port}, hostname: "127.0.0.1" });
console.log("ready");`,
    tool,
    body,
  );
}

/**
 * pgbench running the server's query, prepared once per client on the server (PREPARE, then EXECUTE per
 * transaction). Not `-M prepared`: pgbench would read the timestamp format's `:MI` and `:SS` as variables.
 */
function measurePgbench(): number {
  const script = join(work, "product.sql");
  writeFileSync(
    script,
    `\\if :prepared = 0
PREPARE product(int) AS ${productQuery().replaceAll("\n", " ")};
\\set prepared 1
\\endif
\\set id random(1, ${keys})
EXECUTE product(:id);
`,
  );
  const out = run([
    "pgbench",
    "-n",
    "-M",
    "simple",
    "-D",
    "prepared=0",
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
  const failed = /number of failed transactions: (\d+)/.exec(out);
  if (failed && failed[1] !== "0") throw new Error(`Cannot trust pgbench: ${failed[1]} failed transactions`);
  const match = /tps = ([\d.]+) \(without initial connection time\)/.exec(out);
  if (!match?.[1]) throw new Error(`Cannot read pgbench output: ${out}`);
  return Number(match[1]);
}

function measureRedisBenchmark(valueBytes: number): number {
  const url = new URL(services.redisUrl);
  const out = run([
    "redis-benchmark",
    "-h",
    url.hostname,
    "-p",
    url.port || "6379",
    // The lab's Redis requires its password; redis-benchmark reads it only from -a.
    ...(url.password ? ["-a", decodeURIComponent(url.password)] : []),
    "-t",
    "get",
    "-c",
    String(connections),
    "-n",
    String(40_000 * durationS),
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
  const body = await productBody();
  /** name → one figure per run: rps (tps for pgbench), and the server's CPU µs per response. */
  const figures = new Map<string, number[]>();
  const cpu = new Map<string, number[]>();
  const record = (name: string, value: number | Figure) => {
    const rps = typeof value === "number" ? value : value.rps;
    figures.set(name, [...(figures.get(name) ?? []), rps]);
    if (typeof value !== "number") cpu.set(name, [...(cpu.get(name) ?? []), value.cpuUs]);
  };
  for (let round = 1; round <= runs; round++) {
    console.error(`run ${round}/${runs}`);
    for (const tool of tools) {
      if (only.has("base")) {
        record(`${tool}: raw Bun.serve`, await measureRaw(body, tool));
        record(`${tool}: bare Elysia route`, await measureBareElysia(body, tool));
        for (const framework of ["elysia", "raw"] as const) {
          const { l1MaxEntries, cacheTtlMs } = DEFAULT_CONFIG;
          const ceiling = localCeiling(framework, body, keys, l1MaxEntries, cacheTtlMs);
          record(
            `${tool}: local ceiling, ${framework}`,
            await measureScript(`local_${framework}`, ceiling, tool, body),
          );
        }
      }
      if (only.has("base") || only.has("metrics")) {
        record(`${tool}: local hits`, await measureServer({ CACHE_STRATEGY: "local" }, tool, body));
      }
      if (only.has("metrics")) {
        record(
          `${tool}: local hits, METRICS=1`,
          await measureServer({ CACHE_STRATEGY: "local", METRICS: "1" }, tool, body),
        );
      }
      if (only.has("shed") && tool === "oha") {
        // Below saturation, at a fixed rate: the sampler's cost shows in the CPU per response, not in rps.
        const pair = [
          ["on", { CACHE_STRATEGY: "local" }],
          ["off", { CACHE_STRATEGY: "local", MAX_EVENT_LOOP_DELAY_MS: "0" }],
        ] as const;
        for (const [name, env] of round % 2 === 1 ? pair : [...pair].reverse()) {
          record(
            `oha: local hits at ${SHED_RATE_RPS} rps, shedding ${name}`,
            await measureServer(env, tool, body, undefined, SHED_RATE_RPS),
          );
        }
      }
      if (only.has("timing")) {
        // Two slices each, in both orders, from one process serving both (bench/_timing_pair.ts).
        for (const [on, off] of await measureTimingPair(tool, round)) {
          record(`${tool}: local hits, timing on (pair)`, on);
          record(`${tool}: local hits, TIER_TIMING=0 (pair)`, off);
        }
      }
      if (against !== undefined) {
        const entry = join(againstDir, "server.ts");
        record(
          `${tool}: local hits at ${against}`,
          await measureServer({ CACHE_STRATEGY: "local" }, tool, body, entry),
        );
      }
      for (const client of only.has("redis") ? REDIS_CLIENTS : []) {
        record(
          `${tool}: redis hits, ${client}`,
          await measureServer({ CACHE_STRATEGY: "redis", REDIS_CLIENT: client }, tool, body),
        );
      }
      for (const driver of only.has("none") ? PG_DRIVERS : []) {
        record(
          `${tool}: none, ${driver}`,
          await measureServer({ CACHE_STRATEGY: "none", PG_DRIVER: driver }, tool, body),
        );
        const ceiling = queryCeiling(driver, services.databaseUrl, productQuery(), poolMax);
        record(
          `${tool}: query ceiling, ${driver}`,
          await measureScript(`query_${driver}`, ceiling, tool, body),
        );
        const throughDrizzle = drizzleCeiling(driver, services.databaseUrl, poolMax);
        record(
          `${tool}: drizzle ceiling, ${driver}`,
          await measureScript(`drizzle_${driver}`, throughDrizzle, tool, body),
        );
      }
      for (const client of only.has("redis") ? REDIS_CLIENTS : []) {
        const prefix = `cachelab-bench:${process.pid}:strategy-ceiling:${client}:`;
        const ceiling = strategyCeiling(
          client,
          services.redisUrl,
          prefix,
          keys,
          body,
          DEFAULT_CONFIG.cacheTtlMs,
        );
        record(
          `${tool}: strategy ceiling, ${client}`,
          await measureScript(`strategy_${client}`, ceiling, tool, body),
        );
      }
      for (const client of only.has("redis") ? CEILING_CLIENTS : []) {
        const prefix = `cachelab-bench:${process.pid}:ceiling:`;
        const ceiling = getCeiling(client, services.redisUrl, prefix, keys, body);
        record(`${tool}: GET ceiling, ${client}`, await measureScript(`get_${client}`, ceiling, tool, body));
      }
    }
    if (only.has("none")) record("pgbench (tps)", measurePgbench());
    if (only.has("redis")) record("redis-benchmark", measureRedisBenchmark(Buffer.byteLength(body)));
  }
  // Ratio T's in-process half: what the timing adds to a local hit where nothing else moves.
  const cost = only.has("timing") ? await timingCost(services, { rounds: 60, batch: 20_000, keys }) : null;
  const addedUs = cost === null ? Number.NaN : median(cost.addedNs) / 1_000;
  const at = (name: string) => figures.get(name) ?? [];
  const ratios = (a: number[], b: number[]) => a.map((value, i) => value / (b[i] as number));
  console.log(
    `closed model: ${connections} connections, ${durationS} s, ${keys} warmed ids, ${runs} interleaved runs; ` +
      `pool ${poolMax}; body ${Buffer.byteLength(body)} B; ${run(["oha", "--version"]).trim()}; ` +
      `${versionLine(["wrk", "-v"])}`,
  );
  console.log(
    `pgbench -c ${poolMax}, the server's product query prepared per client; redis-benchmark GET -c ${connections}`,
  );
  console.log("\n| figure | median (min–max) |\n| --- | --- |");
  for (const [name, list] of figures) console.log(`| ${name} rps | ${spread(list, 0)} |`);
  console.log("\n| server CPU per response | µs, median (min–max) |\n| --- | --- |");
  for (const [name, list] of cpu) console.log(`| ${name} | ${spread(list, 2)} |`);
  console.log("\n| ratio | oha | wrk | goal |\n| --- | --- | --- | --- |");
  // A ratio whose figures --only left out is not printed.
  /** A ratio's row; `goal` null for a figure read, not judged. */
  const row = (name: string, goal: number | null, of: (tool: HttpTool) => number[]) => {
    const lists = TOOLS.map((tool) => (tools.includes(tool) ? of(tool).filter(Number.isFinite) : []));
    if (lists.every((list) => list.length === 0)) return;
    const cells = lists.map((list) => (list.length === 0 ? "—" : spread(list, 2)));
    console.log(`| ${name} | ${cells.join(" | ")} | ${goal === null ? "—" : `≥ ${goal.toFixed(2)}`} |`);
  };
  row("P0 local hits ÷ a bare Elysia route, same bytes", 0.95, (tool) =>
    ratios(at(`${tool}: local hits`), at(`${tool}: bare Elysia route`)),
  );
  if (against !== undefined) {
    row(`P0 at ${against}`, 0.95, (tool) =>
      ratios(at(`${tool}: local hits at ${against}`), at(`${tool}: bare Elysia route`)),
    );
  }
  row("P1 local hits ÷ raw Bun.serve", 0.9, (tool) =>
    ratios(at(`${tool}: local hits`), at(`${tool}: raw Bun.serve`)),
  );
  // The same two ratios from the servers' own CPU time per response (the reference's ÷ local's): a check on
  // the rps ratios that another process on the machine disturbs less.
  const cpuAt = (name: string) => cpu.get(name) ?? [];
  row("P0 by CPU per response: bare Elysia ÷ local hits", 0.95, (tool) =>
    ratios(cpuAt(`${tool}: bare Elysia route`), cpuAt(`${tool}: local hits`)),
  );
  if (against !== undefined) {
    row(`P0 at ${against} by CPU per response`, 0.95, (tool) =>
      ratios(cpuAt(`${tool}: bare Elysia route`), cpuAt(`${tool}: local hits at ${against}`)),
    );
  }
  row("P1 by CPU per response: raw Bun.serve ÷ local hits", 0.9, (tool) =>
    ratios(cpuAt(`${tool}: raw Bun.serve`), cpuAt(`${tool}: local hits`)),
  );
  // The lookup is what a local cache costs any route, not the lab's overhead: the lab's own code is what the
  // server adds to a route answering through strategies/local.ts (goal: within 10%, as P2's and P3's).
  for (const [framework, base] of [
    ["elysia", "bare Elysia route"],
    ["raw", "raw Bun.serve"],
  ] as const) {
    const ratio = framework === "elysia" ? "P0" : "P1";
    row(`${ratio} local ceiling (${framework}) ÷ the ${base}: the lookup itself`, null, (tool) =>
      ratios(at(`${tool}: local ceiling, ${framework}`), at(`${tool}: ${base}`)),
    );
    row(`${ratio} local hits ÷ the local ceiling (${framework}): the lab's own code`, 0.9, (tool) =>
      ratios(at(`${tool}: local hits`), at(`${tool}: local ceiling, ${framework}`)),
    );
    row(`${ratio} by CPU per response: local ceiling (${framework}) ÷ local hits`, 0.9, (tool) =>
      ratios(cpuAt(`${tool}: local ceiling, ${framework}`), cpuAt(`${tool}: local hits`)),
    );
  }
  row("M local hits with METRICS=1 ÷ without", 0.95, (tool) =>
    ratios(at(`${tool}: local hits, METRICS=1`), at(`${tool}: local hits`)),
  );
  row("M by CPU per response: without ÷ with METRICS=1", 0.95, (tool) =>
    ratios(cpuAt(`${tool}: local hits`), cpuAt(`${tool}: local hits, METRICS=1`)),
  );
  row("T local hits (tier timing, the default) ÷ with TIER_TIMING=0, one process", 0.98, (tool) =>
    ratios(at(`${tool}: local hits, timing on (pair)`), at(`${tool}: local hits, TIER_TIMING=0 (pair)`)),
  );
  row(
    `S by CPU per response at ${SHED_RATE_RPS} rps: MAX_EVENT_LOOP_DELAY_MS=0 ÷ the default`,
    0.99,
    (tool) =>
      ratios(
        cpuAt(`${tool}: local hits at ${SHED_RATE_RPS} rps, shedding off`),
        cpuAt(`${tool}: local hits at ${SHED_RATE_RPS} rps, shedding on`),
      ),
  );
  row("T by CPU per response: TIER_TIMING=0 ÷ the default, one process", 0.98, (tool) =>
    ratios(
      cpuAt(`${tool}: local hits, TIER_TIMING=0 (pair)`),
      cpuAt(`${tool}: local hits, timing on (pair)`),
    ),
  );
  if (cost !== null) {
    // The paired HTTP ratio's spread (an A/A run of two untimed servers spans 0.92–1.17) is wider than the
    // effect, so T is also put together from two steadier figures: the nanoseconds the timing adds to a local
    // hit in process, over what a local hit costs the server over HTTP (its CPU per response, timing on).
    row("T = 1 − ns added in process ÷ CPU per response over HTTP", 0.98, (tool) =>
      cpuAt(`${tool}: local hits, timing on (pair)`).map((cpuUs) => 1 - addedUs / cpuUs),
    );
  }
  for (const driver of PG_DRIVERS) {
    row(`P2 none ÷ pgbench (${driver})`, 0.6, (tool) =>
      ratios(at(`${tool}: none, ${driver}`), at("pgbench (tps)")),
    );
  }
  for (const client of REDIS_CLIENTS) {
    row(`P3 redis hits ÷ redis-benchmark (${client})`, 0.7, (tool) =>
      ratios(at(`${tool}: redis hits, ${client}`), at("redis-benchmark")),
    );
  }
  // The ceilings: a bare Bun.serve route doing the same query or GET and nothing else, against the tool
  // underneath (what HTTP and a client cost that pgbench and redis-benchmark never pay), and the lab's
  // server against its ceiling (what the lab's own code costs on top: goal within 10%).
  for (const driver of PG_DRIVERS) {
    row(`P2 ceiling: a bare route's query ÷ pgbench (${driver})`, 0.6, (tool) =>
      ratios(at(`${tool}: query ceiling, ${driver}`), at("pgbench (tps)")),
    );
    row(`P2 none ÷ its ceiling (${driver})`, 0.9, (tool) =>
      ratios(at(`${tool}: none, ${driver}`), at(`${tool}: query ceiling, ${driver}`)),
    );
    row(`P2 by CPU per response: ceiling ÷ none (${driver})`, 0.9, (tool) =>
      ratios(cpuAt(`${tool}: query ceiling, ${driver}`), cpuAt(`${tool}: none, ${driver}`)),
    );
    // drizzle's execute is the server's by design (docs/benchmarks.md): the lab's own code is what none adds to it.
    row(`P2 drizzle ceiling ÷ the query ceiling (${driver}): drizzle's execute`, null, (tool) =>
      ratios(at(`${tool}: drizzle ceiling, ${driver}`), at(`${tool}: query ceiling, ${driver}`)),
    );
    row(`P2 none ÷ the drizzle ceiling (${driver}): the lab's own code`, 0.9, (tool) =>
      ratios(at(`${tool}: none, ${driver}`), at(`${tool}: drizzle ceiling, ${driver}`)),
    );
    row(`P2 by CPU per response: drizzle ceiling ÷ none (${driver})`, 0.9, (tool) =>
      ratios(cpuAt(`${tool}: drizzle ceiling, ${driver}`), cpuAt(`${tool}: none, ${driver}`)),
    );
  }
  for (const client of CEILING_CLIENTS) {
    row(`P3 ceiling: a bare route's GET ÷ redis-benchmark (${client})`, 0.7, (tool) =>
      ratios(at(`${tool}: GET ceiling, ${client}`), at("redis-benchmark")),
    );
  }
  for (const client of REDIS_CLIENTS) {
    row(`P3 redis hits ÷ their ceiling (${client})`, 0.9, (tool) =>
      ratios(at(`${tool}: redis hits, ${client}`), at(`${tool}: GET ceiling, ${client}`)),
    );
    row(`P3 by CPU per response: ceiling ÷ redis hits (${client})`, 0.9, (tool) =>
      ratios(cpuAt(`${tool}: GET ceiling, ${client}`), cpuAt(`${tool}: redis hits, ${client}`)),
    );
    // The strategy is what the lab measures, not its overhead: the lab's own code is what the server adds to it.
    row(`P3 strategy ceiling ÷ the GET ceiling (${client}): redis.ts's own path`, null, (tool) =>
      ratios(at(`${tool}: strategy ceiling, ${client}`), at(`${tool}: GET ceiling, ${client}`)),
    );
    row(`P3 redis hits ÷ the strategy ceiling (${client}): the lab's own code`, 0.9, (tool) =>
      ratios(at(`${tool}: redis hits, ${client}`), at(`${tool}: strategy ceiling, ${client}`)),
    );
    row(`P3 by CPU per response: strategy ceiling ÷ redis hits (${client})`, 0.9, (tool) =>
      ratios(cpuAt(`${tool}: strategy ceiling, ${client}`), cpuAt(`${tool}: redis hits, ${client}`)),
    );
  }
  if (cost !== null) {
    console.log(
      `\nin process (bench/_tier_timing_cost.ts, 60 interleaved rounds of 20 000 local hits): the timing adds ${(addedUs * 1_000).toFixed(0)} ns a hit (median of the rounds)`,
    );
  }
} finally {
  if (against !== undefined)
    Bun.spawnSync(["git", "-C", REPO_ROOT, "worktree", "remove", "--force", againstDir]);
  rmSync(work, { recursive: true, force: true });
}
