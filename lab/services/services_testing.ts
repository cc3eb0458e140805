/** What the services tests share: throwaway state folders, the command line, and probes of each server. */
import { chmodSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import postgres from "postgres";
import { REPO_ROOT } from "../shared/repo.ts";

// Port 1 (tcpmux) has no listener, so step 2 never picks a server that happens to run on 5432/6379.
export const CLOSED_DEFAULTS = {
  databaseUrl: "postgres://postgres@127.0.0.1:1/cachelab",
  redisUrl: "redis://127.0.0.1:1",
};

export function temporaryStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cachelab-services-"));
  // As root the native Postgres runs as the postgres user, which must reach the folder.
  chmodSync(dir, 0o755);
  return dir;
}

export function readPidFile(path: string): number {
  return Number.parseInt(readFileSync(path, "utf8").split("\n")[0] ?? "", 10);
}

/** The real uid a process runs as (/proc/<pid>/status). */
export function processUid(pid: number): number | null {
  const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return uid === undefined ? null : Number(uid);
}

export function uidOf(user: string): number | null {
  const result = Bun.spawnSync(["id", "-u", user], { stdout: "pipe", stderr: "ignore" });
  return result.exitCode === 0 ? Number(result.stdout.toString().trim()) : null;
}

export async function runCli(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const child = Bun.spawn(["bun", join(REPO_ROOT, "lab", "cli", "services.ts"), ...args], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { exitCode, stdout, stderr };
}

/** The first reply line to `commands` (RESP inline commands) on a raw connection: no client's own handshake. */
export async function redisReply(port: number, commands: string[]): Promise<string> {
  const { promise, resolve, reject } = Promise.withResolvers<string>();
  let received = "";
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_socket, chunk) {
        received += chunk.toString();
        const lines = received.split("\r\n");
        if (lines.length > commands.length) resolve(lines[commands.length - 1] ?? "");
      },
      error(_socket, error) {
        reject(error);
      },
    },
  });
  socket.write(commands.map((command) => `${command}\r\n`).join(""));
  try {
    return await promise;
  } finally {
    socket.end();
  }
}

/** The error a connection attempt ends with, or "connected". */
export async function postgresError(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return "connected";
  } catch (error) {
    return (error as Error).message;
  } finally {
    await sql.end({ timeout: 0 });
  }
}

export async function postgresAnswers(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    const rows = await sql`select 1 as one`;
    return rows[0]?.one === 1;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 0 });
  }
}

export async function toxiproxyAnswers(url: string): Promise<boolean> {
  return fetch(`${url}/version`, { signal: AbortSignal.timeout(1_000) }).then(
    (response) => response.ok,
    () => false,
  );
}

export async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    if (client.status !== "end") client.disconnect();
  }
}
