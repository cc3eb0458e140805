/**
 * CPU seconds Postgres and Redis have used so far, read before and after a measured run: Redis from its own
 * INFO (the server process with its threads, wherever it runs), Postgres from /proc (the postmaster, the
 * children it has reaped and those alive now), found through the lab's own backend. Null when it cannot be
 * read here (Postgres in a container or on another host): an unknown figure, never 0. Beside them, from the
 * same scan of /proc, what every process that is not the lab's used: other_cpu.ts tells a stray from it.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { basename } from "node:path";
import type { Cluster, Redis } from "ioredis";
import type postgres from "postgres";
import { procStat } from "../shared/owner_record.ts";
import { eachRedis } from "./reset.ts";

/** Clock ticks per second of /proc/<pid>/stat's times (sysconf(_SC_CLK_TCK): 100 on Linux). */
const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

export interface ServiceCpu {
  postgresS: number | null;
  redisS: number | null;
  /**
   * Every process of this machine that is not the lab's (this process and what it started, Postgres,
   * Redis, Toxiproxy) nor a kernel thread, with the children each has reaped; null when Postgres or Redis
   * is not a process here (then theirs cannot be told from a stray's).
   */
  othersS: number | null;
  /** Time the hypervisor took from this machine (/proc/stat's steal), or null. */
  stealS: number | null;
  /** When it was read (performance.now(), ms). */
  atMs: number;
}

/** Redis's figure is every server's behind the client: a Redis Cluster's masters, summed. */
export async function serviceCpu(sql: postgres.Sql, redis: Redis | Cluster): Promise<ServiceCpu> {
  const [backend, redisEach] = await Promise.all([
    backendPid(sql),
    Promise.all(eachRedis(redis).map(redisCpu)),
  ]);
  const table = processTable();
  const postmaster = backend === null ? null : postmasterOf(table, backend);
  const redisS = redisEach.some((each) => each === null)
    ? null
    : redisEach.reduce((sum: number, each) => sum + (each?.cpuS ?? 0), 0);
  const redisPids = redisEach.map((each) => each?.pid ?? -1);
  const redisHere = redisPids.every((pid) =>
    REDIS_PROGRAMS.some((program) => programOf(pid, table.get(pid)?.comm ?? "").startsWith(program)),
  );
  return {
    postgresS: postmaster === null ? null : postgresTicks(table, postmaster) / CLOCK_TICKS,
    redisS,
    othersS:
      postmaster === null || !redisHere ? null : othersTicks(table, [postmaster, ...redisPids]) / CLOCK_TICKS,
    stealS: stealS(),
    atMs: performance.now(),
  };
}

/** What the process behind a Redis client may be: Redis, or the lab's valkey-server (`--redis-server valkey`). */
const REDIS_PROGRAMS = ["redis-server", "valkey-server"];

/**
 * The program a process runs: its command name; or, for one the lab started through a file descriptor (run_as.ts
 * runs a binary its service user cannot reach as /proc/self/fd/3, and the kernel names it "3"), its executable's
 * file name.
 */
export function programOf(pid: number, comm: string): string {
  if (!/^\d+$/.test(comm)) return comm;
  try {
    return basename(readlinkSync(`/proc/${pid}/exe`));
  } catch {
    return comm;
  }
}

export interface Proc {
  ppid: number;
  comm: string;
  /** utime + stime: the process's own, scaled by the kernel to its exact runtime. */
  own: number;
  /** cutime + cstime: the children it has waited for. */
  reaped: number;
}

/** Every process now, from /proc/<pid>/stat (fields 4 and 14–17). A process that exits meanwhile is skipped. */
export function processTable(): Map<number, Proc> {
  const table = new Map<number, Proc>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const stat = procStat(pid);
    if (!stat) continue;
    const { comm, fields } = stat;
    // From field 3 on: ppid is field 4, utime, stime, cutime, cstime are 14–17: [1], [11]–[14].
    const [own, reaped] = [Number(fields[11]) + Number(fields[12]), Number(fields[13]) + Number(fields[14])];
    if (Number.isFinite(own) && Number.isFinite(reaped))
      table.set(pid, { ppid: Number(fields[1]), comm, own, reaped });
  }
  return table;
}

