/**
 * Proof of what the lab made on this machine outside its own folders (network namespaces, links, cgroups):
 * one record file per thing, written before the thing is made and removed after it is gone, holding the
 * making process's pid and start time (/proc/<pid>/stat field 22, clock ticks since boot). A sweeper removes
 * only what a record names and whose maker is gone: the same pid with another start time is another process
 * (a reused pid), and a `cachelab-*` name with no record is someone else's, whatever it parses to.
 * The records live in /run (a tmpfs): they go at reboot, as the namespaces and groups they name do.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const RECORDS_DIR = "/run/cachelab/owned";

/** What a record names: a network namespace, a root-namespace link (bridge, veth) or a cgroup directory. */
export type OwnedKind = "netns" | "link" | "cgroup";

export interface OwnerRecord {
  pid: number;
  /** /proc/<pid>/stat field 22 when the record was written. */
  startTicks: number;
}

/** /proc/<pid>/stat: its command name (field 2) and its fields from 3 (the state) on; null when it is gone. */
export function procStat(pid: number): { comm: string; fields: string[] } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: it ends at the last closing one.
    const end = stat.lastIndexOf(")");
    return { comm: stat.slice(stat.indexOf("(") + 1, end), fields: stat.slice(end + 2).split(" ") };
  } catch {
    return null;
  }
}

/** /proc/<pid>/stat from field 3 (the state) on, or null when the process is gone. */
export function statFields(pid: number): string[] | null {
  return procStat(pid)?.fields ?? null;
}

/** A process's start time in clock ticks since boot (/proc/<pid>/stat field 22), or null when it is gone. */
export function processStartTicks(pid: number): number | null {
  const ticks = Number(statFields(pid)?.[22 - 3]);
  return Number.isInteger(ticks) ? ticks : null;
}

function recordPath(kind: OwnedKind, name: string): string {
  return join(RECORDS_DIR, kind, encodeURIComponent(name));
}

/** Records that this process is making `name`; call it before making the thing. Throws when it cannot. */
export function recordOwned(kind: OwnedKind, name: string): void {
  const startTicks = processStartTicks(process.pid);
  if (startTicks === null)
    throw new Error(`Cannot record ${kind} ${name}: /proc/${process.pid}/stat is unreadable`);
  const path = recordPath(kind, name);
  mkdirSync(join(RECORDS_DIR, kind), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ pid: process.pid, startTicks } satisfies OwnerRecord)}\n`);
  renameSync(temporary, path);
}

/** Removes the record of `name` (the thing is gone); idempotent. */
export function forgetOwned(kind: OwnedKind, name: string): void {
  rmSync(recordPath(kind, name), { force: true });
}

/** The record of `name`, or null when the lab has none (or it is unreadable: not proof of anything). */
export function ownerOf(kind: OwnedKind, name: string): OwnerRecord | null {
  try {
    const record = JSON.parse(readFileSync(recordPath(kind, name), "utf8")) as Partial<OwnerRecord>;
    if (!Number.isInteger(record.pid) || !Number.isInteger(record.startTicks)) return null;
    return record as OwnerRecord;
  } catch {
    return null;
  }
}

/** Whether the process that wrote `record` is still running: its pid, started at the recorded moment, not a zombie. */
export function ownerRunning(record: OwnerRecord): boolean {
  const fields = statFields(record.pid);
  return fields !== null && fields[0] !== "Z" && Number(fields[22 - 3]) === record.startTicks;
}

/** This process as a record's owner (a run lock, a Redis limit: lab/shared/run_lock.ts, lab/cell/constraints.ts). */
export function currentOwner(): OwnerRecord {
  const startTicks = processStartTicks(process.pid);
  if (startTicks === null)
    throw new Error(`Cannot read this process's start time: received /proc/${process.pid}/stat`);
  return { pid: process.pid, startTicks };
}

/** The names that have a record of this kind. */
export function recordedNames(kind: OwnedKind): string[] {
  try {
    return readdirSync(join(RECORDS_DIR, kind))
      .filter((file) => !file.endsWith(".tmp"))
      .map((file) => decodeURIComponent(file));
  } catch {
    return [];
  }
}

/** What a sweeper may remove: a thing the lab recorded whose maker is no longer running. */
export function leftByDeadRun(kind: OwnedKind, name: string): boolean {
  const record = ownerOf(kind, name);
  return record !== null && !ownerRunning(record);
}
