/**
 * Starts server.ts as its own process group, waits for /ready by polling (never a fixed sleep), and stops
 * the whole group. Used by the tests and the experiment runner. With `cpuLimit` the server runs under a CPU
 * limit (lab/isolation/cgroup.ts) from right after spawn, so readiness, verification and every measured second
 * happen under it; stop() removes the limit's group once the process group is gone.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Subprocess } from "bun";
import type { StrategyName } from "../../server_config.ts";
import { type CpuLimit, type CpuThrottling, cpuLimit } from "../isolation/cgroup.ts";
import type { ServerSettings } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { freePort, portAnswers } from "../shared/ports.ts";
import { signalGroup, stopGroup } from "../shared/process.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { ADMIN_TOKEN_ENV } from "./admin.ts";

const SERVER_ENTRY = join(REPO_ROOT, "server.ts");

export interface ServerProcess {
  url: string;
  port: number;
  pid: number;
  /** The token its /admin/* and /stats/window require (CACHELAB_ADMIN_TOKEN), or null when it has none. */
  adminToken: string | null;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /**
   * SIGTERM to the process group, SIGKILL after `graceMs`, then the CPU limit's group removed; resolves with
   * the exit code.
   */
  stop(graceMs?: number): Promise<number | null>;
  /** The CPU limit the server runs under (`0.5 CPU (cgroup v1 cfs quota 50000/100000)`), or null. */
  cpuLimit: string | null;
  /** The limit's cpu.stat throttling counters so far; null without a limit or under taskset. */
  cpuThrottling(): CpuThrottling | null;
}

export interface StartServerOptions {
  /** Server environment (CACHE_STRATEGY, DATABASE_URL, …); PORT is set from `port`. */
  env: Record<string, string>;
  port?: number;
  readyTimeoutMs?: number;
  /** Script to run instead of server.ts (same environment contract). */
  entry?: string;
  /** Cores the server may use (≥ 0.01): a cgroup CFS quota where one is usable, else taskset to whole cores. */
  cpuLimit?: number;
  /**
   * The address it listens on (HOST), default 127.0.0.1: a bridge address when load generators run in
   * other hosts (lab/isolation/netns.ts).
   */
  hostname?: string;
  /** "taskset" forces the fallback even where a cgroup is usable. */
  cpuLimitMethod?: "auto" | "taskset";
  /**
   * A command prefix that execs the server somewhere else on this machine: a host's `ip netns exec <ns>`
   * (lab/isolation/netns.ts). It must exec (keep the pid), so the group, the CPU limit and /proc stay the server's.
   */
  prefix?: string[];
}

/** Servers not stopped yet: killed on process.exit (a second Ctrl-C skips every finally). */
const running = new Set<Subprocess>();
let exitHookInstalled = false;

