/**
 * A Postgres server cachelab starts itself: initdb into the state directory (as the postgres user when root,
 * since Postgres refuses root), pg_stat_statements preloaded, on a free port; and its stop.
 *
 * No trust anywhere: TCP takes scram-sha-256 with a generated password (credentials.ts), the socket peer
 * auth. A data folder an earlier cachelab initialized with trust is migrated in place (password set,
 * pg_hba.conf rewritten, configuration reloaded), keeping its seeded rows.
 */
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import postgres from "postgres";
import { processStartTicks } from "../shared/owner_record.ts";
import { freePort } from "../shared/ports.ts";
import { shellQuote } from "../shared/shell.ts";
import { readCredentials } from "./credentials.ts";
import { createDatabaseIfMissing, probe, probeOptions, waitUntilAnswers } from "./probe.ts";
import { findServiceUser, runsAsRoot, traversableByOthers } from "./run_as.ts";
import {
  type Context,
  DATABASE_NAME,
  ensureOwnedDir,
  errorMessage,
  isAlive,
  logTail,
  type NativeRecord,
  ourProcess,
  PREFERRED_POSTGRES_PORT,
  processStamp,
  readPid,
  readState,
  recordService,
  run,
  type ServiceInfo,
  stateDirMode,
  writeState,
} from "./state.ts";

/** What initdb writes with --auth-local=peer --auth-host=scram-sha-256, for migrating a trust folder. */
const PG_HBA = `# Written by cachelab: no trust; TCP needs the password in <stateDir>/secrets/credentials.json.
local   all             all                                     peer
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
local   replication     all                                     peer
host    replication     all             127.0.0.1/32            scram-sha-256
host    replication     all             ::1/128                 scram-sha-256
`;

/**
 * Where the native Postgres lives: <stateDir>/postgres, unless we run as root and the postgres user could not
 * reach it (a clone under a private folder, e.g. mkdtemp's 0700): then a folder made by mkdtemp under the
 * system temp dir (a name no one could prepare in advance), recorded in services.json as `postgresRoot` so
 * each checkout keeps its own server. A recorded folder that is a symlink or someone else's is refused.
 */
export function postgresRoot(ctx: Context): string {
  ensureOwnedDir(ctx.stateDir, stateDirMode());
  const inState = join(ctx.stateDir, "postgres");
  if (!runsAsRoot() || traversableByOthers(ctx.stateDir)) return inState;
  const state = readState(ctx);
  if (state.postgresRoot && existsSync(state.postgresRoot)) {
    checkPostgresRoot(state.postgresRoot);
    return state.postgresRoot;
  }
  const root = mkdtempSync(join(tmpdir(), "cachelab-postgres-"));
  // Read-modify-write without an await in between, like recordService.
  writeState(ctx, { ...readState(ctx), postgresRoot: root });
  return root;
}

/** A Postgres folder must be a real folder owned by us or by the postgres user we chowned it to. */
export function checkPostgresRoot(root: string): void {
  const stat = lstatSync(root);
  const owners = [process.getuid?.(), findServiceUser(["postgres"])?.uid];
  if (stat.isSymbolicLink() || !stat.isDirectory() || !owners.includes(stat.uid)) {
    const what = stat.isSymbolicLink() ? "a symlink" : `mode ${stat.mode.toString(8)}`;
    throw new Error(
      `Cannot use ${root} for Postgres: not a folder of ours (a symlink, or another owner): received uid ${stat.uid}, ${what}`,
    );
  }
}

