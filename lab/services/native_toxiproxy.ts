/**
 * Toxiproxy as a service beside Postgres and Redis: found (TOXIPROXY_URL, or the server cachelab recorded) or
 * started natively from the pinned `toxiproxy-server` (lab/faults/toxiproxy.ts detects it), on a free port
 * below the ephemeral range, with a pidfile and a log under <stateDir>/toxiproxy; and its stop.
 *
 * It is optional for the services as a whole (quickstart needs none), so a missing binary is a note, not an
 * error; an experiment that routes a service through it refuses to start without it, naming the install.
 */
import { closeSync, mkdirSync, openSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { detectToxiproxy, freeLowPort, TOXIPROXY_INSTALL, Toxiproxy } from "../faults/toxiproxy.ts";
import {
  type Context,
  errorMessage,
  isAlive,
  logTail,
  type NativeRecord,
  READY_TIMEOUT_MS,
  readPid,
  readState,
  recordService,
  type ServiceInfo,
  STOP_TIMEOUT_MS,
  waitForExit,
  writeState,
} from "./state.ts";

const PROGRAM = "toxiproxy-server";

/** Whether the API at `url` answers, and the version of the binary behind it when cachelab knows it. */
async function answers(url: string): Promise<boolean> {
  return new Toxiproxy(url).version().then(
    () => true,
    () => false,
  );
}

/**
 * TOXIPROXY_URL (must answer), else the native server cachelab recorded (still alive and answering), else
 * null. A dead record is cleaned.
 */
export async function findToxiproxy(ctx: Context, purpose: "up" | "status"): Promise<ServiceInfo | null> {
  const envUrl = ctx.env.TOXIPROXY_URL;
  const version = () => {
    const found = detectToxiproxy();
    return "missing" in found ? null : found.version;
  };
  if (envUrl) {
    if (await answers(envUrl))
      return { mode: "external", url: envUrl, version: null, startedByCachelab: false };
    const message = `Cannot reach Toxiproxy from TOXIPROXY_URL: its API does not answer: received ${envUrl}`;
    if (purpose === "up") throw new Error(message);
    ctx.log(message);
    return null;
  }
  const state = readState(ctx);
  const record = state.toxiproxy;
  if (record?.mode !== "native") return null;
  const pid = readPid(record.pidFile);
  if (pid !== null && purpose === "up" && isAlive(pid, PROGRAM) && binaryReplaced(pid)) {
    // install-deps rebuilt toxiproxy-server under it: the old process lacks what the new build adds.
    ctx.log(`toxiproxy: the recorded server (pid ${pid}) runs a binary since rebuilt; restarting it`);
    await stopNativeToxiproxy(record);
  } else if (pid !== null && isAlive(pid, PROGRAM) && (await answers(record.url))) {
    if (purpose === "up") ctx.log(`toxiproxy: reusing native server (pid ${pid}) at ${record.url}`);
    return { mode: "native", url: record.url, version: version(), startedByCachelab: true };
  }
  if (purpose === "up") {
    ctx.log(`toxiproxy: recorded native server on port ${record.port} is gone or stale; starting a new one`);
    rmSync(record.pidFile, { force: true });
    delete state.toxiproxy;
    writeState(ctx, state);
  }
  return null;
}

/** Whether the process runs an executable that has since been replaced on disk (Linux: /proc/<pid>/exe). */
function binaryReplaced(pid: number): boolean {
  try {
    return readlinkSync(`/proc/${pid}/exe`).endsWith(" (deleted)");
  } catch {
    return false;
  }
}

/** Starts `toxiproxy-server` in its own session; null (with a note) when it is not installed. */
export async function startNativeToxiproxy(ctx: Context): Promise<ServiceInfo | null> {
  const found = detectToxiproxy();
  if ("missing" in found) {
    ctx.log(`toxiproxy: ${found.missing}; experiments with faults or network paths cannot run`);
    return null;
  }
  const dir = join(ctx.stateDir, "toxiproxy");
  const pidFile = join(dir, "toxiproxy.pid");
  const logFile = join(dir, "log");
  mkdirSync(dir, { recursive: true });
  const port = await freeLowPort();
  const startedMs = performance.now();
  const log = openSync(logFile, "a");
  let pid: number;
  try {
    // Detached (its own session) and unreferenced: it outlives `bun run services up`, like redis-server.
    const proc = Bun.spawn([found.path, "-host", "127.0.0.1", "-port", String(port)], {
      env: { ...process.env, LOG_LEVEL: "warn" },
      stdio: ["ignore", log, log],
      detached: true,
    });
    proc.unref();
    pid = proc.pid;
  } finally {
    closeSync(log);
  }
  writeFileSync(pidFile, `${pid}\n`);
  const url = `http://127.0.0.1:${port}`;
  recordService(ctx, "toxiproxy", { mode: "native", url, port, pidFile, dataDir: dir });
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (!(await answers(url))) {
    if (!isAlive(pid, PROGRAM) || performance.now() > deadline) {
      throw new Error(`Cannot start Toxiproxy: its API did not answer at ${url}${logTail(logFile)}`);
    }
    await Bun.sleep(20);
  }
  ctx.log(
    `toxiproxy: started native server ${found.version} on port ${port} in ${Math.round(performance.now() - startedMs)} ms`,
  );
  return { mode: "native", url, version: found.version, startedByCachelab: true };
}

export async function stopNativeToxiproxy(record: NativeRecord): Promise<string> {
  const pid = readPid(record.pidFile);
  if (pid === null || !isAlive(pid, PROGRAM)) {
    rmSync(record.pidFile, { force: true });
    return `toxiproxy: native server on port ${record.port} was not running`;
  }
  try {
    process.kill(pid, "SIGTERM");
    if (!(await waitForExit(pid, PROGRAM, STOP_TIMEOUT_MS))) {
      process.kill(pid, "SIGKILL");
      if (!(await waitForExit(pid, PROGRAM, STOP_TIMEOUT_MS))) {
        throw new Error(`still running after SIGKILL: received pid ${pid}`);
      }
    }
  } catch (error) {
    throw new Error(`Cannot stop Toxiproxy: ${errorMessage(error)}`);
  }
  rmSync(record.pidFile, { force: true });
  return `toxiproxy: stopped native server (pid ${pid}, port ${record.port})`;
}

/** The line to print when an experiment needs Toxiproxy and none is there. */
export const TOXIPROXY_MISSING = `Toxiproxy is not running: install it (${TOXIPROXY_INSTALL}), then \`bun run services up\`, or set TOXIPROXY_URL`;
