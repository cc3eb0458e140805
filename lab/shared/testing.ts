/** Test fixtures: the real Postgres and Redis (started once per test process), never mocks. */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { Redis } from "ioredis";
import postgres from "postgres";
import { ensureSeeded, type SeedPlan } from "../../seed/seed.ts";
import { redisClusterUp, type Services, servicesUp, valkeyUp } from "../services/lifecycle.ts";
import type { RedisClusterInfo } from "../services/native_redis_cluster.ts";
import { VALKEY_MISSING, valkeyBinary } from "../services/native_valkey.ts";
import { freePort, portAnswers } from "./ports.ts";

let services: Promise<Services> | undefined;

/** The services every test uses: found or started by the services module, once per process. */
export function testServices(): Promise<Services> {
  services ??= servicesUp({ log: (line) => console.error(`[services] ${line}`) });
  return services;
}

let redisCluster: Promise<RedisClusterInfo> | undefined;

/** The lab's local Redis Cluster of three masters, found or started once per process (`services down` stops it). */
export function testRedisCluster(): Promise<RedisClusterInfo> {
  redisCluster ??= redisClusterUp({ log: (line) => console.error(`[services] ${line}`) });
  return redisCluster;
}

/** A URL of one master of the lab's cluster, password included: a cluster client finds the others from it. */
export async function testRedisClusterUrl(): Promise<string> {
  const { nodes, password } = await testRedisCluster();
  return `redis://:${encodeURIComponent(password)}@${nodes[0]}`;
}

let valkey: Promise<string> | undefined;

/** The URL of the lab's valkey-server beside its Redis, found or started once per process (`services down` stops it). */
export function testValkeyUrl(): Promise<string> {
  valkey ??= valkeyUp({ log: (line) => console.error(`[services] ${line}`) }).then((info) => info.url);
  return valkey;
}

/** A Redis client with the same fail-fast settings the server uses; the caller disconnects it. */
export async function testRedis(): Promise<Redis> {
  const { redisUrl } = await testServices();
  const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 1_000 });
  await client.connect();
  return client;
}

export async function testSql(max = 2): Promise<postgres.Sql> {
  const { databaseUrl } = await testServices();
  return postgres(databaseUrl, { max, onnotice: () => {} });
}

/** A key prefix no other test (or run) shares, so tests never see each other's keys. */
export function uniquePrefix(name: string): string {
  return `cachelab-test:${name}:${crypto.randomUUID().slice(0, 8)}:`;
}

/** Polls `check` every few ms until it returns true or `timeoutMs` passes; returns whether it did. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 2_000,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await Bun.sleep(5);
  }
  return check();
}

/**
 * A database of its own for tests (`<name>_test` beside the lab's, or `<name>_<suffix>` for a test whose plan
 * differs from the others', e.g. with reviews), seeded with `plan` unless it already matches: tests never
 * disturb the rows an experiment was seeded with, nor each other's.
 */
export async function testDatabaseUrl(plan: SeedPlan, suffix = "test"): Promise<string> {
  const { databaseUrl } = await testServices();
  const url = new URL(databaseUrl);
  const name = `${url.pathname.slice(1) || "cachelab"}_${suffix}`;
  const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
    if (!exists) await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  url.pathname = `/${name}`;
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  try {
    await ensureSeeded(sql, plan);
  } finally {
    await sql.end();
  }
  return url.toString();
}

/**
 * The processes working in `dir` (the runner starts a tool there) and every member of their process groups,
 * pid → command name: what a test checks /proc for once the runner has exited.
 */
export function processesWorkingIn(dir: string): Map<number, string> {
  const found = new Map<number, string>();
  const stats = readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        let cwd = "";
        try {
          cwd = readlinkSync(`/proc/${pid}/cwd`);
        } catch {
          // a zombie has no cwd
        }
        const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        return [{ pid: Number(pid), group: Number(fields[2]), cwd, comm }];
      } catch {
        return [];
      }
    });
  const groups = new Set(stats.filter((p) => p.cwd.startsWith(dir)).map((p) => p.group));
  for (const p of stats) if (p.cwd.startsWith(dir) || groups.has(p.group)) found.set(p.pid, p.comm);
  return found;
}

/**
 * A redis-server (or with `server: "valkey"` the lab's valkey-server binary) of the test's own, on a free port
 * (for tests that reconfigure Redis or count every key in it, which the lab's shared Redis cannot allow),
 * started with `args` besides; `stop` kills it.
 */
export async function ownRedisServer(
  purpose: string,
  options: { args?: string[]; server?: "redis" | "valkey" } = {},
): Promise<{ redis: Redis; url: string; stop: () => Promise<void> }> {
  const onValkey = options.server === "valkey";
  const binary = onValkey ? valkeyBinary(process.env) : Bun.which("redis-server");
  if (binary === null) {
    throw new Error(`Cannot test ${purpose}: ${onValkey ? VALKEY_MISSING : "redis-server is not installed"}`);
  }
  const port = await freePort();
  const server = Bun.spawn(
    [
      binary,
      ...["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
      ...(options.args ?? []),
    ],
    { stdout: "ignore", stderr: "inherit" },
  );
  for (let attempt = 0; !(await portAnswers(port)); attempt++) {
    if (attempt >= 250) throw new Error(`Cannot test ${purpose}: redis-server on ${port} never answered`);
    await Bun.sleep(20);
  }
  const redis = new Redis(port, "127.0.0.1", {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    commandTimeout: 2_000,
  });
  await redis.connect();
  return {
    redis,
    url: `redis://127.0.0.1:${port}`,
    stop: async () => {
      redis.disconnect();
      server.kill("SIGKILL");
      await server.exited;
    },
  };
}
