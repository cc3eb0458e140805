/**
 * The row's cost columns: what a round trip was asked to cost, the lab's own and what Toxiproxy added
 * (miss_cost_*, redis_rtt_*), what each tier cost as the server timed it (srv_*, redis_cmd_*), the CPU each
 * process used per second of the run, and the warnings a valid row is read with.
 */
import type { IdleBase } from "../cell/idle_probe.ts";
import { ANSWERED, type ServerTiming } from "../cell/server_timing.ts";
import { addedRoundTripMs } from "../faults/network.ts";
import { encodeHistogram } from "../model/histogram.ts";
import type { ExperimentAttack, ProxiedService } from "../plan/experiment_plan.ts";
import type { AskedRoundTrips } from "../plan/overrides.ts";
import type { CsvRow } from "./csv.ts";

const ms4 = (value: number | null | undefined) =>
  value === null || value === undefined ? null : Math.round(value * 10_000) / 10_000;

/**
 * Per service: the figure asked (absolute; empty in a base twin and without the flag), the lab's own as the
 * idle probe measured it, and what Toxiproxy added in all, declared and asked (empty for a path not proxied).
 */
export function roundTripColumns(
  attack: ExperimentAttack,
  proxied: ProxiedService[],
  context: { asked: AskedRoundTrips; base: IdleBase | null },
) {
  const target = attack.baseOf === undefined;
  const pg = proxied.includes("postgres");
  const redis = proxied.includes("redis");
  return {
    miss_cost_ms: target ? (context.asked.postgres ?? null) : null,
    miss_cost_base_ms: pg ? (context.base?.missCostMs ?? null) : null,
    miss_cost_added_ms: pg ? addedRoundTripMs(attack, "postgres", true) : null,
    redis_rtt_ms: target ? (context.asked.redis ?? null) : null,
    redis_rtt_base_ms: redis ? (context.base?.redisRttMs ?? null) : null,
    redis_rtt_added_ms: redis ? addedRoundTripMs(attack, "redis", true) : null,
  } satisfies Partial<CsvRow>;
}

/** The server-side cost of each answered outcome and of a Redis command (srv_*, redis_cmd_*). */
export function tierColumns(costs: ServerTiming | null) {
  const columns: Record<string, number | null> = { srv_mean_ms: ms4(costs?.answered?.meanMs) };
  for (const outcome of ANSWERED) {
    const times = costs?.requests[outcome] ?? null;
    columns[`srv_${outcome}_count`] = costs?.counts[outcome] ?? null;
    columns[`srv_${outcome}_mean_ms`] = ms4(times?.meanMs);
    columns[`srv_${outcome}_p50_ms`] = ms4(times?.p50Ms);
    columns[`srv_${outcome}_p99_ms`] = ms4(times?.p99Ms);
  }
  const hists: Record<string, string | null> = {};
  // The outcome's distribution, compactly (lab/model/histogram.ts): what a p99 prediction mixes.
  for (const outcome of ANSWERED) {
    const times = costs?.requests[outcome] ?? null;
    hists[`srv_${outcome}_hist`] = times ? encodeHistogram(times.buckets) || null : null;
  }
  const redis = costs?.redisCommands ?? null;
  return {
    ...columns,
    ...hists,
    redis_cmd_count: redis?.count ?? null,
    redis_cmd_mean_ms: ms4(redis?.meanMs),
    redis_cmd_p50_ms: ms4(redis?.p50Ms),
    redis_cmd_p99_ms: ms4(redis?.p99Ms),
  } as Pick<CsvRow, `srv_${string}` & keyof CsvRow> &
    Pick<CsvRow, "redis_cmd_count" | "redis_cmd_mean_ms" | "redis_cmd_p50_ms" | "redis_cmd_p99_ms">;
}

/** CPU seconds a cell's processes used (cell_row.ts's Measured has them), null where not measured. */
interface CpuSeconds {
  loadgenCpuS: number | null;
  serverCpuS: number | null;
  postgresCpuS?: number | null;
  redisCpuS?: number | null;
}

/** CPU seconds per second of the measured run: the load tool, the server(s), Postgres, Redis. */
export function cpuColumns(measured: CpuSeconds, durationS: number) {
  const perS = (cpuS: number | null | undefined) =>
    cpuS === null || cpuS === undefined || !(durationS > 0)
      ? null
      : Math.round((cpuS / durationS) * 1000) / 1000;
  return {
    postgres_cpu_s: measured.postgresCpuS ?? null,
    redis_cpu_s: measured.redisCpuS ?? null,
    loadgen_cpu_per_s: perS(measured.loadgenCpuS),
    server_cpu_per_s: perS(measured.serverCpuS),
    postgres_cpu_per_s: perS(measured.postgresCpuS),
    redis_cpu_per_s: perS(measured.redisCpuS),
  } satisfies Partial<CsvRow>;
}

/** More than half the machine's CPU in the load tool: its queueing is in the client-side latencies. */
export const LOADGEN_CPU_SHARE_WARNING = 0.5;

/** What a valid row should be read with, or null: a warning never makes a row invalid. */
export function warningsOf(
  measured: Pick<CpuSeconds, "loadgenCpuS">,
  durationS: number,
  cores: number,
): string | null {
  const warnings: string[] = [];
  const loadgen = measured.loadgenCpuS;
  if (loadgen !== null && durationS > 0 && loadgen / durationS > LOADGEN_CPU_SHARE_WARNING * cores) {
    warnings.push(
      `the load tool used ${(loadgen / durationS).toFixed(2)} of ${cores} CPUs (over half the machine): client-side latencies include queueing behind it; the srv_* columns do not`,
    );
  }
  return warnings.length === 0 ? null : warnings.join("; ");
}
