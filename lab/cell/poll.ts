/**
 * The server's own view, second by second: its /stats polled at each whole wall-clock second of a measured
 * run, so the deltas line up with the tools' per-second timelines (also keyed by Unix second) and with the
 * fault windows.
 */
import type { ServerStatsSnapshot } from "./counters.ts";
import { groupStats } from "./instances.ts";
import type { ServerProcess } from "./server_process.ts";

export interface StatsSample {
  /** When the poll was sent (Unix ms). */
  epochMs: number;
  /** Summed over the instances. */
  stats: ServerStatsSnapshot;
}

/**
 * Polls every instance (in parallel) until `signal` aborts, then once more; `onSample` sees each summed
 * sample as it comes (the live status line). A poll that fails on any instance is skipped: the second it
 * covered merges into the next delta, never reads as 0.
 */
export async function pollServerStats(
  servers: ServerProcess[],
  signal: AbortSignal,
  onSample: (sample: StatsSample) => void = () => {},
): Promise<StatsSample[]> {
  const samples: StatsSample[] = [];
  const poll = async () => {
    const epochMs = Date.now();
    const stats = await groupStats(servers).then(
      (group) => group.sum,
      () => null,
    );
    if (stats === null) return;
    const sample = { epochMs, stats };
    samples.push(sample);
    onSample(sample);
  };
  await poll();
  while (!signal.aborted) {
    const next = (Math.floor(Date.now() / 1_000) + 1) * 1_000;
    while (!signal.aborted && Date.now() < next) await Bun.sleep(Math.min(next - Date.now(), 50));
    await poll();
  }
  return samples;
}

/** l1 is the local tier or two_tier's or tracking's L1; l2 the redis tier or their L2 (as in the row's columns). */
export const TIER_NAMES = { l1: ["local", "l1"], l2: ["redis", "l2"] } as const;

export function tierOf(
  stats: ServerStatsSnapshot,
  tier: keyof typeof TIER_NAMES,
): { hits: number; misses: number } | null {
  for (const name of TIER_NAMES[tier]) {
    const found = stats.tiers[name];
    if (found) return found;
  }
  return null;
}
