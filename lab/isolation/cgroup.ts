/**
 * A CPU limit for one process, the way a small cloud instance limits it: a cgroup cpu group under this
 * process's own cpu cgroup (v1 CFS quota, or v2 `cpu.max`), or, where no cpu controller is usable, taskset
 * pinning to whole cores. Groups are named `cachelab-<name>-<owner pid>` and each gets a record
 * (owner_record.ts: the maker's pid and start time) before it is made, so the next create can tell a killed
 * run's leftover (its recorded maker gone, no tasks) from a live run's group or someone else's `cachelab-*`
 * group (no record), and removes only the first.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { forgetOwned, leftByDeadRun, recordedNames, recordOwned } from "../shared/owner_record.ts";
import { type CpuCgroupSupport, detectCpuCgroup, parseCpuList, readIfExists } from "./cgroup_detect.ts";

export type CpuLimitMethod = "cgroup-v1" | "cgroup-v2" | "taskset";

/** The CFS period every group gets: 100 ms, the kernel's default. */
export const CPU_PERIOD_US = 100_000;
/** Quota and period must each be at least 1 ms (kernel sched-bwc), so 1 % of a core per 100 ms period. */
export const MIN_CORES = 0.01;
export const GROUP_PREFIX = "cachelab-";

const RMDIR_RETRIES = 50;
const RMDIR_RETRY_MS = 20;

/** Throttling counters from the group's cpu.stat since it was created. */
export interface CpuThrottling {
  nrPeriods: number;
  nrThrottled: number;
  throttledMs: number;
}

export interface CpuLimit {
  readonly cores: number;
  readonly method: CpuLimitMethod;
  /** The group's directory, or null for taskset. */
  readonly dir: string | null;
  /** The group as /proc/<pid>/cgroup names it (`/cachelab-server-4123-812`), or null for taskset. */
  readonly cgroupPath: string | null;
  /** The CPUs taskset pins to (`0` or `0,1`), or null for a cgroup. */
  readonly cpus: string | null;
  /** Why no cgroup is used (taskset only): what detection found, or that taskset was asked for. */
  readonly fallbackReason: string | null;
  /** What to start the process with so it is limited from its first instruction: taskset's, [] for a cgroup. */
  readonly commandPrefix: string[];
  /** `1.0 CPU (cgroup v1 cfs quota 100000/100000)`, `1 CPU (taskset, whole cores only)`. */
  describe(): string;
  /** Puts a running process under the limit, every thread of it; the children it starts later inherit it. */
  add(pid: number): void;
  /** The processes in the group now ([] for taskset). */
  pids(): number[];
  /** cpu.stat's throttling counters, or null for taskset. */
  throttling(): CpuThrottling | null;
  /** Moves any process still inside back to the parent group, then removes the group. Idempotent. */
  remove(): Promise<void>;
}

export interface CpuLimitOptions {
  /** "taskset" forces the fallback (tests, or a machine whose cgroups should not be touched). */
  method?: "auto" | "taskset";
}

/** A CPU limit of `cores` (≥ 0.01) named `name`; see the module header for how it is applied. */
export function cpuLimit(cores: number, name: string, options: CpuLimitOptions = {}): CpuLimit {
  if (!Number.isFinite(cores) || cores < MIN_CORES) {
    throw new RangeError(
      `Cannot limit the CPU: cores must be at least ${MIN_CORES} (a 1 ms quota per 100 ms period): received ${cores}`,
    );
  }
  if (!/^[A-Za-z0-9_.-]{1,80}$/.test(name)) {
    throw new TypeError(`Cannot limit the CPU: name must be 1–80 of [A-Za-z0-9_.-]: received ${name}`);
  }
  const support: CpuCgroupSupport =
    options.method === "taskset" ? { method: "taskset", reason: "taskset was asked for" } : detectCpuCgroup();
  if (support.method === "taskset") return tasksetLimit(cores, support.reason);
  cleanStaleCpuGroups(support.dir);
  try {
    return cgroupLimit(cores, name, support);
  } catch (error) {
    // Not root, or a read-only cgroupfs (a container): the controller is there but not ours to use.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") throw error;
    return tasksetLimit(cores, `${support.method}: cannot create a group in ${support.dir}: ${code}`);
  }
}

