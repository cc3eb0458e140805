/**
 * The services' shared types and settings; what cachelab started, in <stateDir>/services.json; and the process
 * helpers every start and stop shares: pidfiles, liveness and identity from /proc, log tails, a bounded
 * command run, folders only we own.
 */

import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { processStartTicks } from "../shared/owner_record.ts";

export type ServiceMode = "external" | "native" | "docker";
export type ServiceName = "postgres" | "redis";
/** The services.json records of single servers. */
export type RecordedName = ServiceName | "toxiproxy" | "valkey";

/** How one server is reached and whether cachelab owns it. */
export interface ServiceInfo {
  mode: ServiceMode;
  url: string;
  version: string | null;
  startedByCachelab: boolean;
  /** Redis-protocol servers only: what the server says it is (`redis`, `valkey`: probe.ts). */
  server?: string;
}

export const DATABASE_NAME = "cachelab";
export const PREFERRED_POSTGRES_PORT = 55432;
export const PREFERRED_REDIS_PORT = 56379;
export const PREFERRED_VALKEY_PORT = 56380;
export const READY_TIMEOUT_MS = 15_000;
export const STOP_TIMEOUT_MS = 10_000;
/** Which process cachelab started: a pid names it only together with its start time and the boot. */
export interface ProcessStamp {
  pid: number;
  /** /proc/<pid>/stat field 22: clock ticks from boot to the process's start. */
  startTicks: string;
  /** /proc/sys/kernel/random/boot_id: the same start time after a reboot is another process. */
  bootId: string | null;
}

export interface NativeRecord {
  mode: "native";
  url: string;
  port: number;
  pidFile: string;
  dataDir: string;
  /** The server process as started; absent in records an older cachelab wrote. */
  process?: ProcessStamp;
  /** Postgres only: the binaries that initialized and started dataDir. */
  binDir?: string;
}

export interface DockerRecord {
  mode: "docker";
  url: string;
  port: number;
  composeFile: string;
}

export type ServiceRecord = NativeRecord | DockerRecord;
/**
 * What cachelab started: Postgres and Redis, Toxiproxy (native only) for fault and distance experiments, and the
 * valkey-server of `--redis-server valkey` runs (native only); and, when root keeps the native Postgres outside
 * a private checkout, the folder it made for it.
 */
export type StateFile = Partial<Record<RecordedName, ServiceRecord>> & {
  postgresRoot?: string;
  /** The lab's Redis Cluster (lab/services/native_redis_cluster.ts): one record per node. */
  redisCluster?: RedisClusterRecord;
};

/** What the lab records of its Redis Cluster: one native record per node. */
export interface RedisClusterRecord {
  mode: "native";
  nodes: NativeRecord[];
}

export interface Context {
  stateDir: string;
  statePath: string;
  env: Record<string, string | undefined>;
  log: (line: string) => void;
  defaults: { databaseUrl: string; redisUrl: string };
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export async function run(
  argv: string[],
  options: { cwd?: string; timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<RunResult> {
  try {
    const child = Bun.spawn(argv, {
      cwd: options.cwd,
      env: options.env === undefined ? undefined : { ...process.env, ...options.env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      timeout: options.timeoutMs,
    });
    const [stdout, stderr, exitCode] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    return { exitCode, stdout, stderr };
  } catch (error) {
    // Bun.spawn throws when the executable cannot be run at all (ENOENT, EACCES).
    return { exitCode: 127, stdout: "", stderr: errorMessage(error) };
  }
}

export function readState(ctx: Context): StateFile {
  if (!existsSync(ctx.statePath)) return {};
  // Its records decide what `down` signals: only a file of ours in a folder of ours is believed.
  for (const path of [ctx.stateDir, ctx.statePath]) {
    const stat = lstatSync(path);
    const uid = process.getuid?.();
    if (stat.isSymbolicLink() || (uid !== undefined && stat.uid !== uid)) {
      throw new Error(
        `Cannot read ${ctx.statePath}: ${path} is a symbolic link or another user's: received uid ${stat.uid}`,
      );
    }
  }
  try {
    return JSON.parse(readFileSync(ctx.statePath, "utf8")) as StateFile;
  } catch (error) {
    throw new Error(
      `Cannot read ${ctx.statePath}: ${errorMessage(error)} (delete it if no server is running)`,
    );
  }
}

export function writeState(ctx: Context, state: StateFile): void {
  if (Object.keys(state).length === 0) {
    rmSync(ctx.statePath, { force: true });
    return;
  }
  ensureOwnedDir(ctx.stateDir, stateDirMode());
  const temporaryPath = `${ctx.statePath}.${process.pid}.tmp`;
  // 0600: the records' URLs carry the generated passwords.
  writeFileSync(temporaryPath, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporaryPath, ctx.statePath);
}

/** Read-modify-write without an await in between, so concurrent starts in one process do not race. */
export function recordService(ctx: Context, name: RecordedName, record: ServiceRecord): void {
  const state = readState(ctx);
  state[name] = record;
  writeState(ctx, state);
}

export function readPid(pidFile: string): number | null {
  if (!existsSync(pidFile)) return null;
  const firstLine = readFileSync(pidFile, "utf8").split("\n")[0]?.trim() ?? "";
  const pid = Number.parseInt(firstLine, 10);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** Alive, not a zombie, and (where /proc exists) running the program by name: a first, cheap check. */
export function isAlive(pid: number, program: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as { code?: string }).code !== "EPERM") return false;
  }
  if (!existsSync("/proc/self/stat")) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return false;
    // A binary run as /proc/self/fd/3 (run_as.ts) is named by its exe link, not its command line.
    return (
      readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(program) ||
      readlinkOrEmpty(`/proc/${pid}/exe`).includes(program)
    );
  } catch {
    return false;
  }
}

/** The process's start stamp, or null when it is gone or there is no /proc. */
export function processStamp(pid: number): ProcessStamp | null {
  const startTicks = processStartTicks(pid);
  return startTicks === null ? null : { pid, startTicks: String(startTicks), bootId: bootId() };
}

function bootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null;
  }
}

