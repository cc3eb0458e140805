/**
 * Finds or starts the Postgres and Redis servers cachelab runs against.
 *
 * Per service, independently, the first that works wins:
 *   1. DATABASE_URL / REDIS_URL from the environment (mode "external"; must answer, or we throw).
 *   2. A server answering the default URL on 127.0.0.1:5432 / 127.0.0.1:6379 (mode "external").
 *   3. Native servers cachelab starts itself under <stateDir> (mode "native"), reused while alive.
 *   4. `docker compose up -d --wait` when a Docker engine answers (mode "docker").
 *   5. Otherwise a ServicesUnavailableError that names the ways to get the servers.
 *
 * Toxiproxy (the fault and distance engine) is looked for the same way, TOXIPROXY_URL first, and started
 * natively when installed (lab/services/native_toxiproxy.ts); without it `toxiproxy` is null and only the
 * experiments that route a service through it refuse to run. The lab's Redis Cluster and its valkey-server
 * are started only when asked for (`redisClusterUp`, `valkeyUp`).
 *
 * What cachelab started is recorded in <stateDir>/services.json; `servicesDown` stops only those,
 * never a server it merely found.
 */
import { dirname, join, resolve } from "node:path";
import { DEFAULT_CONFIG } from "../../server_config.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { COMPOSE_FILE, composeEnv, dockerAnswers, startDocker } from "./docker.ts";
import { realDataDir, startNativePostgres, stopNativePostgres } from "./native_postgres.ts";
import { startNativeRedis, stopNativeRedis } from "./native_redis.ts";
import {
  findRedisCluster,
  type RedisClusterInfo,
  startNativeRedisCluster,
  stopNativeRedisCluster,
} from "./native_redis_cluster.ts";
import { findToxiproxy, startNativeToxiproxy, stopNativeToxiproxy } from "./native_toxiproxy.ts";
import { findValkey, startNativeValkey, stopNativeValkey, VALKEY_MISSING } from "./native_valkey.ts";
import {
  ensurePgStatStatements,
  hostPort,
  type ProbeResult,
  probe,
  redactUrl,
  tcpAnswers,
  waitUntilAnswers,
} from "./probe.ts";
import {
  type Context,
  errorMessage,
  logTail,
  ourProcess,
  programName,
  readState,
  run,
  type ServiceInfo,
  type ServiceName,
  type ServiceRecord,
  writeState,
} from "./state.ts";

export interface Services {
  postgres: ServiceInfo;
  redis: ServiceInfo;
  databaseUrl: string;
  redisUrl: string;
  /** Toxiproxy's API (`url`), or null when it is not installed. */
  toxiproxy: ServiceInfo | null;
  /** The lab's Redis Cluster when a run asked for it (`--redis-cluster`): its servers use it instead of Redis. */
  redisCluster?: RedisClusterInfo;
}

/** Per service, the server `servicesUp` would use right now, or null when none answers. */
export interface ServicesStatus {
  postgres: ServiceInfo | null;
  redis: ServiceInfo | null;
  toxiproxy: ServiceInfo | null;
  /** The lab's local Redis Cluster, when one is recorded, whole and ok. */
  redisCluster: RedisClusterInfo | null;
  /** The valkey-server `--redis-server valkey` uses (VALKEY_URL's, or the lab's while it answers). */
  valkey: ServiceInfo | null;
}

export interface ServicesOptions {
  /** Where native servers keep data, logs and pidfiles; default `<repo root>/.cachelab`. */
  stateDir?: string;
  /** Read for DATABASE_URL, REDIS_URL and PATH; default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Progress and notes, one line each; default stderr. */
  log?: (line: string) => void;
  /** URLs probed in step 2; tests point them at closed ports so a server on 5432/6379 is not picked. */
  defaults?: { databaseUrl: string; redisUrl: string };
  /** servicesDown: stop only these (what one run started), not every service cachelab recorded. */
  only?: (ServiceName | "toxiproxy" | "redis_cluster" | "valkey")[];
}

const SERVICE_NAMES: ServiceName[] = ["postgres", "redis"];

/** Thrown when a service can be neither found nor started; the message says how to get one. */
export class ServicesUnavailableError extends Error {
  override name = "ServicesUnavailableError";
  readonly services: ServiceName[];

