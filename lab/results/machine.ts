/** What a CSV row says about where it was measured: machine, OS, versions, git state. */
import { readFileSync } from "node:fs";
import { arch, cpus, release, totalmem, type } from "node:os";
import { REPO_ROOT } from "../shared/repo.ts";

export interface Machine {
  os: string;
  kernel: string;
  arch: string;
  cpuModel: string;
  cpuCount: number;
  memTotalGb: number;
  bunVersion: string;
  gitSha: string;
  gitDirty: boolean;
  /** cgroup CPU limit in cores when the process runs under one (containers), else null. */
  cpuLimitCores: number | null;
}

function git(args: string[]): string | null {
  const proc = Bun.spawnSync(["git", ...args], { cwd: REPO_ROOT, stdout: "pipe", stderr: "pipe" });
  return proc.exitCode === 0 ? proc.stdout.toString().trim() : null;
}

function osName(): string {
  try {
    const text = readFileSync("/etc/os-release", "utf8");
    const pretty = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(text);
    if (pretty?.[1]) return pretty[1];
  } catch {
    // not Linux, or no os-release
  }
  return type();
}

function cgroupCpuLimit(): number | null {
  try {
    const [quota, period] = readFileSync("/sys/fs/cgroup/cpu.max", "utf8").trim().split(" ");
    if (quota === undefined || period === undefined || quota === "max") return null;
    return Number(quota) / Number(period);
  } catch {
    return null;
  }
}

/** Reads the machine once; git state is read at call time (a run may commit in between). */
export function machine(): Machine {
  const cpuList = cpus();
  return {
    os: osName(),
    kernel: release(),
    arch: arch(),
    cpuModel: cpuList[0]?.model.trim() ?? "unknown",
    cpuCount: cpuList.length,
    memTotalGb: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    bunVersion: Bun.version,
    gitSha: git(["rev-parse", "HEAD"]) ?? "unknown",
    gitDirty: (git(["status", "--porcelain", "--untracked-files=no"]) ?? "") !== "",
    cpuLimitCores: cgroupCpuLimit(),
  };
}