/**
 * Removes leftover `cachelab-*` groups under `parentDir` that a record proves a lab process made, that hold no
 * process and whose maker is gone (a killed run); a group whose maker still runs, that still holds a process,
 * or that has no record (someone else's) is kept. Returns what was removed.
 */
export function cleanStaleCpuGroups(parentDir: string): string[] {
  const removed: string[] = [];
  let entries: string[];
  try {
    entries = readdirSync(parentDir).filter((entry) => entry.startsWith(GROUP_PREFIX));
  } catch {
    return removed;
  }
  for (const entry of entries) {
    const dir = join(parentDir, entry);
    try {
      if (!statSync(dir).isDirectory() || !leftByDeadRun("cgroup", dir)) continue;
      if (readPids(dir).length > 0) continue; // an orphan still runs there: not ours to move or kill
      rmdirSync(dir);
      forgetOwned("cgroup", dir);
      removed.push(dir);
    } catch {
      // gone meanwhile, or busy: the next create tries again
    }
  }
  // A dead run's record of a group already gone (removed by hand) is dropped too.
  for (const dir of recordedNames("cgroup")) {
    if (dirname(dir) === resolve(parentDir) && !existsSync(dir) && leftByDeadRun("cgroup", dir)) {
      forgetOwned("cgroup", dir);
    }
  }
  return removed;
}

function cgroupLimit(
  cores: number,
  name: string,
  support: { method: "cgroup-v1" | "cgroup-v2"; dir: string; cgroupPath: string },
): CpuLimit {
  const groupName = `${GROUP_PREFIX}${name}-${process.pid}`;
  const dir = join(support.dir, groupName);
  const quotaUs = Math.round(cores * CPU_PERIOD_US);
  const v1 = support.method === "cgroup-v1";
  try {
    // The record first: a kill between the two leaves a record of nothing, never an unrecorded group.
    recordOwned("cgroup", dir);
    mkdirSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EEXIST") forgetOwned("cgroup", dir);
    throw Object.assign(new Error(`Cannot create the cpu cgroup ${dir}: ${(error as Error).message}`), {
      code,
    });
  }
  const group: LiveGroup = { dir, parentDir: support.dir };
  live.add(group);
  if (!exitHookInstalled) {
    // process.exit (a second Ctrl-C) skips every finally: the group still goes.
    process.on("exit", removeLiveGroupsSync);
    exitHookInstalled = true;
  }
  try {
    if (v1) {
      writeControl(dir, "cpu.cfs_period_us", String(CPU_PERIOD_US));
      writeControl(dir, "cpu.cfs_quota_us", String(quotaUs));
    } else {
      writeControl(dir, "cpu.max", `${quotaUs} ${CPU_PERIOD_US}`);
    }
  } catch (error) {
    removeGroupSync(group);
    throw error;
  }
  const describe = v1
    ? `${formatCores(cores)} CPU (cgroup v1 cfs quota ${quotaUs}/${CPU_PERIOD_US})`
    : `${formatCores(cores)} CPU (cgroup v2 cpu.max ${quotaUs} ${CPU_PERIOD_US})`;
  let removing: Promise<void> | undefined;
  return {
    cores,
    method: support.method,
    dir,
    cgroupPath: `${support.cgroupPath.replace(/\/$/, "")}/${groupName}`,
    cpus: null,
    fallbackReason: null,
    commandPrefix: [],
    describe: () => describe,
    add(pid) {
      // cgroup.procs moves the whole thread group (`tasks` would move one thread).
      try {
        writeFileSync(join(dir, "cgroup.procs"), String(pid));
      } catch (error) {
        throw new Error(`Cannot put process ${pid} in the cpu cgroup ${dir}: ${(error as Error).message}`);
      }
    },
    pids: () => (existsSync(dir) ? readPids(dir) : []),
    throttling() {
      const stat = readIfExists(join(dir, "cpu.stat"));
      if (stat === null) return null;
      const field = (key: string) => Number(new RegExp(`^${key} (\\d+)$`, "m").exec(stat)?.[1] ?? Number.NaN);
      return {
        nrPeriods: field("nr_periods"),
        nrThrottled: field("nr_throttled"),
        throttledMs: v1 ? field("throttled_time") / 1e6 : field("throttled_usec") / 1e3,
      };
    },
    remove() {
      removing ??= removeGroup(group);
      return removing;
    },
  };
}