  constructor(services: ServiceName[]) {
    const names = services.join(" and ");
    const missing = services
      .map((name) =>
        name === "postgres"
          ? "initdb/pg_ctl (searched PATH and /usr/lib/postgresql/*/bin)"
          : "redis-server (searched PATH)",
      )
      .join(", ");
    super(
      [
        `Cannot start ${names}: no server answers, no native binaries, no Docker engine: received missing ${missing}`,
        "Get the servers one of these ways:",
        "  native: apt-get install postgresql redis-server (Debian/Ubuntu) or brew install postgresql redis (macOS), then `bun run services up`",
        "  docker: start a Docker engine, then `bun run services up` (it runs `docker compose up -d` with generated passwords)",
        "  or point DATABASE_URL / REDIS_URL at servers you already run",
      ].join("\n"),
    );
    this.services = services;
  }
}

/** Finds or starts Postgres and Redis (see the file header for the order) and returns their URLs. */
export async function servicesUp(options: ServicesOptions = {}): Promise<Services> {
  const ctx = contextFrom(options);
  // Look first (steps 1–2 and recorded servers), so a bad DATABASE_URL fails before anything starts.
  const [foundPostgres, foundRedis] = await Promise.all([
    findRunning("postgres", ctx, "up"),
    findRunning("redis", ctx, "up"),
  ]);
  // Native starts run concurrently; each records itself as soon as its process exists, so when one
  // fails the other is still known to servicesDown.
  const [postgresSettled, redisSettled] = await Promise.allSettled([
    foundPostgres ?? startNativePostgres(ctx),
    foundRedis ?? startNativeRedis(ctx),
  ]);
  if (postgresSettled.status === "rejected") throw postgresSettled.reason;
  if (redisSettled.status === "rejected") throw redisSettled.reason;
  let postgresInfo = postgresSettled.value;
  let redisInfo = redisSettled.value;

  const missing = SERVICE_NAMES.filter((name) => (name === "postgres" ? !postgresInfo : !redisInfo));
  if (missing.length > 0) {
    if (!(await dockerAnswers(ctx))) throw new ServicesUnavailableError(missing);
    const started = await startDocker(missing, ctx);
    postgresInfo ??= started.get("postgres") ?? null;
    redisInfo ??= started.get("redis") ?? null;
  }
  if (!postgresInfo || !redisInfo) throw new ServicesUnavailableError(missing);

  await ensurePgStatStatements(postgresInfo.url, ctx.log);
  const toxiproxy = (await findToxiproxy(ctx, "up")) ?? (await startNativeToxiproxy(ctx));
  return {
    postgres: postgresInfo,
    redis: redisInfo,
    databaseUrl: postgresInfo.url,
    redisUrl: redisInfo.url,
    toxiproxy,
  };
}

/**
 * The lab's local Redis Cluster of three masters (lab/services/native_redis_cluster.ts): the recorded one
 * while it is whole and ok, else a new one; `servicesDown` stops it with the rest.
 */
export async function redisClusterUp(options: ServicesOptions = {}): Promise<RedisClusterInfo> {
  const ctx = contextFrom(options);
  const cluster = (await findRedisCluster(ctx, "up")) ?? (await startNativeRedisCluster(ctx));
  if (cluster === null) {
    throw new Error(
      "Cannot start a Redis cluster: redis-server and redis-cli are needed: received none on PATH (apt-get install redis-server redis-tools)",
    );
  }
  return cluster;
}

/**
 * The valkey-server beside the lab's Redis (lab/services/native_valkey.ts): VALKEY_URL's, the recorded one while
 * it answers, else a new one; `servicesDown` stops it with the rest.
 */
export async function valkeyUp(options: ServicesOptions = {}): Promise<ServiceInfo> {
  const ctx = contextFrom(options);
  const valkey = (await findValkey(ctx, "up")) ?? (await startNativeValkey(ctx));
  if (valkey === null) throw new Error(`Cannot start Valkey: ${VALKEY_MISSING}`);
  return valkey;
}

