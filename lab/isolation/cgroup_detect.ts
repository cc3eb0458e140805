/**
 * Where this process may create a cpu group: its own cpu cgroup, found from /proc/self/cgroup and the cgroup
 * mounts in /proc/self/mountinfo (v2 when /sys/fs/cgroup is cgroup2fs, else a v1 hierarchy holding `cpu`), or
 * why none is usable, in which case cgroup.ts falls back to taskset.
 */
import { existsSync, readFileSync, statfsSync } from "node:fs";
import { join } from "node:path";

const CGROUP2_SUPER_MAGIC = 0x63677270;

/** Where a cpu group can be created: this process's own cpu cgroup, or why none is usable. */
export type CpuCgroupSupport =
  | { method: "cgroup-v1" | "cgroup-v2"; dir: string; cgroupPath: string }
  | { method: "taskset"; reason: string };

/** Finds this process's cpu cgroup: v2 when /sys/fs/cgroup is cgroup2fs, else a v1 hierarchy holding `cpu`. */
export function detectCpuCgroup(): CpuCgroupSupport {
  const membership = readFileSync("/proc/self/cgroup", "utf8")
    .trim()
    .split("\n")
    .map((line) => {
      const [id = "", controllers = "", ...path] = line.split(":");
      return { id, controllers: controllers.split(","), path: path.join(":") };
    });
  const mounts = cgroupMounts();
  let unified = false;
  try {
    unified = statfsSync("/sys/fs/cgroup").type === CGROUP2_SUPER_MAGIC;
  } catch {
    // no /sys/fs/cgroup at all: the mount table decides
  }
  if (!unified) {
    // v1 (or hybrid): the hierarchy whose super options name `cpu` (mounted alone or as `cpu,cpuacct`).
    const mount = mounts.find(
      (candidate) => candidate.fsType === "cgroup" && candidate.options.includes("cpu"),
    );
    const own = membership.find((line) => line.controllers.includes("cpu"));
    if (mount && own) {
      const dir = mountDir(mount, own.path);
      if (dir === null || !existsSync(join(dir, "cpu.cfs_quota_us"))) {
        return {
          method: "taskset",
          reason: `cgroup v1: no cpu.cfs_quota_us for ${own.path} under ${mount.point}`,
        };
      }
      return { method: "cgroup-v1", dir, cgroupPath: own.path };
    }
    if (!mounts.some((candidate) => candidate.fsType === "cgroup2" && candidate.point === "/sys/fs/cgroup")) {
      return { method: "taskset", reason: "no cgroup cpu controller is mounted" };
    }
  }
  const mount = mounts.find(
    (candidate) => candidate.fsType === "cgroup2" && candidate.point === "/sys/fs/cgroup",
  );
  const own = membership.find((line) => line.id === "0" && line.controllers.join("") === "");
  const dir = mount && own ? mountDir(mount, own.path) : null;
  if (dir === null || own === undefined) {
    return { method: "taskset", reason: "cgroup v2: this process's cgroup is not under /sys/fs/cgroup" };
  }
  // v2 puts a controller in a child only when the parent enables it, which a group that holds processes
  // (this one holds us) cannot do: enabling it is the host's decision, so it is reported, not forced.
  const enabled = readIfExists(join(dir, "cgroup.subtree_control"))?.trim().split(/\s+/) ?? [];
  if (!enabled.includes("cpu")) {
    return {
      method: "taskset",
      reason: `cgroup v2: cpu is not in ${join(dir, "cgroup.subtree_control")} (the host must delegate it)`,
    };
  }
  return { method: "cgroup-v2", dir, cgroupPath: own.path };
}

interface CgroupMount {
  root: string;
  point: string;
  fsType: string;
  options: string[];
}

/** cgroup and cgroup2 mounts from /proc/self/mountinfo, with their super options (`rw,cpu,cpuacct`). */
function cgroupMounts(): CgroupMount[] {
  const decode = (path: string) =>
    path.replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(Number.parseInt(octal, 8)));
  return readFileSync("/proc/self/mountinfo", "utf8")
    .trim()
    .split("\n")
    .flatMap((line) => {
      const [left = "", right = ""] = line.split(" - ");
      const fields = left.split(" ");
      const [fsType = "", , superOptions = ""] = right.split(" ");
      if (fsType !== "cgroup" && fsType !== "cgroup2") return [];
      return [
        {
          root: decode(fields[3] ?? "/"),
          point: decode(fields[4] ?? ""),
          fsType,
          options: superOptions.split(","),
        },
      ];
    });
}

/** The directory of cgroup `path` in `mount`, whose own root may be a sub-path (a container's view). */
function mountDir(mount: CgroupMount, path: string): string | null {
  const root = mount.root.replace(/\/$/, "");
  if (path !== root && !path.startsWith(`${root}/`)) return null;
  return join(mount.point, path.slice(root.length));
}

/** A file's text, or null when it cannot be read. */
export function readIfExists(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** `0-2,5` → [0, 1, 2, 5] (the kernel's list format, as in /proc/<pid>/status Cpus_allowed_list). */
export function parseCpuList(list: string): number[] {
  return list
    .split(",")
    .filter((part) => part !== "")
    .flatMap((part) => {
      const [from, to = from] = part.split("-").map(Number);
      if (from === undefined || to === undefined || !Number.isInteger(from) || !Number.isInteger(to)) {
        throw new TypeError(`Cannot parse a CPU list: received ${list}`);
      }
      return Array.from({ length: to - from + 1 }, (_, index) => from + index);
    });
}
