/**
 * Which process owns a lab record (a run lock, a Redis limit): its pid plus its start time, so a pid the
 * kernel has since given to another process (after a reboot, or a long while) is not taken for the owner.
 */
import { readFileSync } from "node:fs";

export interface Owner {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks after boot when the process started; null without /proc. */
  startTicks: number | null;
}

/** The start time of `pid` in clock ticks after boot, or null when it is gone or /proc is not there. */
export function startTicks(pid: number): number | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after its closing one.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[19]);
  return Number.isSafeInteger(ticks) ? ticks : null;
}

export function currentOwner(): Owner {
  return { pid: process.pid, startTicks: startTicks(process.pid) };
}

/** Whether the process that wrote `owner` still runs: same pid, same start time, not a zombie. */
export function ownerAlive(owner: Owner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const ticks = startTicks(owner.pid);
  if (ticks === null) return owner.startTicks === null; // no /proc: the pid is all there is to go by
  if (owner.startTicks !== null && ticks !== owner.startTicks) return false;
  try {
    const stat = readFileSync(`/proc/${owner.pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}
