/**
 * The valkey-server the lab runs beside its Redis, for `--redis-server valkey` runs and the tests' Valkey pass:
 * started on demand (never by a plain `services up`), like the lab's Redis (native_redis.ts): no persistence, a
 * free port, the lab's Redis password (`requirepass`) on stdin, as the `valkey` user (else `redis`, else
 * `nobody`) when the lab runs as root, its log in <stateDir>/valkey/log; reused while it is ours and answers;
 * stopped by `services down`. VALKEY_URL names a Valkey someone else runs instead (it must answer as Valkey).
 *
 * Its binary: VALKEY_SERVER; else the one install-deps.sh installs, $VALKEY_VENV/bin/valkey-server (default
 * ~/.local/share/cachelab/valkey); else `valkey-server` on PATH.
 */
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { startRedisLike, stopRedisLike } from "./native_redis.ts";
import { probe, redactUrl, waitUntilAnswers } from "./probe.ts";
import {
  type Context,
  type NativeRecord,
  ourProcess,
  PREFERRED_VALKEY_PORT,
  readState,
  type ServiceInfo,
  writeState,
} from "./state.ts";

export const VALKEY_PROGRAM = "valkey-server";
/** What a machine without it is told. */
export const VALKEY_MISSING =
  "valkey-server is not installed: received none in VALKEY_SERVER, $VALKEY_VENV/bin or PATH (bash scripts/install-deps.sh installs it)";

/** The valkey-server to start, or null when there is none. */
export function valkeyBinary(env: Record<string, string | undefined>): string | null {
  if (env.VALKEY_SERVER) return env.VALKEY_SERVER;
  const venv = env.VALKEY_VENV || join(env.HOME || homedir(), ".local", "share", "cachelab", "valkey");
  const installed = join(venv, "bin", VALKEY_PROGRAM);
  if (existsSync(installed)) return installed;
  return Bun.which(VALKEY_PROGRAM, { PATH: env.PATH ?? "" });
}

/** Starts the lab's valkey-server; null when none is installed; refused, unstarted, when the binary is not Valkey's. */
export async function startNativeValkey(ctx: Context): Promise<ServiceInfo | null> {
  const binary = valkeyBinary(ctx.env);
  if (binary === null) return null;
  // "Valkey server v=9.1.2 sha=… malloc=libc …": a redis-server in its place says "Redis server".
  const said = Bun.spawnSync([binary, "--version"], { stdout: "pipe", stderr: "pipe" });
  const version = said.stdout.toString().trim();
  if (said.exitCode !== 0 || !version.startsWith("Valkey server v=")) {
    throw new Error(
      `Cannot start Valkey: ${binary} --version does not name Valkey: received ${version || said.stderr.toString().trim() || `exit ${said.exitCode}`}`,
    );
  }
  return startRedisLike(ctx, {
    name: "valkey",
    program: VALKEY_PROGRAM,
    binary,
    users: ["valkey", "redis", "nobody"],
    preferredPort: PREFERRED_VALKEY_PORT,
  });
}

export function stopNativeValkey(record: NativeRecord): Promise<string> {
  return stopRedisLike(record, "valkey", VALKEY_PROGRAM);
}

/**
 * VALKEY_URL's server (it must answer, as Valkey), else the recorded native one while it is ours and answers;
 * else null, a stale record removed ("up"; "status" only looks).
 */
export async function findValkey(ctx: Context, purpose: "up" | "status"): Promise<ServiceInfo | null> {
  const state = readState(ctx);
  const record = state.valkey;
  const envUrl = ctx.env.VALKEY_URL;
  if (envUrl) {
    const result = await probe("redis", envUrl);
    const problem = !result.ok
      ? result.reason
      : result.server !== "valkey"
        ? `it answers as ${result.server} ${result.version ?? ""}, not as Valkey`
        : null;
    if (result.ok && problem === null) {
      const ours = record?.url === envUrl;
      return {
        mode: ours ? record.mode : "external",
        url: envUrl,
        version: result.version,
        startedByCachelab: ours,
        server: "valkey",
      };
    }
    const message = `Cannot connect to valkey from VALKEY_URL: ${problem}: received ${redactUrl(envUrl)}`;
    if (purpose === "up") throw new Error(message);
    ctx.log(message);
    return null;
  }
  if (record?.mode !== "native") return null;
  const ours = ourProcess(record, VALKEY_PROGRAM);
  const alive = () => "pid" in ourProcess(record, VALKEY_PROGRAM);
  const result =
    "pid" in ours
      ? purpose === "up"
        ? await waitUntilAnswers("redis", record.url, alive)
        : await probe("redis", record.url)
      : null;
  if (result?.ok) {
    if (purpose === "up") ctx.log(`valkey: reusing native server (pid ${"pid" in ours ? ours.pid : "?"})`);
    return {
      mode: "native",
      url: record.url,
      version: result.version,
      startedByCachelab: true,
      server: "valkey",
    };
  }
  if (purpose === "status") return null;
  const why = "problem" in ours ? ours.problem : result && !result.ok ? result.reason : "it exited";
  if (alive()) {
    throw new Error(
      `Cannot use the native valkey cachelab started: ${why}: received ${redactUrl(record.url)}`,
    );
  }
  ctx.log(`valkey: recorded native server on port ${record.port} is gone (${why}); starting a new one`);
  delete state.valkey;
  writeState(ctx, state);
  return null;
}