/** Stops only what cachelab started (per services.json); returns one line per action. */
export async function servicesDown(options: ServicesOptions = {}): Promise<string[]> {
  const ctx = contextFrom(options);
  const state = readState(ctx);
  const lines: string[] = [];
  const failures: string[] = [];

  const chosen = (name: NonNullable<ServicesOptions["only"]>[number]) =>
    options.only === undefined || options.only.includes(name);
  for (const name of SERVICE_NAMES) {
    const record = state[name];
    if (record?.mode !== "native" || !chosen(name)) continue;
    try {
      lines.push(name === "postgres" ? await stopNativePostgres(record, ctx) : await stopNativeRedis(record));
      delete state[name];
    } catch (error) {
      failures.push(`${name}: ${errorMessage(error)}`);
    }
  }

  if (state.valkey?.mode === "native" && chosen("valkey")) {
    try {
      lines.push(await stopNativeValkey(state.valkey));
      delete state.valkey;
    } catch (error) {
      failures.push(`valkey: ${errorMessage(error)}`);
    }
  }

  if (state.redisCluster !== undefined && chosen("redis_cluster")) {
    try {
      lines.push(...(await stopNativeRedisCluster(ctx)));
      delete state.redisCluster;
    } catch (error) {
      failures.push(`redis cluster: ${errorMessage(error)}`);
    }
  }

  if (state.toxiproxy?.mode === "native" && chosen("toxiproxy")) {
    try {
      lines.push(await stopNativeToxiproxy(state.toxiproxy));
      delete state.toxiproxy;
    } catch (error) {
      failures.push(`toxiproxy: ${errorMessage(error)}`);
    }
  }

  const dockerNames = SERVICE_NAMES.filter((name) => state[name]?.mode === "docker" && chosen(name));
  if (dockerNames.length > 0) {
    // `down` would also remove a compose service someone else started; name ours when only one is.
    const argv =
      dockerNames.length === SERVICE_NAMES.length
        ? ["docker", "compose", "-f", COMPOSE_FILE, "down"]
        : ["docker", "compose", "-f", COMPOSE_FILE, "rm", "--stop", "--force", ...dockerNames];
    const result = await run(argv, { cwd: REPO_ROOT, timeoutMs: 120_000, env: composeEnv(ctx) });
    if (result.exitCode === 0) {
      lines.push(`${dockerNames.join(", ")}: ran ${argv.slice(3).join(" ")}`);
      for (const name of dockerNames) delete state[name];
    } else {
      failures.push(
        `${dockerNames.join(", ")}: ${argv.join(" ")} exited ${result.exitCode}: ${result.stderr.trim()}`,
      );
    }
  }

  writeState(ctx, state);
  if (failures.length > 0) throw new Error(`Cannot stop services: ${failures.join("; ")}`);
  return lines.length > 0 ? lines : ["nothing to stop"];
}

/** Reports the server `servicesUp` would use for each service, without starting anything. */
export async function servicesStatus(options: ServicesOptions = {}): Promise<ServicesStatus> {
  const ctx = contextFrom(options);
  const [postgresInfo, redisInfo, toxiproxy, redisCluster, valkey] = await Promise.all([
    findRunning("postgres", ctx, "status"),
    findRunning("redis", ctx, "status"),
    findToxiproxy(ctx, "status"),
    findRedisCluster(ctx, "status"),
    findValkey(ctx, "status"),
  ]);
  return { postgres: postgresInfo, redis: redisInfo, toxiproxy, redisCluster, valkey };
}

function contextFrom(options: ServicesOptions): Context {
  const stateDir = resolve(options.stateDir ?? join(REPO_ROOT, ".cachelab"));
  return {
    stateDir,
    statePath: join(stateDir, "services.json"),
    env: options.env ?? process.env,
    log: options.log ?? ((line) => console.error(line)),
    defaults: options.defaults ?? {
      databaseUrl: DEFAULT_CONFIG.databaseUrl,
      redisUrl: DEFAULT_CONFIG.redisUrl,
    },
  };
}

/**
 * Steps 1–3 without starting anything: env URL, default URL, then a recorded native server.
 * For "up" an unreachable env URL throws, a recorded server gets time to come up, and stale records
 * are cleaned; "status" only looks.
 */