function postmasterOf(table: Map<number, Proc>, backend: number): number | null {
  const postmaster = table.get(backend)?.ppid ?? -1;
  return table.get(postmaster)?.comm === "postgres" ? postmaster : null;
}

/**
 * The postmaster's own CPU, its reaped children's and its live children's, in ticks. A backend that exits
 * between the two readings moves from "live" to "reaped": the sum does not drop.
 */
function postgresTicks(table: Map<number, Proc>, postmaster: number): number {
  const own = table.get(postmaster) as Proc;
  let ticks = own.own + own.reaped;
  for (const proc of table.values()) if (proc.ppid === postmaster) ticks += proc.own;
  return ticks;
}

/**
 * Whether a process is the lab's: this process and its descendants (the server, the load tool), the
 * services' trees (`roots`: the postmaster, Redis), Toxiproxy, and kernel threads (kthreadd's, pid 2: their
 * network and disk work is on the lab's behalf).
 */
export function labProcesses(table: Map<number, Proc>, roots: number[]): (pid: number) => boolean {
  const lab = new Set([process.pid, ...roots, 2]);
  for (const [pid, proc] of table) if (programOf(pid, proc.comm).startsWith("toxiproxy-serve")) lab.add(pid);
  return (pid) => {
    for (let at = pid, hops = 0; at > 1 && hops < 64; hops++) {
      if (lab.has(at)) return true;
      at = table.get(at)?.ppid ?? 0;
    }
    return false;
  };
}

/**
 * Every other process's own and reaped CPU, in ticks: the sum's growth between two readings is what they
 * used, a process that exits meanwhile included (its time moves to its parent's reaped share).
 */
function othersTicks(table: Map<number, Proc>, roots: number[]): number {
  const isLab = labProcesses(table, roots);
  let ticks = 0;
  for (const [pid, proc] of table) if (!isLab(pid)) ticks += proc.own + proc.reaped;
  return ticks;
}

/** /proc/stat's steal (its first line's eighth figure), in seconds, or null. */
export function stealS(stat = readProcStat()): number | null {
  const steal = Number(
    /^cpu\s+(.*)$/m
      .exec(stat ?? "")?.[1]
      ?.trim()
      .split(/\s+/)[7],
  );
  return Number.isFinite(steal) ? steal / CLOCK_TICKS : null;
}

function readProcStat(): string | null {
  try {
    return readFileSync("/proc/stat", "utf8");
  } catch {
    return null;
  }
}

/** after − before, or null when either is unknown (or the service restarted in between). */
export function cpuDelta(before: number | null, after: number | null): number | null {
  if (before === null || after === null || after < before) return null;
  return Math.round((after - before) * 1000) / 1000;
}

/** used_cpu_sys + used_cpu_user from INFO cpu (the server process, all its threads) and its pid, or null. */
async function redisCpu(redis: Redis): Promise<{ cpuS: number; pid: number } | null> {
  try {
    const info = `${await redis.info("server")}\n${await redis.info("cpu")}`;
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1]);
    const cpuS = field("used_cpu_sys") + field("used_cpu_user");
    return Number.isFinite(cpuS) ? { cpuS, pid: field("process_id") } : null;
  } catch {
    return null;
  }
}

/** The lab's own backend's pid, when it is a postgres process on this host (not in a container or elsewhere). */
async function backendPid(sql: postgres.Sql): Promise<number | null> {
  try {
    const [row] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
    return row?.pid !== undefined && procStat(row.pid)?.comm === "postgres" ? row.pid : null;
  } catch {
    return null;
  }
}