export async function startNativePostgres(ctx: Context): Promise<ServiceInfo | null> {
  const root = postgresRoot(ctx);
  const dataDir = join(root, "data");
  const logFile = join(root, "log");
  const binDir = findPostgresBinDir(ctx.env, dataDir);
  if (!binDir) return null;

  const { postgresPassword } = readCredentials(ctx);
  if (existsSync(root)) checkPostgresRoot(root);
  else ensureOwnedDir(root, 0o700);
  const asPostgres = await postgresUserRunner(ctx.env, root);

  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    // initdb refuses a non-empty directory; a leftover without PG_VERSION is a failed earlier attempt.
    rmSync(dataDir, { recursive: true, force: true });
    const startedMs = performance.now();
    const pwFile = join(root, "initdb-password");
    writeFileSync(pwFile, `${postgresPassword}\n`, { mode: 0o600 });
    try {
      if (runsAsRoot()) await run(["chown", "postgres:", pwFile]);
      // --no-sync: the lab's data is disposable, and fsyncing ~1 000 fresh files costs seconds on slow disks.
      const argv = [join(binDir, "initdb"), "-D", dataDir, "-U", "postgres", `--pwfile=${pwFile}`];
      const auth = [
        "--auth-local=peer",
        "--auth-host=scram-sha-256",
        "-E",
        "UTF8",
        "--locale=C",
        "--no-sync",
      ];
      const result = await run(asPostgres([...argv, ...auth]), { cwd: root });
      if (result.exitCode !== 0) {
        throw new Error(
          `Cannot initialize Postgres data: initdb exited ${result.exitCode}: ${result.stderr.trim()}`,
        );
      }
    } finally {
      rmSync(pwFile, { force: true });
    }
    ctx.log(
      `postgres: initdb ${dataDir} (scram-sha-256) took ${Math.round(performance.now() - startedMs)} ms`,
    );
  }

  // A server still running on this data directory whose record was lost (a clone deleted without
  // `services down`, then cloned again to the same path): `pg_ctl start` would refuse its postmaster.pid.
  // The directory is this checkout's, so that server is too, once /proc confirms the pidfile's pid is a
  // postgres working in this folder and listening on the pidfile's port (not a reused pid): stop it.
  const pgCtl = join(binDir, "pg_ctl");
  const leftover = leftoverPostmaster(dataDir);
  if (leftover === "ours") {
    const stop = await run(asPostgres([pgCtl, "-D", dataDir, "-m", "fast", "-w", "stop"]), { cwd: root });
    if (stop.exitCode !== 0) {
      throw new Error(
        `Cannot stop the Postgres left running on ${dataDir}: pg_ctl exited ${stop.exitCode}: ${stop.stderr.trim()}`,
      );
    }
    ctx.log(`postgres: stopped a server left running on ${dataDir} without a record`);
  } else if (leftover !== null) {
    // Postgres refuses to start while its pidfile names any live pid; this one is not a postmaster of ours.
    rmSync(join(dataDir, "postmaster.pid"), { force: true });
    ctx.log(`postgres: removed a stale postmaster.pid (${leftover}; not signalled)`);
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
    asPostgres([pgCtl, "-D", dataDir, "-l", logFile, "-w", "start", "-o", serverOptions]),
    {
      cwd: root,
    },
  );
  if (start.exitCode !== 0) {
    throw new Error(
      `Cannot start Postgres: pg_ctl exited ${start.exitCode}: ${start.stderr.trim() || start.stdout.trim()}${logTail(logFile)}`,
    );
  }
  const url = `postgres://postgres:${postgresPassword}@127.0.0.1:${port}/${DATABASE_NAME}`;
  const pidFile = join(dataDir, "postmaster.pid");
  const pid = readPid(pidFile);
  const stamp = (pid === null ? null : processStamp(pid)) ?? undefined;
  recordService(ctx, "postgres", { mode: "native", url, port, pidFile, dataDir, binDir, process: stamp });

  if (trustLines(dataDir).length > 0) await migrateFromTrust(dataDir, port, postgresPassword, ctx);
  const adminUrl = `postgres://postgres:${postgresPassword}@127.0.0.1:${port}/postgres`;
  const ready = await waitUntilAnswers("postgres", adminUrl);
  if (!ready.ok) {
    throw new Error(
      `Cannot reach the native Postgres: ${ready.reason} (if ${join(ctx.stateDir, "secrets")} was replaced, delete ${root} to re-initialize): received port ${port}${logTail(logFile)}`,
    );
  }
  await createDatabaseIfMissing(adminUrl, DATABASE_NAME);
  const result = await probe("postgres", url);
  if (!result.ok) {
    throw new Error(`Cannot connect to the native Postgres: ${result.reason}: received port ${port}`);
  }
  ctx.log(
    `postgres: started native server on port ${port} (password required) in ${Math.round(performance.now() - startedMs)} ms`,
  );
  return { mode: "native", url, version: result.version, startedByCachelab: true };
}

