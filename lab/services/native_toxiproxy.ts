/**
 * Toxiproxy as a service beside Postgres and Redis: found (TOXIPROXY_URL, or the server cachelab recorded) or
 * started natively from the pinned `toxiproxy-server` (lab/faults/toxiproxy.ts detects it), on a free port
 * below the ephemeral range, its API on 127.0.0.1 only and, when the lab runs as root, as `nobody` (its API has
 * no authentication, so whoever reaches it may open proxies: not with root's powers), with a pidfile and a
 * log under <stateDir>/toxiproxy; and its stop.
 *
 * It is optional for the services as a whole (quickstart needs none), so a missing binary is a note, not an
 * error; an experiment that routes a service through it refuses to start without it, naming the install.
 */
import { readlinkSync, rmSync } from "node:fs";
import { join } from "node:path";
import {
  detectToxiproxy,
  freeLowPort,
  TOXIPROXY_INSTALL,
  Toxiproxy,
  toxiproxySpawn,
} from "../faults/toxiproxy.ts";
import { redactUrl } from "./probe.ts";
import { spawnDetached } from "./run_as.ts";
import {
  type Context,
  ensureOwnedDir,
  errorMessage,
  logTail,
  type NativeRecord,
  ourProcess,
  processStamp,
  READY_TIMEOUT_MS,
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
    const message = `Cannot reach Toxiproxy from TOXIPROXY_URL: its API does not answer: received ${redactUrl(envUrl)}`;
    if (purpose === "up") throw new Error(message);
    ctx.log(message);
    return null;
  }
  const state = readState(ctx);
  const record = state.toxiproxy;
  if (record?.mode !== "native") return null;
  const ours = ourProcess(record, PROGRAM);
  const pid = "pid" in ours ? ours.pid : null;
  if (pid !== null && purpose === "up" && binaryReplaced(pid)) {
    // install-deps rebuilt toxiproxy-server under it: the old process lacks what the new build adds.
    ctx.log(`toxiproxy: the recorded server (pid ${pid}) runs a binary since rebuilt; restarting it`);
    await stopNativeToxiproxy(record);
  } else if (pid !== null && purpose === "up" && !record.process) {
    // An older cachelab recorded no start time and ran it as root: start one the new way.
    ctx.log(`toxiproxy: the recorded server (pid ${pid}) predates unprivileged starts; restarting it`);
    await stopNativeToxiproxy(record);
  } else if (pid !== null && (await answers(record.url))) {
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
  ensureOwnedDir(dir, 0o700);
  const port = await freeLowPort();
  const startedMs = performance.now();
  const spawn = toxiproxySpawn(found.path, port);
  const proc = spawnDetached(spawn, { logFile, pidFile, env: { LOG_LEVEL: "warn" } });
  const { pid } = proc;
  const url = `http://127.0.0.1:${port}`;
  const stamp = processStamp(pid) ?? undefined;
  recordService(ctx, "toxiproxy", { mode: "native", url, port, pidFile, dataDir: dir, process: stamp });
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (!(await answers(url))) {
    // Its exit code, not its name: until setpriv has exec'd the server, the pid is named setpriv.
    if (proc.exitCode !== null || proc.signalCode !== null || performance.now() > deadline) {
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
  const ours = ourProcess(record, PROGRAM);
  if ("problem" in ours) {
    rmSync(record.pidFile, { force: true });
    return `toxiproxy: native server on port ${record.port} was not running (${ours.problem}; not signalled)`;
  }
  const { pid } = ours;
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