async function findRunning(
  name: ServiceName,
  ctx: Context,
  purpose: "up" | "status",
): Promise<ServiceInfo | null> {
  const state = readState(ctx);
  const envName = name === "postgres" ? "DATABASE_URL" : "REDIS_URL";
  const envUrl = ctx.env[envName];
  if (envUrl) {
    const result = await probe(name, envUrl);
    if (result.ok) return foundInfo(state[name], envUrl, result);
    const message = `Cannot connect to ${name} from ${envName}: ${result.reason}: received ${redactUrl(envUrl)}`;
    if (purpose === "up") throw new Error(message);
    ctx.log(message);
    return null;
  }

  const defaultUrl = name === "postgres" ? ctx.defaults.databaseUrl : ctx.defaults.redisUrl;
  const atDefault = await probe(name, defaultUrl);
  if (atDefault.ok) return foundInfo(state[name], defaultUrl, atDefault);
  if (await tcpAnswers(defaultUrl)) {
    ctx.log(
      `${name}: a server listens on ${hostPort(defaultUrl)} but ${redactUrl(defaultUrl)} fails (${atDefault.reason}); not using it`,
    );
  }

  const record = state[name];
  if (record?.mode === "docker") {
    // Its URL carries the password docker.ts passed to compose, so the default URL alone does not answer.
    const result = await probe(name, record.url);
    return result.ok ? foundInfo(record, record.url, result) : null;
  }
  if (record?.mode !== "native") return null;
  const cwd = name === "postgres" ? realDataDir(record.dataDir) : undefined;
  const ours = () => ourProcess(record, programName(name), cwd);
  const stillRunning = () => "pid" in ours();
  const initial = ours();
  const pid = "pid" in initial ? initial.pid : null;
  if (purpose === "up" && pid !== null && (!record.process || !new URL(record.url).password)) {
    // An older cachelab started it without a password (and Redis as root): replace it; Postgres's data
    // folder is migrated from trust by the start that follows.
    ctx.log(
      `${name}: the recorded native server (pid ${pid}) runs without a password; restarting it with one`,
    );
    ctx.log(name === "postgres" ? await stopNativePostgres(record, ctx) : await stopNativeRedis(record));
    delete state[name];
    writeState(ctx, state);
    return null;
  }
  let result: ProbeResult = { ok: false, reason: "not running" };
  if (pid !== null) {
    result =
      purpose === "up"
        ? await waitUntilAnswers(name, record.url, stillRunning)
        : await probe(name, record.url);
  }
  if (!result.ok && !stillRunning()) {
    if (purpose === "status") return null;
    const why = "problem" in initial ? initial.problem : "it exited";
    ctx.log(`${name}: recorded native server on port ${record.port} is gone (${why}); starting a new one`);
    // Postgres's postmaster.pid stays even when its pid is reused: it guards the data folder against a second
    // postmaster, and the start checks it with /proc (leftoverPostmaster). Redis's is rewritten by its start.
    delete state[name];
    writeState(ctx, state);
    return null;
  }
  if (!result.ok) {
    const message = `Cannot use the native ${name} cachelab started (pid ${pid}): ${result.reason}: received ${redactUrl(record.url)}`;
    const logFile = name === "postgres" ? join(dirname(record.dataDir), "log") : join(record.dataDir, "log");
    if (purpose === "up") throw new Error(`${message}${logTail(logFile)}`);
    ctx.log(message);
    return null;
  }
  if (purpose === "up") ctx.log(`${name}: reusing native server (pid ${pid}) at ${redactUrl(record.url)}`);
  return { mode: "native", url: record.url, ...found(result), startedByCachelab: true };
}

/**
 * A server reached by env or default URL is "external" unless it is the one cachelab recorded
 * (e.g. DATABASE_URL exported from `services up`, or the docker compose ports), so rows stay truthful.
 */
function foundInfo(
  record: ServiceRecord | undefined,
  url: string,
  result: { version: string | null; server?: string },
): ServiceInfo {
  if (record?.url === url) return { mode: record.mode, url, ...found(result), startedByCachelab: true };
  return { mode: "external", url, ...found(result), startedByCachelab: false };
}

/** A probe's version, and for Redis what the server says it is. */
function found(result: { version: string | null; server?: string }): Pick<ServiceInfo, "version" | "server"> {
  return result.server === undefined
    ? { version: result.version }
    : { version: result.version, server: result.server };
}
