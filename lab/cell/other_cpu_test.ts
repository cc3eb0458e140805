/**
 * The CPU a run shares with processes that are not the lab's, on the real machine and services: a stray
 * process (burning a fixed number of iterations) shows in it at least as the CPU it used and the check fires;
 * the lab's own children and the services' work do not; the arithmetic and the message on fixed readings.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { Redis as RedisClient } from "ioredis";
import type postgres from "postgres";
import { testTmpdir } from "../shared/test_tmpdir.ts";
import { eventually, testRedis, testSql, testValkeyUrl } from "../shared/testing.ts";
import { OTHER_CPU_LIMIT, otherCpu, otherCpuLimit, otherCpuProblem } from "./other_cpu.ts";
import { labProcesses, processTable, programOf, type ServiceCpu, serviceCpu, stealS } from "./service_cpu.ts";

let sql: postgres.Sql;
let redis: Redis;
beforeAll(async () => {
  [sql, redis] = await Promise.all([testSql(), testRedis()]);
});
afterAll(async () => {
  await sql?.end();
  redis?.disconnect();
});

describe("the CPU others use beside a run", () => {
  test("a stray process shows in it, at least as the CPU it used, and the check fires", async () => {
    const done = join(mkdtempSync(join(testTmpdir(), "cachelab-stray-")), "cpu");
    const before = await serviceCpu(sql, redis);
    // The stray: not this process's descendant (sh leaves it to init), a fixed count of iterations; it
    // writes its own CPU seconds when done.
    const loop = `let n = 0; for (let i = 0; i < 2e9; i++) n += i; const u = process.cpuUsage(); require("fs").writeFileSync("${done}", String((u.user + u.system) / 1e6 + (n > 0 ? 0 : 1)))`;
    Bun.spawnSync(["sh", "-c", `bun -e '${loop}' >/dev/null 2>&1 &`]);
    expect(await eventually(() => existsSync(done) && readFileSync(done, "utf8") !== "", 60_000)).toBe(true);
    const after = await serviceCpu(sql, redis);
    const strayS = Number(readFileSync(done, "utf8"));
    const windowS = (after.atMs - before.atMs) / 1_000;
    expect(strayS).toBeGreaterThan(0.5);
    const other = otherCpu(before, after);
    // Tick-counted (10 ms), and the stray's last instructions after its own reading: a little below.
    expect(other.otherPerS).toBeGreaterThanOrEqual((strayS - 0.1) / windowS);
    expect(otherCpuProblem(other, 2, OTHER_CPU_LIMIT)).toContain("other processes used");
  });

  test("this process's descendants, Postgres's and Redis's processes are the lab's; an orphan is not", async () => {
    const child = Bun.spawn(["sleep", "30"]);
    const orphanFile = join(mkdtempSync(join(testTmpdir(), "cachelab-orphan-")), "pid");
    Bun.spawnSync(["sh", "-c", `sleep 30 >/dev/null 2>&1 </dev/null & echo $! > ${orphanFile}`]);
    const orphan = Number(readFileSync(orphanFile, "utf8"));
    try {
      const [{ pid: backend }] = (await sql`select pg_backend_pid() as pid`) as [{ pid: number }];
      const redisPid = Number(/process_id:(\d+)/.exec(await redis.info("server"))?.[1]);
      const table = processTable();
      const postmaster = table.get(backend)?.ppid as number;
      const isLab = labProcesses(table, [postmaster, redisPid]);
      expect([process.pid, child.pid, backend, postmaster, redisPid].map(isLab)).toEqual([
        true,
        true,
        true,
        true,
        true,
      ]);
      expect(isLab(orphan)).toBe(false);
      expect(table.get(orphan)?.comm).toBe("sleep");
    } finally {
      child.kill();
      process.kill(orphan);
    }
  });

  test('services the lab runs through a file descriptor (named "3" by the kernel) are still told apart: Toxiproxy and Valkey', async () => {
    const table = processTable();
    const toxiproxies = [...table].filter(([pid, proc]) => programOf(pid, proc.comm) === "toxiproxy-server");
    expect(toxiproxies.length).toBeGreaterThan(0); // the services run one
    const isLab = labProcesses(table, []);
    expect(toxiproxies.map(([pid]) => isLab(pid))).toEqual(toxiproxies.map(() => true));
    // On Valkey, Redis's figure and the others' are read as on Redis.
    const valkey = new RedisClient(await testValkeyUrl(), { lazyConnect: true, maxRetriesPerRequest: 0 });
    await valkey.connect();
    try {
      const reading = await serviceCpu(sql, valkey);
      expect(reading.redisS).not.toBeNull();
      expect(reading.othersS).not.toBeNull();
    } finally {
      valkey.disconnect();
    }
  });

  test("steal is /proc/stat's eighth figure; the figures are per second of the window; unknowns stay unknown", () => {
    const ticks = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim());
    expect(stealS("cpu  1000 50 200 9000 30 7 400 25 0 0\ncpu0 500 25 100 4500 15 3 200 12 0 0\n")).toBe(
      25 / ticks,
    );
    expect(stealS("intr 1 2 3")).toBeNull();
    expect(stealS(null)).toBeNull();
    const reading = (atS: number, othersS: number | null, steal: number | null): ServiceCpu => ({
      postgresS: 1,
      redisS: 1,
      othersS,
      stealS: steal,
      atMs: atS * 1_000,
    });
    expect(otherCpu(reading(0, 10, 5), reading(10, 11, 7))).toEqual({ otherPerS: 0.1, stealPerS: 0.2 });
    expect(otherCpu(reading(0, null, 5), reading(10, 11, null))).toEqual({
      otherPerS: null,
      stealPerS: null,
    });
  });

  test("the check fires past a tenth of the machine's cores, naming what it measured", () => {
    expect(otherCpuProblem({ otherPerS: 0.2, stealPerS: 0.2 }, 2, OTHER_CPU_LIMIT)).toBeNull();
    expect(otherCpuProblem({ otherPerS: null, stealPerS: null }, 2, OTHER_CPU_LIMIT)).toBeNull();
    expect(otherCpuProblem({ otherPerS: 0.21, stealPerS: 0 }, 2, OTHER_CPU_LIMIT)).toBe(
      "other processes used 0.21 of 2 cores during the run (over 0.20; not the server, the load tool, Postgres, Redis or Toxiproxy): a stray process skews every figure",
    );
    expect(otherCpuProblem({ otherPerS: 0, stealPerS: 0.5 }, 2, OTHER_CPU_LIMIT)).toBe(
      "the hypervisor took 0.50 of 2 cores (steal) during the run (over 0.20)",
    );
    expect(otherCpuProblem({ otherPerS: 0.5, stealPerS: 0 }, 2, 0.25)).toBeNull();
  });

  test("the limit is a tenth of the cores, or CACHELAB_OTHER_CPU_LIMIT's share; off: not judged", () => {
    expect(otherCpuLimit("")).toBe(0.1);
    expect(otherCpuLimit("0.25")).toBe(0.25);
    expect(otherCpuLimit("off")).toBe(Number.POSITIVE_INFINITY);
    expect(() => otherCpuLimit("2")).toThrow("expected a share of the cores in (0, 1] or off: received 2");
    // The tests run with it off (lab/shared/test_preload.ts): a busy machine must not fail them.
    expect(process.env.CACHELAB_OTHER_CPU_LIMIT).toBe("off");
  });
});
