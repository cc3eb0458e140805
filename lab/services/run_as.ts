/**
 * Running the servers the lab starts as an unprivileged user when the lab runs as root: `setpriv` drops uid,
 * gid and every supplementary group, then execs in place, so the pid Bun.spawn returns is the server's own.
 */
import { closeSync, openSync, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Subprocess } from "bun";

export interface ServiceUser {
  name: string;
  uid: number;
  gid: number;
}

/** Whether every folder from / down to `dir` lets other users through (a service user must reach it). */
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

export function runsAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/** The first of `names` that exists as a system user, or null. */
export function findServiceUser(names: string[]): ServiceUser | null {
  for (const name of names) {
    const uid = idNumber("-u", name);
    const gid = idNumber("-g", name);
    if (uid !== null && gid !== null && uid !== 0) return { name, uid, gid };
  }
  return null;
}

function idNumber(flag: "-u" | "-g", name: string): number | null {
  const result = Bun.spawnSync(["id", flag, name], { stdout: "pipe", stderr: "ignore" });
  const value = Number.parseInt(result.stdout.toString().trim(), 10);
  return result.exitCode === 0 && Number.isInteger(value) ? value : null;
}

/** How to spawn `executable` as `user`: the argv, and an fd to pass as the child's fd 3 (close it after). */
export interface UnprivilegedSpawn {
  argv: string[];
  binaryFd: number | null;
}

/**
 * The argv that runs `executable args…` as `user` (as is when the lab is not root). A binary the user cannot
 * reach (e.g. ~/go/bin under root's 0700 home) is opened here and executed as /proc/self/fd/3 (fexecve), so
 * it needs no copy the user could reach and /proc/<pid>/exe still names the installed file.
 */
export function unprivilegedSpawn(
  user: ServiceUser | null,
  executable: string,
  args: string[],
): UnprivilegedSpawn {
  if (!runsAsRoot() || user === null) return { argv: [executable, ...args], binaryFd: null };
  const setpriv = Bun.which("setpriv", { PATH: `${process.env.PATH ?? ""}:/usr/bin:/bin:/usr/sbin:/sbin` });
  if (!setpriv) {
    throw new Error(
      `Cannot drop root for ${executable}: setpriv (util-linux) is not installed: received uid 0 (apt-get install util-linux)`,
    );
  }
  const prefix = [setpriv, `--reuid=${user.uid}`, `--regid=${user.gid}`, "--clear-groups", "--"];
  if (traversableByOthers(dirname(executable)))
    return { argv: [...prefix, executable, ...args], binaryFd: null };
  return { argv: [...prefix, "/proc/self/fd/3", ...args], binaryFd: openSync(executable, "r") };
}

/**
 * Starts `spawn` detached (its own session) and unreferenced, so it outlives `bun run services up`, with
 * stdout and stderr appended to `logFile` (0600) and `stdin` as its standard input; writes its pid to
 * `pidFile`; returns the process (its exit code tells a start that failed).
 */
export function spawnDetached(
  spawn: UnprivilegedSpawn,
  options: { logFile: string; pidFile: string; env: Record<string, string>; stdin?: string },
): Subprocess {
  const log = openSync(options.logFile, "a", 0o600);
  let proc: Subprocess;
  try {
    proc = Bun.spawn(spawn.argv, {
      stdio: [
        options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
        log,
        log,
        ...(spawn.binaryFd === null ? [] : [spawn.binaryFd]),
      ],
      env: options.env,
      cwd: "/",
      detached: true,
    });
    proc.unref();
  } finally {
    closeSync(log);
    if (spawn.binaryFd !== null) closeSync(spawn.binaryFd);
  }
  writeFileSync(options.pidFile, `${proc.pid}\n`, { mode: 0o600 });
  return proc;
}
