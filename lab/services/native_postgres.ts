/**
 * A Postgres server cachelab starts itself: initdb into the state directory (as the postgres user when root,
 * since Postgres refuses root), pg_stat_statements preloaded, on a free port; and its stop.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { freePort } from "../shared/ports.ts";
import { shellQuote } from "../shared/shell.ts";
import { createDatabaseIfMissing, probe, waitUntilAnswers } from "./probe.ts";
import {
  type Context,
  DATABASE_NAME,
  isAlive,
  logTail,
  type NativeRecord,
  PREFERRED_POSTGRES_PORT,
  readPid,
  recordService,
  run,
  type ServiceInfo,
} from "./state.ts";

/** Whether every folder from / down to `dir` lets other users through (the postgres user must reach it). */
export function traversableByOthers(dir: string): boolean {
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
export function postgresRoot(ctx: Context): string {
  const inState = join(ctx.stateDir, "postgres");
  if (process.getuid?.() !== 0 || traversableByOthers(ctx.stateDir)) return inState;
  const tag = new Bun.CryptoHasher("sha1").update(ctx.stateDir).digest("hex").slice(0, 10);
  return join(tmpdir(), `cachelab-postgres-${tag}`);
}

export async function startNativePostgres(ctx: Context): Promise<ServiceInfo | null> {
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

  // A server still running on this data directory whose record was lost (a clone deleted without
  // `services down`, then cloned again to the same path): `pg_ctl start` would refuse its postmaster.pid.
  // The directory is this checkout's, so that server is too: stop it, then start as usual.
  const pgCtl = join(binDir, "pg_ctl");
  if ((await run(asPostgres([pgCtl, "-D", dataDir, "status"]), { cwd: root })).exitCode === 0) {
    const stop = await run(asPostgres([pgCtl, "-D", dataDir, "-m", "fast", "-w", "stop"]), { cwd: root });
    if (stop.exitCode !== 0) {
      throw new Error(
        `Cannot stop the Postgres left running on ${dataDir}: pg_ctl exited ${stop.exitCode}: ${stop.stderr.trim()}`,
      );
    }
    ctx.log(`postgres: stopped a server left running on ${dataDir} without a record`);
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

export async function stopNativePostgres(record: NativeRecord, ctx: Context): Promise<string> {
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

/** Postgres refuses to run as root; as root, commands run as the `postgres` user on a folder it owns. */
export async function postgresUserRunner(
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
export function findPostgresBinDir(env: Record<string, string | undefined>, dataDir: string): string | null {
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

export function pgCtlMajor(binDir: string): string | null {
  const result = Bun.spawnSync([join(binDir, "pg_ctl"), "--version"], { stdout: "pipe", stderr: "pipe" });
  return /\(PostgreSQL\)\s+(\d+)/.exec(result.stdout.toString())?.[1] ?? null;
}

/**
 * Postgres refuses a socket whose lock file names a live pid, and where nothing reaps orphans a killed
 * postmaster stays a zombie that kill(pid, 0) still reports as alive.
 */
export function removeStaleSocketLocks(socketDir: string): void {
  for (const entry of readdirSync(socketDir)) {
    if (!/^\.s\.PGSQL\.\d+\.lock$/.test(entry)) continue;
    const pid = readPid(join(socketDir, entry));
    if (pid !== null && isAlive(pid, "postgres")) continue;
    rmSync(join(socketDir, entry), { force: true });
    rmSync(join(socketDir, entry.slice(0, -".lock".length)), { force: true });
  }
}