function tasksetLimit(cores: number, reason: string): CpuLimit {
  const taskset = Bun.which("taskset");
  if (taskset === null) {
    throw new Error(
      `Cannot limit the CPU: no cgroup is usable (${reason}) and taskset (util-linux) is not installed`,
    );
  }
  const allowed = parseCpuList(
    /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? "",
  );
  const count = Math.ceil(cores);
  if (count > allowed.length) {
    throw new RangeError(
      `Cannot limit the CPU with taskset: ${count} CPUs asked, this process may use ${allowed.length}: received ${cores}`,
    );
  }
  const chosen = allowed.slice(0, count);
  const cpus = chosen.join(",");
  const asked = count === cores ? "" : `, asked ${formatCores(cores)}`;
  const describe = `${count} CPU (taskset, whole cores only${asked}; CPU ${cpus})`;
  return {
    cores,
    method: "taskset",
    dir: null,
    cgroupPath: null,
    cpus,
    fallbackReason: reason,
    commandPrefix: [taskset, "-c", cpus],
    describe: () => describe,
    add(pid) {
      // -a: every thread the process has now; threads it starts later inherit their creator's affinity.
      const result = Bun.spawnSync([taskset, "-a", "-p", "-c", cpus, String(pid)], {
        stdout: "pipe",
        stderr: "pipe",
      });
      if (result.exitCode !== 0) {
        throw new Error(
          `Cannot pin process ${pid} to CPU ${cpus}: taskset: ${result.stderr.toString().trim()}`,
        );
      }
    },
    pids: () => [],
    throttling: () => null,
    remove: async () => {},
  };
}

/** Groups this process created and has not removed: the exit hook removes them if nothing else did. */
interface LiveGroup {
  dir: string;
  parentDir: string;
}
const live = new Set<LiveGroup>();
let exitHookInstalled = false;

async function removeGroup(group: LiveGroup): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const outcome = tryRemove(group);
    if (outcome === "removed") return;
    // EBUSY: a process that just exited can be counted a moment longer; move again and retry.
    if (attempt >= RMDIR_RETRIES) {
      throw new Error(
        `Cannot remove the cpu cgroup ${group.dir}: still busy after ${RMDIR_RETRIES * RMDIR_RETRY_MS} ms: pids ${readPids(group.dir).join(" ") || "none"}`,
      );
    }
    await Bun.sleep(RMDIR_RETRY_MS);
  }
}

function removeGroupSync(group: LiveGroup): void {
  for (let attempt = 0; attempt <= RMDIR_RETRIES; attempt++) {
    if (tryRemove(group) === "removed") return;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, RMDIR_RETRY_MS);
  }
}

function removeLiveGroupsSync(): void {
  for (const group of live) {
    try {
      removeGroupSync(group);
    } catch {
      // the next create cleans it once its processes are gone
    }
  }
}

function tryRemove(group: LiveGroup): "removed" | "busy" {
  if (!existsSync(group.dir)) {
    forgetOwned("cgroup", group.dir);
    live.delete(group);
    return "removed";
  }
  for (const pid of readPids(group.dir)) {
    try {
      writeFileSync(join(group.parentDir, "cgroup.procs"), String(pid));
    } catch {
      // exited meanwhile
    }
  }
  try {
    rmdirSync(group.dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") {
      if (code === "EBUSY") return "busy";
      throw new Error(`Cannot remove the cpu cgroup ${group.dir}: ${(error as Error).message}`);
    }
  }
  forgetOwned("cgroup", group.dir);
  live.delete(group);
  return "removed";
}

/** Writes a control file and reads it back: a value the kernel adjusted or ignored is an error, not a limit. */
function writeControl(dir: string, file: string, value: string): void {
  const path = join(dir, file);
  try {
    writeFileSync(path, value);
  } catch (error) {
    throw new Error(`Cannot write ${value} to ${path}: ${(error as Error).message}`);
  }
  const read = readFileSync(path, "utf8").trim();
  if (read !== value) throw new Error(`Cannot set ${path}: wrote ${value}, it reads ${read}`);
}

function readPids(dir: string): number[] {
  return (readIfExists(join(dir, "cgroup.procs")) ?? "")
    .split("\n")
    .filter((line) => line !== "")
    .map(Number);
}

function formatCores(cores: number): string {
  return Number.isInteger(cores * 10) ? cores.toFixed(1) : String(Math.round(cores * 100) / 100);
}
