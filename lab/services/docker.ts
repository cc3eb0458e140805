/**
 * `docker compose up -d --wait` with the repo's docker-compose.yml, when a Docker engine answers, passing the
 * state folder's generated passwords (credentials.ts) as CACHELAB_POSTGRES_PASSWORD / CACHELAB_REDIS_PASSWORD.
 */
import { join } from "node:path";
import { REPO_ROOT } from "../shared/repo.ts";
import { readCredentials } from "./credentials.ts";
import { redactUrl, waitUntilAnswers } from "./probe.ts";
import type { ServiceInfo, ServiceName } from "./state.ts";
import { type Context, recordService, run } from "./state.ts";

export const COMPOSE_FILE = join(REPO_ROOT, "docker-compose.yml");
export async function startDocker(
  names: ServiceName[],
  ctx: Context,
): Promise<Map<ServiceName, ServiceInfo>> {
  ctx.log(`${names.join(", ")}: starting with docker compose`);
  const argv = ["docker", "compose", "-f", COMPOSE_FILE, "up", "-d", "--wait", ...names];
  const credentials = readCredentials(ctx);
  const env = composeEnv(ctx);
  const result = await run(argv, { cwd: REPO_ROOT, timeoutMs: 300_000, env });
  if (result.exitCode !== 0) {
    throw new Error(
      `Cannot start ${names.join(", ")} with Docker: ${argv.join(" ")} exited ${result.exitCode}: ${result.stderr.trim()}`,
    );
  }
  const infos = new Map<ServiceName, ServiceInfo>();
  for (const name of names) {
    const url =
      name === "postgres"
        ? `postgres://postgres:${credentials.postgresPassword}@127.0.0.1:5432/cachelab`
        : `redis://:${credentials.redisPassword}@127.0.0.1:6379`;
    const port = name === "postgres" ? 5432 : 6379;
    recordService(ctx, name, { mode: "docker", url, port, composeFile: COMPOSE_FILE });
    const ready = await waitUntilAnswers(name, url);
    if (!ready.ok)
      throw new Error(
        `Cannot reach ${name} started by docker compose: ${ready.reason}: received ${redactUrl(url)}`,
      );
    infos.set(name, {
      mode: "docker",
      url,
      version: ready.version,
      startedByCachelab: true,
      ...(ready.server ? { server: ready.server } : {}),
    });
  }
  return infos;
}

/** The variables docker-compose.yml requires; `docker compose down` needs them too, to read the file. */
export function composeEnv(ctx: Pick<Context, "stateDir">): Record<string, string> {
  const credentials = readCredentials(ctx);
  return {
    CACHELAB_POSTGRES_PASSWORD: credentials.postgresPassword,
    CACHELAB_REDIS_PASSWORD: credentials.redisPassword,
  };
}

/** True when a Docker engine answers and the compose plugin exists (the client alone is not enough). */
export async function dockerAnswers(ctx: Context): Promise<boolean> {
  if (!Bun.which("docker", { PATH: ctx.env.PATH ?? "" })) return false;
  const info = await run(["docker", "info"], { timeoutMs: 15_000 });
  if (info.exitCode !== 0) return false;
  const compose = await run(["docker", "compose", "version"], { timeoutMs: 15_000 });
  if (compose.exitCode !== 0)
    ctx.log("docker: the engine answers but `docker compose` is missing; not using Docker");
  return compose.exitCode === 0;
}
