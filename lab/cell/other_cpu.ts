/**
 * The CPU a measured run shared with processes that are not the lab's (every process of the machine but the
 * server, the load tool, Postgres, Redis, Toxiproxy, the lab itself and kernel threads), and the time the
 * hypervisor took (steal). A stray process beside a run (a build, a test suite, another run) takes cores at
 * random moments: the same cell's repeats then differ several-fold, and a comparison reads noise as a change.
 * So a run that shared more than a tenth of the machine is not trusted (docs/methodology.md).
 */
import type { ServiceCpu } from "./service_cpu.ts";

/** The share of the machine's cores others may use beside a run before it is not trusted. */
export const OTHER_CPU_LIMIT = 0.1;

/** OTHER_CPU_LIMIT, or CACHELAB_OTHER_CPU_LIMIT's share (`off`: not judged; the lab's tests run so). */
export function otherCpuLimit(env = process.env.CACHELAB_OTHER_CPU_LIMIT): number {
  if (env === undefined || env === "") return OTHER_CPU_LIMIT;
  if (env === "off") return Number.POSITIVE_INFINITY;
  const share = Number(env);
  if (!(share > 0 && share <= 1))
    throw new RangeError(
      `Cannot read CACHELAB_OTHER_CPU_LIMIT: expected a share of the cores in (0, 1] or off: received ${env}`,
    );
  return share;
}

export interface OtherCpu {
  /** Cores (CPU seconds per second) used by processes that are not the lab's; null when not measurable here. */
  otherPerS: number | null;
  /** Cores the hypervisor took from this machine (steal); null without /proc/stat. */
  stealPerS: number | null;
}

/** Between two readings, per second of the window between them. */
export function otherCpu(before: ServiceCpu, after: ServiceCpu): OtherCpu {
  const windowS = (after.atMs - before.atMs) / 1_000;
  const perS = (from: number | null, to: number | null) =>
    from === null || to === null || !(windowS > 0)
      ? null
      : Math.round((Math.max(0, to - from) / windowS) * 1_000) / 1_000;
  return { otherPerS: perS(before.othersS, after.othersS), stealPerS: perS(before.stealS, after.stealS) };
}

/** Why a run cannot be trusted for what it shared the machine with, or null. */
export function otherCpuProblem(other: OtherCpu, cores: number, share = otherCpuLimit()): string | null {
  const limit = share * cores;
  const problems: string[] = [];
  if (other.otherPerS !== null && other.otherPerS > limit)
    problems.push(
      `other processes used ${other.otherPerS.toFixed(2)} of ${cores} cores during the run (over ${limit.toFixed(2)}; not the server, the load tool, Postgres, Redis or Toxiproxy): a stray process skews every figure`,
    );
  if (other.stealPerS !== null && other.stealPerS > limit)
    problems.push(
      `the hypervisor took ${other.stealPerS.toFixed(2)} of ${cores} cores (steal) during the run (over ${limit.toFixed(2)})`,
    );
  return problems.length === 0 ? null : problems.join("; ");
}
