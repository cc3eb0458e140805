/**
 * A redis-server cachelab starts itself, without persistence, on a free port; and its stop.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../shared/ports.ts";
import { waitUntilAnswers } from "./probe.ts";
import {
  type Context,
  isAlive,
  logTail,
  type NativeRecord,
  PREFERRED_REDIS_PORT,
  readPid,
  recordService,
  run,
  type ServiceInfo,
  STOP_TIMEOUT_MS,
  waitForExit,
} from "./state.ts";

export async function startNativeRedis(ctx: Context): Promise<ServiceInfo | null> {
  const redisServer = Bun.which("redis-server", { PATH: ctx.env.PATH ?? "" });
  if (!redisServer) return null;

  const dir = join(ctx.stateDir, "redis");
  const pidFile = join(dir, "redis.pid");
  const logFile = join(dir, "log");
  mkdirSync(dir, { recursive: true });
  const stalePid = readPid(pidFile);
  if (stalePid !== null && !isAlive(stalePid, "redis-server")) rmSync(pidFile, { force: true });

  const port = await freePort(PREFERRED_REDIS_PORT);
  const startedMs = performance.now();
  const result = await run([
    redisServer,
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--daemonize",
    "yes",
    "--pidfile",
    pidFile,
    "--logfile",
    logFile,
    "--dir",
    dir,
  ]);
  if (result.exitCode !== 0) {
    throw new Error(
      `Cannot start Redis: redis-server exited ${result.exitCode}: ${result.stderr.trim()}${logTail(logFile)}`,
    );
  }
  const url = `redis://127.0.0.1:${port}`;
  recordService(ctx, "redis", { mode: "native", url, port, pidFile, dataDir: dir });

  const ready = await waitUntilAnswers("redis", url);
  if (!ready.ok) throw new Error(`Cannot reach the native Redis: ${ready.reason}${logTail(logFile)}`);
  ctx.log(`redis: started native server on port ${port} in ${Math.round(performance.now() - startedMs)} ms`);
  return { mode: "native", url, version: ready.version, startedByCachelab: true };
}

export async function stopNativeRedis(record: NativeRecord): Promise<string> {
  const pid = readPid(record.pidFile);
  if (pid === null || !isAlive(pid, "redis-server")) {
    rmSync(record.pidFile, { force: true });
    return `redis: native server on port ${record.port} was not running`;
  }
  process.kill(pid, "SIGTERM");
  if (await waitForExit(pid, "redis-server", STOP_TIMEOUT_MS)) {
    return `redis: stopped native server (pid ${pid}, port ${record.port})`;
  }
  process.kill(pid, "SIGKILL");
  if (!(await waitForExit(pid, "redis-server", STOP_TIMEOUT_MS))) {
    throw new Error(`Cannot stop Redis: still running after SIGKILL: received pid ${pid}`);
  }
  rmSync(record.pidFile, { force: true });
  return `redis: killed native server (pid ${pid}, port ${record.port}) after SIGTERM timed out`;
}
