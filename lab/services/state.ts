/**
 * The services' shared types and settings; what cachelab started, in <stateDir>/services.json; and the process
 * helpers every start and stop shares: pidfiles, liveness from /proc, log tails, a bounded command run.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";

export type ServiceMode = "external" | "native" | "docker";
export type ServiceName = "postgres" | "redis";

/** How one server is reached and whether cachelab owns it. */
export interface ServiceInfo {
  mode: ServiceMode;
  url: string;
  version: string | null;
  startedByCachelab: boolean;
}

export const DATABASE_NAME = "cachelab";
export const PREFERRED_POSTGRES_PORT = 55432;
export const PREFERRED_REDIS_PORT = 56379;
export const READY_TIMEOUT_MS = 15_000;
export const STOP_TIMEOUT_MS = 10_000;
export interface NativeRecord {
  mode: "native";
  url: string;
  port: number;
  pidFile: string;
  dataDir: string;
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
/** What cachelab started: Postgres and Redis, and Toxiproxy (native only) for fault and distance experiments. */
export type StateFile = Partial<Record<ServiceName | "toxiproxy", ServiceRecord>>;

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
  options: { cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  try {
    const child = Bun.spawn(argv, {
      cwd: options.cwd,
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
  mkdirSync(ctx.stateDir, { recursive: true });
  const temporaryPath = `${ctx.statePath}.${process.pid}.tmp`;
  writeFileSync(temporaryPath, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(temporaryPath, ctx.statePath);
}

/** Read-modify-write without an await in between, so concurrent starts in one process do not race. */
export function recordService(ctx: Context, name: ServiceName | "toxiproxy", record: ServiceRecord): void {
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

/** Alive, not a zombie, and (where /proc exists) still the program we started, not a reused pid. */
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
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(program);
  } catch {
    return false;
  }
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
