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
 * What cachelab started is recorded in <stateDir>/services.json; `servicesDown` stops only those,
 * never a server it merely found.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Redis } from "ioredis";
import postgres from "postgres";
import { freePort, portAnswers } from "../shared/ports.ts";
import { REPO_ROOT } from "../shared/repo.ts";

export type ServiceMode = "external" | "native" | "docker";
export type ServiceName = "postgres" | "redis";

/** How one server is reached and whether cachelab owns it. */
export interface ServiceInfo {
  mode: ServiceMode;
  url: string;
  version: string | null;
  startedByCachelab: boolean;
}

export interface Services {
  postgres: ServiceInfo;
  redis: ServiceInfo;
  databaseUrl: string;
  redisUrl: string;
}

/** Per service, the server `servicesUp` would use right now, or null when none answers. */
export interface ServicesStatus {
  postgres: ServiceInfo | null;
  redis: ServiceInfo | null;
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
}

export const DEFAULT_DATABASE_URL = "postgres://postgres:postgres@127.0.0.1:5432/cachelab";
export const DEFAULT_REDIS_URL = "redis://127.0.0.1:6379";

const COMPOSE_FILE = join(REPO_ROOT, "docker-compose.yml");
const DATABASE_NAME = "cachelab";
const PREFERRED_POSTGRES_PORT = 55432;
const PREFERRED_REDIS_PORT = 56379;
const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 10_000;
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
        "  docker: start a Docker engine, then `docker compose up -d`",
        "  or point DATABASE_URL / REDIS_URL at servers you already run",
      ].join("\n"),
    );
    this.services = services;
  }
}

interface NativeRecord {
  mode: "native";
  url: string;
  port: number;
  pidFile: string;
  dataDir: string;
  /** Postgres only: the binaries that initialized and started dataDir. */
  binDir?: string;
}

interface DockerRecord {
  mode: "docker";
  url: string;
  port: number;
  composeFile: string;
}

type ServiceRecord = NativeRecord | DockerRecord;
type StateFile = Partial<Record<ServiceName, ServiceRecord>>;

interface Context {
  stateDir: string;
  statePath: string;
  env: Record<string, string | undefined>;
  log: (line: string) => void;
  defaults: { databaseUrl: string; redisUrl: string };
}

type ProbeResult = { ok: true; version: string | null } | { ok: false; reason: string };

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
  return { postgres: postgresInfo, redis: redisInfo, databaseUrl: postgresInfo.url, redisUrl: redisInfo.url };
}

