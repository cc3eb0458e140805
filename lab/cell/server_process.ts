/**
 * Starts server.ts as its own process group, waits for /ready by polling (never a fixed sleep), and stops
 * the whole group. Used by the tests and the experiment runner.
 */
import { join } from "node:path";
import type { StrategyName } from "../../server_config.ts";
import type { ServerSettings } from "../plan/experiment.ts";
import type { Services } from "../services/services.ts";
import { freePort, portAnswers } from "../shared/ports.ts";
import { stopGroup } from "../shared/process.ts";
import { REPO_ROOT } from "../shared/repo.ts";

const SERVER_ENTRY = join(REPO_ROOT, "server.ts");

export interface ServerProcess {
  url: string;
  port: number;
  pid: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM to the process group, SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

export interface StartServerOptions {
  /** Server environment (CACHE_STRATEGY, DATABASE_URL, …); PORT is set from `port`. */
  env: Record<string, string>;
  port?: number;
  readyTimeoutMs?: number;
  /** Script to run instead of server.ts (same environment contract). */
  entry?: string;
}

export async function startServer(options: StartServerOptions): Promise<ServerProcess> {
  const port = options.port ?? (await freePort());
  if (await portAnswers(port)) {
    throw new Error(
      `Cannot start the server: port ${port} is already taken (an orphan server from another run?)`,
    );
  }
  const chunks: string[] = [];
  const proc = Bun.spawn(["bun", options.entry ?? SERVER_ENTRY], {
    env: { ...process.env, ...options.env, PORT: String(port) },
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  drain(proc.stdout, chunks);
  drain(proc.stderr, chunks);
  const url = `http://127.0.0.1:${port}`;
  const server: ServerProcess = {
    url,
    port,
    pid: proc.pid,
    output: () => chunks.join(""),
    stop: (graceMs = 5_000) => stopGroup(proc, graceMs),
  };
  const deadline = performance.now() + (options.readyTimeoutMs ?? 15_000);
  let last = "no answer";
  while (performance.now() < deadline) {
    if (proc.exitCode !== null) {
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

async function drain(stream: ReadableStream<Uint8Array>, chunks: string[]): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) chunks.push(decoder.decode(chunk, { stream: true }));
}

/** The server for one cell: `strategy` with the run's services and settings, on the run's port. */
export function startCellServer(
  strategy: StrategyName,
  options: {
    port: number;
    entry?: string;
    services: Pick<Services, "databaseUrl" | "redisUrl">;
    settings: ServerSettings;
    redisPrefix: string;
  },
): Promise<ServerProcess> {
  const { settings } = options;
  return startServer({
    port: options.port,
    entry: options.entry,
    env: {
      CACHE_STRATEGY: strategy,
      DATABASE_URL: options.services.databaseUrl,
      REDIS_URL: options.services.redisUrl,
      REDIS_KEY_PREFIX: options.redisPrefix,
      PG_POOL_MAX: String(settings.pgPoolMax),
      CACHE_TTL_MS: String(settings.cacheTtlMs),
      L1_TTL_MS: String(settings.l1TtlMs),
      L1_MAX_ENTRIES: String(settings.l1MaxEntries),
      NODE_ENV: "production",
    },
  }).catch((error: Error) => {
    throw new Error(`server did not start: ${error.message.split("\n")[0]}`);
  });
}
