/**
 * CPU seconds Postgres and Redis have used so far, read before and after a measured run: Redis from its own
 * INFO (the server process with its threads, wherever it runs), Postgres from /proc (the postmaster, the
 * children it has reaped and those alive now), found through the lab's own backend. Null when it cannot be
 * read here (Postgres in a container or on another host): an unknown figure, never 0.
 */
import { readdirSync, readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";
import type postgres from "postgres";
import { statFields } from "../shared/owner_record.ts";
import { eachRedis } from "./reset.ts";

/** Clock ticks per second of /proc/<pid>/stat's times (sysconf(_SC_CLK_TCK): 100 on Linux). */
const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

export interface ServiceCpu {
  postgresS: number | null;
  redisS: number | null;
}

/** Redis's figure is every server's behind the client: a Redis Cluster's masters, summed. */
export async function serviceCpu(sql: postgres.Sql, redis: Redis | Cluster): Promise<ServiceCpu> {
  const [postgresS, redisEach] = await Promise.all([
    postgresCpuS(sql),
    Promise.all(eachRedis(redis).map(redisCpuS)),
  ]);
  const redisS = redisEach.includes(null) ? null : redisEach.reduce((sum: number, s) => sum + (s ?? 0), 0);
  return { postgresS, redisS };
}

/** after − before, or null when either is unknown (or the service restarted in between). */
export function cpuDelta(before: number | null, after: number | null): number | null {
  if (before === null || after === null || after < before) return null;
  return Math.round((after - before) * 1000) / 1000;
}

/** used_cpu_sys + used_cpu_user from INFO cpu (the server process, all its threads), or null. */
async function redisCpuS(redis: Redis): Promise<number | null> {
  try {
    const info = await redis.info("cpu");
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1]);
    const total = field("used_cpu_sys") + field("used_cpu_user");
    return Number.isFinite(total) ? total : null;
  } catch {
    return null;
  }
}

function comm(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return null;
  }
}

/**
 * The postmaster's own CPU, its reaped children's (cutime, cstime) and its live children's, in seconds.
 * A backend that exits between the two readings moves from "live" to "reaped": the sum does not drop.
 */
async function postgresCpuS(sql: postgres.Sql): Promise<number | null> {
  try {
    const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
    const backend = row?.pid;
    // Our backend's pid means something here only if it is a postgres process on this host.
    if (backend === undefined || comm(backend) !== "postgres") return null;
    const postmaster = Number(statFields(backend)?.[1]);
    const own = statFields(postmaster);
    if (!own || comm(postmaster) !== "postgres") return null;
    // From field 3 on (statFields): utime, stime, cutime, cstime are fields 14–17, so [11]–[14].
    let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const fields = statFields(Number(entry));
      if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
    }
    return Number.isFinite(ticks) ? ticks / CLOCK_TICKS : null;
  } catch {
    return null;
  }
}