/** Stops only what cachelab started (per services.json); returns one line per action. */
export async function servicesDown(options: ServicesOptions = {}): Promise<string[]> {
  const ctx = contextFrom(options);
  const state = readState(ctx);
  const lines: string[] = [];
  const failures: string[] = [];

  for (const name of SERVICE_NAMES) {
    const record = state[name];
    if (record?.mode !== "native") continue;
    try {
      lines.push(name === "postgres" ? await stopNativePostgres(record, ctx) : await stopNativeRedis(record));
      delete state[name];
    } catch (error) {
      failures.push(`${name}: ${errorMessage(error)}`);
    }
  }

  const dockerNames = SERVICE_NAMES.filter((name) => state[name]?.mode === "docker");
  if (dockerNames.length > 0) {
    // `down` would also remove a compose service someone else started; name ours when only one is.
    const argv =
      dockerNames.length === SERVICE_NAMES.length
        ? ["docker", "compose", "-f", COMPOSE_FILE, "down"]
        : ["docker", "compose", "-f", COMPOSE_FILE, "rm", "--stop", "--force", ...dockerNames];
    const result = await run(argv, { cwd: REPO_ROOT, timeoutMs: 120_000 });
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
  const [postgresInfo, redisInfo] = await Promise.all([
    findRunning("postgres", ctx, "status"),
    findRunning("redis", ctx, "status"),
  ]);
  return { postgres: postgresInfo, redis: redisInfo };
}

function contextFrom(options: ServicesOptions): Context {
  const stateDir = resolve(options.stateDir ?? join(REPO_ROOT, ".cachelab"));
  return {
    stateDir,
    statePath: join(stateDir, "services.json"),
    env: options.env ?? process.env,
    log: options.log ?? ((line) => console.error(line)),
    defaults: options.defaults ?? { databaseUrl: DEFAULT_DATABASE_URL, redisUrl: DEFAULT_REDIS_URL },
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
    if (result.ok) return foundInfo(state[name], envUrl, result.version);
    const message = `Cannot connect to ${name} from ${envName}: ${result.reason}: received ${redactUrl(envUrl)}`;
    if (purpose === "up") throw new Error(message);
    ctx.log(message);
    return null;
  }

  const defaultUrl = name === "postgres" ? ctx.defaults.databaseUrl : ctx.defaults.redisUrl;
  const atDefault = await probe(name, defaultUrl);
  if (atDefault.ok) return foundInfo(state[name], defaultUrl, atDefault.version);
  if (await tcpAnswers(defaultUrl)) {
    ctx.log(
      `${name}: a server listens on ${hostPort(defaultUrl)} but ${redactUrl(defaultUrl)} fails (${atDefault.reason}); not using it`,
    );
  }

  const record = state[name];
  if (record?.mode !== "native") return null;
  const pid = readPid(record.pidFile);
  const stillRunning = () => pid !== null && isAlive(pid, programName(name));
  let result: ProbeResult = { ok: false, reason: "not running" };
  if (stillRunning()) {
    result =
      purpose === "up"
        ? await waitUntilAnswers(name, record.url, stillRunning)
        : await probe(name, record.url);
  }
  if (!result.ok && !stillRunning()) {
    if (purpose === "status") return null;
    ctx.log(`${name}: recorded native server on port ${record.port} is gone; starting a new one`);
    // A pidfile naming a dead (or reused) pid would make the next server refuse to start.
    if (pid !== null) rmSync(record.pidFile, { force: true });
    delete state[name];
    writeState(ctx, state);
    return null;
  }
  if (!result.ok) {
    const message = `Cannot use the native ${name} cachelab started (pid ${pid}): ${result.reason}: received ${record.url}`;
    const logFile = name === "postgres" ? join(dirname(record.dataDir), "log") : join(record.dataDir, "log");
    if (purpose === "up") throw new Error(`${message}${logTail(logFile)}`);
    ctx.log(message);
    return null;
  }
  if (purpose === "up") ctx.log(`${name}: reusing native server (pid ${pid}) at ${record.url}`);
  return { mode: "native", url: record.url, version: result.version, startedByCachelab: true };
}

/**
 * A server reached by env or default URL is "external" unless it is the one cachelab recorded
 * (e.g. DATABASE_URL exported from `services up`, or the docker compose ports), so rows stay truthful.
 */
function foundInfo(record: ServiceRecord | undefined, url: string, version: string | null): ServiceInfo {
  if (record?.url === url) return { mode: record.mode, url, version, startedByCachelab: true };
  return { mode: "external", url, version, startedByCachelab: false };
}

/** Whether every folder from / down to `dir` lets other users through (the postgres user must reach it). */
function traversableByOthers(dir: string): boolean {
  for (let current = resolve(dir); ; current = dirname(current)) {
    try {
      if ((statSync(current).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (dirname(current) === current) return true;
  }
}

/**
 * Where the native Postgres lives: <stateDir>/postgres, unless we run as root and the postgres user could not
 * reach it (a clone under a private folder, e.g. mkdtemp's 0700): then a folder of its own under the system
 * temp dir, named after the state dir so each checkout keeps its own server.
 */
function postgresRoot(ctx: Context): string {
  const inState = join(ctx.stateDir, "postgres");
  if (process.getuid?.() !== 0 || traversableByOthers(ctx.stateDir)) return inState;
  const tag = new Bun.CryptoHasher("sha1").update(ctx.stateDir).digest("hex").slice(0, 10);
  return join(tmpdir(), `cachelab-postgres-${tag}`);
}

async function startNativePostgres(ctx: Context): Promise<ServiceInfo | null> {
  const root = postgresRoot(ctx);
  const dataDir = join(root, "data");
  const logFile = join(root, "log");
  const binDir = findPostgresBinDir(ctx.env, dataDir);
  if (!binDir) return null;

  mkdirSync(root, { recursive: true });
  const asPostgres = await postgresUserRunner(ctx.env, root);

  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    // initdb refuses a non-empty directory; a leftover without PG_VERSION is a failed earlier attempt.
    rmSync(dataDir, { recursive: true, force: true });
    const startedMs = performance.now();
    // --no-sync: the lab's data is disposable, and fsyncing ~1 000 fresh files costs seconds on slow disks.
    const argv = [join(binDir, "initdb"), "-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8"];
    const result = await run(asPostgres([...argv, "--locale=C", "--no-sync"]), { cwd: root });
    if (result.exitCode !== 0) {
      throw new Error(
        `Cannot initialize Postgres data: initdb exited ${result.exitCode}: ${result.stderr.trim()}`,
      );
    }
    ctx.log(`postgres: initdb ${dataDir} took ${Math.round(performance.now() - startedMs)} ms`);
  }

  removeStaleSocketLocks(root);
  const port = await freePort(PREFERRED_POSTGRES_PORT);
  // pg_ctl pastes -o into a shell command line, so the socket directory is shell-quoted here.
  const serverOptions = [
    `-p ${port}`,
    `-k ${shellQuote(root)}`,
    "-c listen_addresses=127.0.0.1",
    "-c shared_preload_libraries=pg_stat_statements",
    "-c max_connections=200",
  ].join(" ");
  const startedMs = performance.now();
  const start = await run(
    asPostgres([join(binDir, "pg_ctl"), "-D", dataDir, "-l", logFile, "-w", "start", "-o", serverOptions]),
    { cwd: root },
  );
  if (start.exitCode !== 0) {
    throw new Error(
      `Cannot start Postgres: pg_ctl exited ${start.exitCode}: ${start.stderr.trim() || start.stdout.trim()}${logTail(logFile)}`,
    );
  }
  const url = `postgres://postgres@127.0.0.1:${port}/${DATABASE_NAME}`;
  recordService(ctx, "postgres", {
    mode: "native",
    url,
    port,
    pidFile: join(dataDir, "postmaster.pid"),
    dataDir,
    binDir,
  });

  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const ready = await waitUntilAnswers("postgres", adminUrl);
  if (!ready.ok) throw new Error(`Cannot reach the native Postgres: ${ready.reason}${logTail(logFile)}`);
  await createDatabaseIfMissing(adminUrl, DATABASE_NAME);
  const result = await probe("postgres", url);
  if (!result.ok) throw new Error(`Cannot connect to the native Postgres: ${result.reason}: received ${url}`);
  ctx.log(
    `postgres: started native server on port ${port} in ${Math.round(performance.now() - startedMs)} ms`,
  );
  return { mode: "native", url, version: result.version, startedByCachelab: true };
}

async function startNativeRedis(ctx: Context): Promise<ServiceInfo | null> {
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

async function stopNativePostgres(record: NativeRecord, ctx: Context): Promise<string> {
  const pid = readPid(record.pidFile);
  if (pid === null || !isAlive(pid, "postgres"))
    return `postgres: native server on port ${record.port} was not running`;
  const binDir =
    record.binDir && existsSync(join(record.binDir, "pg_ctl"))
      ? record.binDir
      : findPostgresBinDir(ctx.env, record.dataDir);
  if (!binDir) throw new Error(`Cannot stop Postgres: no pg_ctl found: received pid ${pid}`);
  const asPostgres = await postgresUserRunner(ctx.env, dirname(record.dataDir));
  const argv = asPostgres([join(binDir, "pg_ctl"), "-D", record.dataDir, "-m", "fast", "-w", "stop"]);
  const result = await run(argv, { cwd: dirname(record.dataDir) });
  if (result.exitCode !== 0)
    throw new Error(`pg_ctl stop exited ${result.exitCode}: ${result.stderr.trim()}`);
  return `postgres: stopped native server (pid ${pid}, port ${record.port})`;
}

async function stopNativeRedis(record: NativeRecord): Promise<string> {
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

async function startDocker(names: ServiceName[], ctx: Context): Promise<Map<ServiceName, ServiceInfo>> {
  ctx.log(`${names.join(", ")}: starting with docker compose`);
  const argv = ["docker", "compose", "-f", COMPOSE_FILE, "up", "-d", "--wait", ...names];
  const result = await run(argv, { cwd: REPO_ROOT, timeoutMs: 300_000 });
  if (result.exitCode !== 0) {
    throw new Error(
      `Cannot start ${names.join(", ")} with Docker: ${argv.join(" ")} exited ${result.exitCode}: ${result.stderr.trim()}`,
    );
  }
  const infos = new Map<ServiceName, ServiceInfo>();
  for (const name of names) {
    const url = name === "postgres" ? DEFAULT_DATABASE_URL : DEFAULT_REDIS_URL;
    const port = name === "postgres" ? 5432 : 6379;
    recordService(ctx, name, { mode: "docker", url, port, composeFile: COMPOSE_FILE });
    const ready = await waitUntilAnswers(name, url);
    if (!ready.ok)
      throw new Error(
        `Cannot reach ${name} started by docker compose: ${ready.reason}: received ${redactUrl(url)}`,
      );
    infos.set(name, { mode: "docker", url, version: ready.version, startedByCachelab: true });
  }
  return infos;
}

/** True when a Docker engine answers and the compose plugin exists (the client alone is not enough). */
async function dockerAnswers(ctx: Context): Promise<boolean> {
  if (!Bun.which("docker", { PATH: ctx.env.PATH ?? "" })) return false;
  const info = await run(["docker", "info"], { timeoutMs: 15_000 });
  if (info.exitCode !== 0) return false;
  const compose = await run(["docker", "compose", "version"], { timeoutMs: 15_000 });
  if (compose.exitCode !== 0)
    ctx.log("docker: the engine answers but `docker compose` is missing; not using Docker");
  return compose.exitCode === 0;
}

/** Creates the extension in whichever Postgres is used; counters stay empty unless it is preloaded. */
async function ensurePgStatStatements(url: string, log: (line: string) => void): Promise<void> {
  const sql = postgres(url, probeOptions());
  try {
    await sql`create extension if not exists pg_stat_statements`;
    const rows = await sql<
      { libraries: string }[]
    >`select current_setting('shared_preload_libraries') as libraries`;
    const libraries = (rows[0]?.libraries ?? "").split(",").map((library) => library.trim());
    if (!libraries.includes("pg_stat_statements")) {
      log("postgres: pg_stat_statements is not in shared_preload_libraries; its view will not answer");
    }
  } catch (error) {
    log(`postgres: cannot create extension pg_stat_statements: ${errorMessage(error)}`);
  } finally {
    await sql.end({ timeout: 0 });
  }
}

async function createDatabaseIfMissing(adminUrl: string, database: string): Promise<void> {
  const sql = postgres(adminUrl, probeOptions());
  try {
    const rows = await sql`select 1 from pg_database where datname = ${database}`;
    if (rows.length > 0) return;
    await sql.unsafe(`create database "${database}"`);
  } catch (error) {
    // 42P04 duplicate_database: a concurrent servicesUp created it first.
    if ((error as { code?: string }).code !== "42P04") throw error;
  } finally {
    await sql.end({ timeout: 0 });
  }
}

function probeOptions() {
  return { max: 1, connect_timeout: 2, idle_timeout: 1, onnotice: () => {} };
}

/** One protocol round trip (`show server_version` / `INFO server`); never throws. */
async function probe(name: ServiceName, url: string): Promise<ProbeResult> {
  return name === "postgres" ? await probePostgres(url) : await probeRedis(url);
}

async function probePostgres(url: string): Promise<ProbeResult> {
  let sql: postgres.Sql | undefined;
  try {
    sql = postgres(url, probeOptions());
    const rows = await sql<{ server_version: string }[]>`show server_version`;
    return { ok: true, version: rows[0]?.server_version ?? null };
  } catch (error) {
    return { ok: false, reason: errorMessage(error) };
  } finally {
    await sql?.end({ timeout: 0 });
  }
}

async function probeRedis(url: string): Promise<ProbeResult> {
  let client: Redis | undefined;
  try {
    client = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 1000,
      retryStrategy: () => null,
    });
    // The failure surfaces through the rejected connect(); without a listener ioredis prints it too.
    client.on("error", () => {});
    await client.connect();
    const info = await client.info("server");
    const version = /^redis_version:(.+)$/m.exec(info)?.[1]?.trim() ?? null;
    return { ok: true, version };
  } catch (error) {
    return { ok: false, reason: errorMessage(error) };
  } finally {
    // disconnect() on an already-ended client arms ioredis's 2 s disconnectTimeout on a stream that will
    // never emit "close" again, which keeps the process alive for 2 s.
    if (client && client.status !== "end") client.disconnect();
  }
}

/** Probes with a short backoff until the server answers, its process is gone, or the deadline passes. */
async function waitUntilAnswers(
  name: ServiceName,
  url: string,
  stillRunning: () => boolean = () => true,
): Promise<ProbeResult> {
  const deadlineMs = performance.now() + READY_TIMEOUT_MS;
  let delayMs = 25;
  for (;;) {
    const result = await probe(name, url);
    if (result.ok || !stillRunning() || performance.now() >= deadlineMs) return result;
    await Bun.sleep(delayMs);
    delayMs = Math.min(delayMs * 2, 500);
  }
}

/** True when something accepts a TCP connection at the URL's host and port. */
function tcpAnswers(url: string): Promise<boolean> {
  const { hostname, port } = hostAndPort(url);
  return portAnswers(port, hostname);
}

/** Postgres refuses to run as root; as root, commands run as the `postgres` user on a folder it owns. */
async function postgresUserRunner(
  env: Record<string, string | undefined>,
  ownedDir: string,
): Promise<(argv: string[]) => string[]> {
  if (process.getuid?.() !== 0) return (argv) => argv;
  const id = await run(["id", "-u", "postgres"]);
  if (id.exitCode !== 0) {
    throw new Error(
      "Cannot start Postgres as root: no `postgres` user to run it as: received uid 0 (create one with `useradd --system postgres` or run as a regular user)",
    );
  }
  const chown = await run(["chown", "-R", "postgres:", ownedDir]);
  if (chown.exitCode !== 0) throw new Error(`Cannot chown ${ownedDir} to postgres: ${chown.stderr.trim()}`);

  const searchPath = [env.PATH ?? "", "/usr/sbin", "/sbin", "/usr/bin", "/bin"].join(":");
  const runuser = Bun.which("runuser", { PATH: searchPath });
  const su = Bun.which("su", { PATH: searchPath });
  let asPostgres: (argv: string[]) => string[];
  if (runuser) asPostgres = (argv) => [runuser, "-u", "postgres", "--", ...argv];
  else if (su) asPostgres = (argv) => [su, "postgres", "-s", "/bin/sh", "-c", argv.map(shellQuote).join(" ")];
  else
    throw new Error("Cannot run commands as the postgres user: neither runuser nor su found: received uid 0");

  const writable = await run(asPostgres(["test", "-w", ownedDir]), { cwd: "/" });
  if (writable.exitCode !== 0) {
    throw new Error(
      `Cannot start Postgres as the postgres user: it cannot reach ${ownedDir} (make every parent folder world-executable): received ${ownedDir}`,
    );
  }
  return asPostgres;
}

/** A folder with initdb and pg_ctl: PATH first, then /usr/lib/postgresql/<major>/bin newest first. */
function findPostgresBinDir(env: Record<string, string | undefined>, dataDir: string): string | null {
  const candidates: string[] = [];
  const onPath = Bun.which("pg_ctl", { PATH: env.PATH ?? "" });
  if (onPath) candidates.push(dirname(onPath));
  const versionsRoot = "/usr/lib/postgresql";
  if (existsSync(versionsRoot)) {
    const majors = readdirSync(versionsRoot)
      .filter((entry) => /^\d+(\.\d+)?$/.test(entry))
      .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
    for (const major of majors) candidates.push(join(versionsRoot, major, "bin"));
  }
  const usable = candidates.filter(
    (dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")),
  );
  if (usable.length === 0) return null;

  // An existing data folder only starts with the major version that created it.
  const versionFile = join(dataDir, "PG_VERSION");
  if (!existsSync(versionFile)) return usable[0] ?? null;
  const dataMajor = readFileSync(versionFile, "utf8").trim();
  const matching = usable.find((dir) => pgCtlMajor(dir) === dataMajor);
  if (!matching) {
    throw new Error(
      `Cannot start Postgres: ${dataDir} was created by Postgres ${dataMajor}, binaries found are ${usable.map(pgCtlMajor).join(", ")} (delete the folder to re-initialize): received ${usable.join(", ")}`,
    );
  }
  return matching;
}

function pgCtlMajor(binDir: string): string | null {
  const result = Bun.spawnSync([join(binDir, "pg_ctl"), "--version"], { stdout: "pipe", stderr: "pipe" });
  return /\(PostgreSQL\)\s+(\d+)/.exec(result.stdout.toString())?.[1] ?? null;
}

interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

async function run(argv: string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  try {
    const child = Bun.spawn(argv, {
      cwd: options.cwd,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      timeout: options.timeoutMs,
    });
    const [stdout, stderr, exitCode] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    return { exitCode, stdout, stderr };
  } catch (error) {
    // Bun.spawn throws when the executable cannot be run at all (ENOENT, EACCES).
    return { exitCode: 127, stdout: "", stderr: errorMessage(error) };
  }
}

function readState(ctx: Context): StateFile {
  if (!existsSync(ctx.statePath)) return {};
  try {
    return JSON.parse(readFileSync(ctx.statePath, "utf8")) as StateFile;
  } catch (error) {
    throw new Error(
      `Cannot read ${ctx.statePath}: ${errorMessage(error)} (delete it if no server is running)`,
    );
  }
}

function writeState(ctx: Context, state: StateFile): void {
  if (Object.keys(state).length === 0) {
    rmSync(ctx.statePath, { force: true });
    return;
  }
  mkdirSync(ctx.stateDir, { recursive: true });
  const temporaryPath = `${ctx.statePath}.${process.pid}.tmp`;
  writeFileSync(temporaryPath, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(temporaryPath, ctx.statePath);
}

/** Read-modify-write without an await in between, so concurrent starts in one process do not race. */
function recordService(ctx: Context, name: ServiceName, record: ServiceRecord): void {
  const state = readState(ctx);
  state[name] = record;
  writeState(ctx, state);
}

/**
 * Postgres refuses a socket whose lock file names a live pid, and where nothing reaps orphans a killed
 * postmaster stays a zombie that kill(pid, 0) still reports as alive.
 */
function removeStaleSocketLocks(socketDir: string): void {
  for (const entry of readdirSync(socketDir)) {
    if (!/^\.s\.PGSQL\.\d+\.lock$/.test(entry)) continue;
    const pid = readPid(join(socketDir, entry));
    if (pid !== null && isAlive(pid, "postgres")) continue;
    rmSync(join(socketDir, entry), { force: true });
    rmSync(join(socketDir, entry.slice(0, -".lock".length)), { force: true });
  }
}

function readPid(pidFile: string): number | null {
  if (!existsSync(pidFile)) return null;
  const firstLine = readFileSync(pidFile, "utf8").split("\n")[0]?.trim() ?? "";
  const pid = Number.parseInt(firstLine, 10);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** Alive, not a zombie, and (where /proc exists) still the program we started, not a reused pid. */
function isAlive(pid: number, program: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as { code?: string }).code !== "EPERM") return false;
  }
  if (!existsSync("/proc/self/stat")) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return false;
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(program);
  } catch {
    return false;
  }
}

async function waitForExit(pid: number, program: string, timeoutMs: number): Promise<boolean> {
  const deadlineMs = performance.now() + timeoutMs;
  let delayMs = 10;
  while (isAlive(pid, program)) {
    if (performance.now() >= deadlineMs) return false;
    await Bun.sleep(delayMs);
    delayMs = Math.min(delayMs * 2, 200);
  }
  return true;
}

function programName(name: ServiceName): string {
  return name === "postgres" ? "postgres" : "redis-server";
}

function logTail(logFile: string, lineCount = 20): string {
  if (!existsSync(logFile)) return "";
  const lines = readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-lineCount);
  return `\n--- last lines of ${logFile} ---\n${lines.join("\n")}`;
}

function hostAndPort(url: string): { hostname: string; port: number } {
  const parsed = new URL(url);
  const defaultPort = parsed.protocol.startsWith("redis") ? 6379 : 5432;
  return { hostname: parsed.hostname || "127.0.0.1", port: parsed.port ? Number(parsed.port) : defaultPort };
}

function hostPort(url: string): string {
  const { hostname, port } = hostAndPort(url);
  return `${hostname}:${port}`;
}

/** The URL with its password masked, for messages that may end up in logs. */
function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return url;
  }
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error);
}
