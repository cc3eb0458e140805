/**
 * A redis-server cachelab starts itself, without persistence, on a free port, with a generated password
 * (`requirepass`), as the `redis` user (else `nobody`) when the lab runs as root; and its stop.
 *
 * Its configuration, password included, goes in on stdin (`redis-server -`), so it is on no command line and
 * in no file the Redis user can read; Redis needs no folder of its own: it works in / (no snapshots) and logs
 * to stdout, which is <stateDir>/redis/log opened by the lab.
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

export async function startNativeRedis(ctx: Context): Promise<ServiceInfo | null> {
  const redisServer = Bun.which(PROGRAM, { PATH: ctx.env.PATH ?? "" });
  if (!redisServer) return null;

  const { redisPassword } = readCredentials(ctx);
  const dir = join(ctx.stateDir, "redis");
  const pidFile = join(dir, "redis.pid");
  const logFile = join(dir, "log");
  ensureOwnedDir(dir, 0o700);
  rmSync(pidFile, { force: true });

  const port = await freePort(PREFERRED_REDIS_PORT);
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
  const user = findServiceUser(["redis", "nobody"]);
  const spawn = unprivilegedSpawn(user, redisServer, ["-"]);
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
  recordService(ctx, "redis", { mode: "native", url, port, pidFile, dataDir: dir, process: stamp });

  // Its exit code, not its name: until setpriv has exec'd the server, the pid is named setpriv.
  const ready = await waitUntilAnswers(
    "redis",
    url,
    () => proc.exitCode === null && proc.signalCode === null,
  );
  if (!ready.ok) throw new Error(`Cannot reach the native Redis: ${ready.reason}${logTail(logFile)}`);
  const as = user && process.getuid?.() === 0 ? ` as ${user.name}` : "";
  ctx.log(
    `redis: started native server${as} on port ${port} (password required) in ${Math.round(performance.now() - startedMs)} ms`,
  );
  return { mode: "native", url, version: ready.version, startedByCachelab: true };
}

export async function stopNativeRedis(record: NativeRecord): Promise<string> {
  const ours = ourProcess(record, PROGRAM);
  if ("problem" in ours) {
    rmSync(record.pidFile, { force: true });
    return `redis: native server on port ${record.port} was not running (${ours.problem}; not signalled)`;
  }
  const { pid } = ours;
  process.kill(pid, "SIGTERM");
  if (await waitForExit(pid, PROGRAM, STOP_TIMEOUT_MS)) {
    rmSync(record.pidFile, { force: true });
    return `redis: stopped native server (pid ${pid}, port ${record.port})`;
  }
  process.kill(pid, "SIGKILL");
  if (!(await waitForExit(pid, PROGRAM, STOP_TIMEOUT_MS))) {
    throw new Error(`Cannot stop Redis: still running after SIGKILL: received pid ${pid}`);
  }
  rmSync(record.pidFile, { force: true });
  return `redis: killed native server (pid ${pid}, port ${record.port}) after SIGTERM timed out`;
}
