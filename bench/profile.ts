/**
 * Where a request's CPU goes, per server path: a local hit, a miss (`none`: every request one product query)
 * and a Redis hit (`redis`), each under wrk (1 thread, the warmed ids at random) on the real server.
 *   - perf (the whole process, every thread): the kernel (TCP on loopback, syscalls), Bun's native code (its
 *     HTTP server, the JavaScript engine's runtime and collector; its symbols are stripped, so no finer), and
 *     JIT-compiled JavaScript; in µs per response, from the server's own CPU time (/proc);
 *   - Bun's CPU profiler (`--cpu-prof`, the JavaScript thread's samples): what JavaScript and the native calls
 *     it makes did, by where the function lives: building the `Response`, Elysia, the lab's handler
 *     (server.ts, server/), the strategy (strategies/, quick-lru), the driver or client (postgres.js, drizzle,
 *     ioredis, Bun's `node:net` writes), and native frames without a JavaScript name.
 * Without perf (or without the right to use it) the first part is left out, said so.
 *
 *   bun run bench:profile [--paths local,miss,redis] [--duration-s 8] [--connections 32] [--keys 1000]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { processUsage } from "../lab/cell/counters.ts";
import { startServer } from "../lab/cell/server_process.ts";
import { LAB_ACQUIRE_TIMEOUT_MS } from "../lab/plan/experiment_plan.ts";
import { benchArgs, pinning, positiveInt } from "./_args.ts";
import { type CpuProfile, JS_GROUPS, jsShares } from "./_js_profile.ts";
import { seededServices } from "./_seeded.ts";
import { wrk } from "./_wrk.ts";

const PATHS = { local: "local", miss: "none", redis: "redis" } as const;
type PathName = keyof typeof PATHS;

const values = benchArgs(
  "bun run bench:profile [--paths local,miss,redis] [--duration-s 8] [--connections 32] [--keys 1000]",
  {
    paths: { type: "string", default: Object.keys(PATHS).join(",") },
    "duration-s": { type: "string", default: "8" },
    connections: { type: "string", default: "32" },
    keys: { type: "string", default: "1000" },
  },
);
const durationS = positiveInt("duration-s", values["duration-s"]);
const connections = positiveInt("connections", values.connections);
const keys = positiveInt("keys", values.keys);
const paths = (values.paths ?? "").split(",") as PathName[];
for (const path of paths) {
  if (!(path in PATHS)) {
    console.error(`--paths takes ${Object.keys(PATHS).join(", ")}: received ${path}`);
    process.exit(2);
  }
}
// Each server on CPU 0 and wrk on CPU 1 where there are two: the scheduler cannot put them together.
const pin = availableParallelism() >= 2;
const cpu = pinning(pin);
const perf = Bun.which("perf") !== null;

/** perf's self time by object: kernel, Bun's native code (with libc and the vDSO), JIT-compiled JavaScript. */
function perfShares(data: string): { kernel: number; native: number; jit: number } | null {
  const report = Bun.spawnSync(["perf", "report", "-i", data, "--no-children", "--sort", "dso", "--stdio"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (report.exitCode !== 0) return null;
  const shares = { kernel: 0, native: 0, jit: 0 };
  for (const line of report.stdout.toString().split("\n")) {
    const match = /^\s*([\d.]+)%\s+(.+?)\s*$/.exec(line);
    if (!match) continue;
    const share = Number(match[1]) / 100;
    const dso = match[2] as string;
    if (dso.includes("kernel")) shares.kernel += share;
    else if (dso.startsWith("[JIT]")) shares.jit += share;
    else shares.native += share;
  }
  return shares;
}

const services = await seededServices();
const work = mkdtempSync(join(tmpdir(), "cachelab-profile-"));
try {
  // Successful responses of a wrk run (bench/_wrk.ts refuses one with errors).
  const load = (origin: string, seconds: number) =>
    wrk(origin, { connections, durationS: seconds, keys, work, prefix: cpu.tool }).ok;
  const rows: string[][] = [];
  for (const path of paths) {
    const profiles = join(work, path);
    const server = await startServer({
      prefix: cpu.server,
      env: {
        CACHE_STRATEGY: PATHS[path],
        DATABASE_URL: services.databaseUrl,
        REDIS_URL: services.redisUrl,
        REDIS_KEY_PREFIX: `cachelab-profile:${process.pid}:`,
        NODE_ENV: "production",
        PG_ACQUIRE_TIMEOUT_MS: String(LAB_ACQUIRE_TIMEOUT_MS),
        BUN_OPTIONS: `--cpu-prof --cpu-prof-dir=${profiles}`,
      },
    });
    let requests = 0;
    let cpuS = 0;
    let perfData: string | null = null;
    try {
      for (let id = 1; id <= keys; id++) await fetch(`${server.url}/products/${id}`); // warm every key
      load(server.url, 2); // and the JIT
      const before = processUsage(server.pid);
      perfData = perf ? join(work, `${path}.perf.data`) : null;
      const recorder =
        perfData === null
          ? null
          : Bun.spawn(
              [
                "perf",
                "record",
                "-q",
                "-F",
                "999",
                "-e",
                "cpu-clock",
                "-p",
                String(server.pid),
                "-o",
                perfData,
              ],
              {
                stdout: "ignore",
                stderr: "ignore",
              },
            );
      requests = load(server.url, durationS);
      recorder?.kill("SIGINT");
      await recorder?.exited;
      const after = processUsage(server.pid);
      if (before === null || after === null)
        throw new Error(`Cannot read the CPU time of server ${server.pid}`);
      cpuS = after.cpuS - before.cpuS;
    } finally {
      await server.stop(); // SIGTERM: Bun writes the profile on its way out
    }
    const file = readdirSync(profiles).find((name) => name.endsWith(".cpuprofile"));
    if (file === undefined)
      throw new Error(`Cannot find the CPU profile of the ${path} server in ${profiles}`);
    const js = jsShares(JSON.parse(readFileSync(join(profiles, file), "utf8")) as CpuProfile);
    const perUs = (cpuS * 1e6) / requests;
    const split = perfData === null ? null : perfShares(perfData);
    const us = (share: number | undefined) => (share === undefined ? "n/a" : (share * perUs).toFixed(2));
    const pct = (share: number) => `${(share * 100).toFixed(0)}%`;
    rows.push([
      `${path} (${PATHS[path]})`,
      (requests / durationS).toFixed(0),
      perUs.toFixed(2),
      us(split?.kernel),
      us(split?.native),
      us(split?.jit),
      ...JS_GROUPS.map((group) => pct(js[group])),
    ]);
  }
  console.log(
    `wrk -t1 -c${connections} ${durationS} s over ${keys} warmed ids${pin ? ", server on CPU 0 and wrk on CPU 1" : ""}; ` +
      `server CPU from /proc; ${perf ? "perf record -F 999 (cpu-clock)" : "perf not found: no kernel/native/JIT split"}`,
  );
  const head = [
    "path",
    "rps",
    "CPU µs/response",
    "kernel µs",
    "Bun native µs",
    "JIT JS µs",
    ...JS_GROUPS.map((group) => `JS thread: ${group}`),
  ];
  console.log(`\n| ${head.join(" | ")} |\n| ${head.map(() => "---").join(" | ")} |`);
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