export async function startServer(options: StartServerOptions): Promise<ServerProcess> {
  const port = options.port ?? (await freePort());
  const hostname = options.hostname ?? "127.0.0.1";
  if (await portAnswers(port, hostname)) {
    throw new Error(
      `Cannot start the server: port ${port} is already taken (an orphan server from another run?)`,
    );
  }
  const chunks: string[] = [];
  // A token of its own, unless the caller chose one ("" for none): only this process can reset or window it.
  const chosen = options.env[ADMIN_TOKEN_ENV];
  const adminToken = chosen === undefined ? randomBytes(24).toString("base64url") : chosen || null;
  // Created before the spawn, so a limit that cannot be had leaves no process behind.
  const limit: CpuLimit | null =
    options.cpuLimit === undefined
      ? null
      : cpuLimit(options.cpuLimit, `server-${port}`, { method: options.cpuLimitMethod });
  let proc: ReturnType<typeof spawnServer> | undefined;
  try {
    proc = spawnServer(
      [...(limit?.commandPrefix ?? []), ...(options.prefix ?? []), "bun", options.entry ?? SERVER_ENTRY],
      {
        ...process.env,
        ...options.env,
        PORT: String(port),
        HOST: hostname,
        [ADMIN_TOKEN_ENV]: adminToken ?? "",
        // The server leaves when this process is gone (a SIGKILL skips every cleanup here).
        CACHELAB_PARENT_PID: String(process.pid),
      },
    );
    // Synchronously, before this process awaits anything: the child already runs, and every instruction
    // it executes outside the group is unconstrained. cgroup.procs moves all of its threads.
    limit?.add(proc.pid);
  } catch (error) {
    if (proc !== undefined) await stopGroup(proc, 0);
    await limit?.remove();
    throw error;
  }
  running.add(proc);
  if (!exitHookInstalled) {
    process.on("exit", () => {
      for (const child of running)
        if (child.exitCode === null && child.signalCode === null) signalGroup(child.pid, "SIGKILL");
    });
    exitHookInstalled = true;
  }
  drain(proc.stdout, chunks);
  drain(proc.stderr, chunks);
  const url = `http://${hostname}:${port}`;
  const server: ServerProcess = {
    url,
    port,
    pid: proc.pid,
    adminToken,
    output: () => chunks.join(""),
    stop: async (graceMs = 5_000) => {
      const code = await stopGroup(proc, graceMs);
      running.delete(proc);
      // After the group is gone: the cgroup can only be removed empty (anything left is moved out first).
      await limit?.remove();
      return code;
    },
    cpuLimit: limit?.describe() ?? null,
    cpuThrottling: () => limit?.throttling() ?? null,
  };
  const deadline = performance.now() + (options.readyTimeoutMs ?? 15_000);
  let last = "no answer";
  while (performance.now() < deadline) {
    if (proc.exitCode !== null) {
      await server.stop();
      throw new Error(`Cannot start the server: it exited with ${proc.exitCode}:\n${server.output()}`);
    }
    try {
      const response = await fetch(`${url}/ready`, { signal: AbortSignal.timeout(1_000) });
      last = `${response.status} ${await response.text()}`;
      if (response.ok) return server;
    } catch (error) {
      last = (error as Error).message;
    }
    await Bun.sleep(20);
  }
  await server.stop();
  throw new Error(
    `Cannot start the server: not ready after ${options.readyTimeoutMs ?? 15_000} ms (${last}):\n${server.output()}`,
  );
}

function spawnServer(argv: string[], env: Record<string, string | undefined>) {
  return Bun.spawn(argv, { env, stdout: "pipe", stderr: "pipe", detached: true });
}

async function drain(stream: ReadableStream<Uint8Array>, chunks: string[]): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) chunks.push(decoder.decode(chunk, { stream: true }));
}

/** The server for one cell: `strategy` with the run's services and the cell's settings (CPU limit included), on the run's port. */
export function startCellServer(
  strategy: StrategyName,
  options: {
    port: number;
    hostname?: string;
    /** Runs it in a host of its own (`host.command([])`). */
    prefix?: string[];
    entry?: string;
    metrics?: boolean;
    services: Pick<Services, "databaseUrl" | "redisUrl" | "redisCluster">;
    settings: ServerSettings;
    redisPrefix: string;
  },
): Promise<ServerProcess> {
  const { settings } = options;
  return startServer({
    port: options.port,
    ...(options.hostname ? { hostname: options.hostname } : {}),
    ...(options.prefix ? { prefix: options.prefix } : {}),
    entry: options.entry,
    cpuLimit: settings.cpuLimit ?? undefined,
    env: {
      CACHE_STRATEGY: strategy,
      DATABASE_URL: options.services.databaseUrl,
      REDIS_URL: options.services.redisUrl,
      ...(options.services.redisCluster
        ? {
            REDIS_CLUSTER_NODES: options.services.redisCluster.nodes.join(","),
            REDIS_CLUSTER_PASSWORD: options.services.redisCluster.password,
          }
        : {}),
      REDIS_KEY_PREFIX: options.redisPrefix,
      PG_DRIVER: settings.pgDriver,
      REDIS_CLIENT: settings.redisClient,
      PG_POOL_MAX: String(settings.pgPoolMax),
      PG_QUEUE_MAX: String(settings.pgQueueMax),
      PG_ACQUIRE_TIMEOUT_MS: String(settings.pgAcquireTimeoutMs),
      MAX_EVENT_LOOP_DELAY_MS: String(settings.maxEventLoopDelayMs),
      EARLY_REFRESH_BETA: String(settings.earlyRefreshBeta),
      CACHE_TTL_MS: String(settings.cacheTtlMs),
      L1_TTL_MS: String(settings.l1TtlMs),
      L1_MAX_ENTRIES: String(settings.l1MaxEntries),
      NODE_ENV: "production",
      METRICS: options.metrics ? "1" : "0",
    },
  }).catch((error: Error) => {
    throw new Error(`server did not start: ${error.message.split("\n")[0]}`);
  });
}