/** Whether the process holds a TCP socket listening on `port` (its netns's /proc/<pid>/net/tcp{,6}). */
export function listensOn(pid: number, port: number): boolean {
  const sockets = new Set<string>();
  for (const table of ["tcp", "tcp6"]) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const [, local, , state, , , , , , inode] = line.trim().split(/\s+/);
      if (!local || state !== "0A" || !inode) continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(":") + 1), 16) === port)
        sockets.add(`socket:[${inode}]`);
    }
  }
  if (sockets.size === 0) return false;
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return sockets.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

/**
 * The record's pid when its process is the one cachelab started: alive as `program`, with the recorded start
 * time (when recorded), listening on the recorded port and, given `cwd`, working in it (Postgres works in its
 * data folder). Otherwise why not: a pidfile naming a reused pid (e.g. the system's own redis-server after a
 * reboot) must never be signalled.
 */
export function ourProcess(
  record: NativeRecord,
  program: string,
  cwd?: string,
): { pid: number } | { problem: string } {
  const pid = record.process?.pid ?? readPid(record.pidFile);
  if (pid === null) return { problem: "no pid recorded" };
  if (!isAlive(pid, program)) return { problem: `pid ${pid} is not a running ${program}` };
  if (!existsSync("/proc/self/stat")) return { pid };
  if (record.process) {
    const now = processStamp(pid);
    if (now?.startTicks !== record.process.startTicks || now.bootId !== record.process.bootId) {
      return { problem: `pid ${pid} is a ${program} started at another time than the recorded one` };
    }
  }
  if (!listensOn(pid, record.port)) {
    return { problem: `pid ${pid} does not listen on the recorded port ${record.port}` };
  }
  if (cwd !== undefined && readlinkOrEmpty(`/proc/${pid}/cwd`) !== cwd) {
    return { problem: `pid ${pid} does not run in ${cwd}` };
  }
  return { pid };
}

function readlinkOrEmpty(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "";
  }
}

/** 0700; as root 0711, so the postgres user can pass through to its own folder (listing stays refused). */
export function stateDirMode(): number {
  return process.getuid?.() === 0 ? 0o711 : 0o700;
}

/**
 * Creates `dir` with `mode`, or checks an existing one is a real folder (not a symlink) owned by us, then sets
 * `mode`: a folder someone else made, or a link to one, is refused, never written into.
 */
export function ensureOwnedDir(dir: string, mode: number): void {
  mkdirSync(dir, { recursive: true, mode });
  const stat = lstatSync(dir);
  if (stat.isSymbolicLink())
    throw new Error(`Cannot use folder ${dir}: it is a symbolic link: received a link`);
  if (!stat.isDirectory())
    throw new Error(`Cannot use folder ${dir}: not a folder: received mode ${stat.mode.toString(8)}`);
  const uid = process.getuid?.();
  if (uid !== undefined && stat.uid !== uid) {
    throw new Error(
      `Cannot use folder ${dir}: it belongs to another user (uid ${stat.uid}, we are ${uid}): received uid ${stat.uid}`,
    );
  }
  if ((stat.mode & 0o777) !== mode) chmodSync(dir, mode);
}

export async function waitForExit(pid: number, program: string, timeoutMs: number): Promise<boolean> {
  const deadlineMs = performance.now() + timeoutMs;
  let delayMs = 10;
  while (isAlive(pid, program)) {
    if (performance.now() >= deadlineMs) return false;
    await Bun.sleep(delayMs);
    delayMs = Math.min(delayMs * 2, 200);
  }
  return true;
}

export function programName(name: ServiceName): string {
  return name === "postgres" ? "postgres" : "redis-server";
}

export function logTail(logFile: string, lineCount = 20): string {
  if (!existsSync(logFile)) return "";
  const lines = readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-lineCount);
  return `\n--- last lines of ${logFile} ---\n${lines.join("\n")}`;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}