/** The active pg_hba.conf lines that trust (let in without any password). */
export function trustLines(dataDir: string): string[] {
  const path = join(dataDir, "pg_hba.conf");
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .map((line) => line.replace(/#.*/, "").trim())
    .filter((line) => /\btrust\b/.test(line));
}

/**
 * An earlier cachelab initialized the folder with --auth=trust: set the generated password while trust still
 * lets us in over TCP, then rewrite pg_hba.conf and reload, so from then on no connection is trusted.
 */
async function migrateFromTrust(
  dataDir: string,
  port: number,
  password: string,
  ctx: Context,
): Promise<void> {
  const trustingUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const ready = await waitUntilAnswers("postgres", trustingUrl);
  if (!ready.ok) {
    throw new Error(`Cannot migrate ${dataDir} from trust auth: ${ready.reason}: received port ${port}`);
  }
  const sql = postgres(trustingUrl, probeOptions());
  try {
    // The password is base64url (credentials.ts), so it needs no escaping inside the literal.
    await sql.unsafe(`alter role postgres password '${password}'`);
    // Writing in place keeps the file's owner (the postgres user when root).
    writeFileSync(join(dataDir, "pg_hba.conf"), PG_HBA);
    await sql`select pg_reload_conf()`;
  } catch (error) {
    throw new Error(
      `Cannot migrate ${dataDir} from trust auth: ${errorMessage(error)}: received port ${port}`,
    );
  } finally {
    await sql.end({ timeout: 0 });
  }
  ctx.log(
    `postgres: ${dataDir} was initialized with trust auth by an earlier cachelab; migrated in place: password set, pg_hba.conf now scram-sha-256 (TCP) and peer (socket), configuration reloaded`,
  );
}

/**
 * What postmaster.pid names: null when there is none or its pid is gone; "ours" when /proc confirms a
 * postgres working in `dataDir` and listening on the pidfile's port; otherwise why it is not ours.
 */
function leftoverPostmaster(dataDir: string): string | null {
  const pidFile = join(dataDir, "postmaster.pid");
  const pid = existsSync(pidFile) ? readPid(pidFile) : null;
  if (pid === null || processStartTicks(pid) === null) return null;
  // postmaster.pid: pid, data folder, start time, port, … (one a line).
  const port = Number.parseInt(readFileSync(pidFile, "utf8").split("\n")[3] ?? "", 10);
  const record: NativeRecord = { mode: "native", url: "", port, pidFile, dataDir };
  const ours = ourProcess(record, "postgres", realDataDir(dataDir));
  return "pid" in ours ? "ours" : ours.problem;
}

/** The data folder as /proc/<pid>/cwd names it (symlinks resolved). */
export function realDataDir(dataDir: string): string {
  try {
    return realpathSync(dataDir);
  } catch {
    return dataDir;
  }
}

export async function stopNativePostgres(record: NativeRecord, ctx: Context): Promise<string> {
  const ours = ourProcess(record, "postgres", realDataDir(record.dataDir));
  if ("problem" in ours) {
    return `postgres: native server on port ${record.port} was not running (${ours.problem}; not signalled)`;
  }
  const { pid } = ours;
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
