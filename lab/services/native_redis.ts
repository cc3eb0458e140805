/**
 * A redis-server cachelab starts itself, without persistence, on a free port, with a generated password
 * (`requirepass`), as the `redis` user (else `nobody`) when the lab runs as root; and its stop. The lab's
 * valkey-server (native_valkey.ts) starts and stops the same way, through `startRedisLike` and `stopRedisLike`.
 *
 * Its configuration, password included, goes in on stdin (`redis-server -`), so it is on no command line and
 * in no file the Redis user can read; Redis needs no folder of its own: it works in / (no snapshots) and logs
 * to stdout, which is <stateDir>/<name>/log opened by the lab.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../shared/ports.ts";
import { readCredentials } from "./credentials.ts";
import { waitUntilAnswers } from "./probe.ts";
import { findServiceUser, spawnDetached, unprivilegedSpawn } from "./run_as.ts";
import {
  type Context,
  ensureOwnedDir,
  logTail,
  type NativeRecord,
  ourProcess,
  PREFERRED_REDIS_PORT,
  processStamp,
  recordService,
  type ServiceInfo,
  STOP_TIMEOUT_MS,
  waitForExit,
} from "./state.ts";

const PROGRAM = "redis-server";

/** A Redis-protocol server the lab starts: what it is called, its binary, who runs it, where it would listen. */
export interface RedisLike {
  /** Its services.json record, folder under <stateDir> and log lines' name. */
  name: "redis" | "valkey";
  /** The program as /proc names it (ownership checks) and as messages name it. */
  program: string;
  binary: string;
  /** The system users to run it as when the lab is root, the first that exists. */
  users: string[];
  preferredPort: number;
}

export async function startNativeRedis(ctx: Context): Promise<ServiceInfo | null> {
  const redisServer = Bun.which(PROGRAM, { PATH: ctx.env.PATH ?? "" });
  if (!redisServer) return null;
  return startRedisLike(ctx, {
    name: "redis",
    program: PROGRAM,
    binary: redisServer,
    users: ["redis", "nobody"],
    preferredPort: PREFERRED_REDIS_PORT,
  });
}

/** Starts `server` with the lab's Redis password, records it as `server.name`, and waits until it answers. */
export async function startRedisLike(ctx: Context, server: RedisLike): Promise<ServiceInfo> {
  const { redisPassword } = readCredentials(ctx);
  const { name } = server;
  const dir = join(ctx.stateDir, name);
  const pidFile = join(dir, `${name}.pid`);
  const logFile = join(dir, "log");
  ensureOwnedDir(dir, 0o700);
  rmSync(pidFile, { force: true });

  const port = await freePort(server.preferredPort);
  const config = [
    `port ${port}`,
    "bind 127.0.0.1",
    "protected-mode yes",
    `requirepass ${redisPassword}`,
    'save ""',
    "appendonly no",
    "daemonize no",
    'logfile ""',
  ].join("\n");
  const user = findServiceUser(server.users);
  const spawn = unprivilegedSpawn(user, server.binary, ["-"]);
  const startedMs = performance.now();
  const proc = spawnDetached(spawn, {
    logFile,
    pidFile,
    env: { PATH: ctx.env.PATH ?? "/usr/bin:/bin" },
    stdin: `${config}\n`,
  });
  const { pid } = proc;
  const url = `redis://:${redisPassword}@127.0.0.1:${port}`;
  const stamp = processStamp(pid) ?? undefined;
  recordService(ctx, name, { mode: "native", url, port, pidFile, dataDir: dir, process: stamp });

  // Its exit code, not its name: until setpriv has exec'd the server, the pid is named setpriv.
  const ready = await waitUntilAnswers(
    "redis",
    url,
    () => proc.exitCode === null && proc.signalCode === null,
  );
  if (!ready.ok)
    throw new Error(`Cannot reach the native ${labelOf(name)}: ${ready.reason}${logTail(logFile)}`);
  const as = user && process.getuid?.() === 0 ? ` as ${user.name}` : "";
  ctx.log(
    `${name}: started native server${as} on port ${port} (password required) in ${Math.round(performance.now() - startedMs)} ms`,
  );
  return {
    mode: "native",
    url,
    version: ready.version,
    startedByCachelab: true,
    ...(ready.server ? { server: ready.server } : {}),
  };
}

export function stopNativeRedis(record: NativeRecord): Promise<string> {
  return stopRedisLike(record, "redis", PROGRAM);
}

/** Stops the recorded server when it is the process the lab started (never a reused pid); one line saying how. */
export async function stopRedisLike(record: NativeRecord, name: string, program: string): Promise<string> {
  const ours = ourProcess(record, program);
  if ("problem" in ours) {
    rmSync(record.pidFile, { force: true });
    return `${name}: native server on port ${record.port} was not running (${ours.problem}; not signalled)`;
  }
  const { pid } = ours;
  process.kill(pid, "SIGTERM");
  if (await waitForExit(pid, program, STOP_TIMEOUT_MS)) {
    rmSync(record.pidFile, { force: true });
    return `${name}: stopped native server (pid ${pid}, port ${record.port})`;
  }
  process.kill(pid, "SIGKILL");
  if (!(await waitForExit(pid, program, STOP_TIMEOUT_MS))) {
    throw new Error(`Cannot stop ${labelOf(name)}: still running after SIGKILL: received pid ${pid}`);
  }
  rmSync(record.pidFile, { force: true });
  return `${name}: killed native server (pid ${pid}, port ${record.port}) after SIGTERM timed out`;
}

function labelOf(name: string): string {
  return name === "valkey" ? "Valkey" : "Redis";
}
