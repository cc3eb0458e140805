/**
 * The run `bun run advise` takes its costs from: the attack (its base cells unless named), refused when a
 * fault, overload or a cold phase makes it no measure of a tier's steady cost; the machine it ran on; and
 * its own miss cost and Redis round trip, the figures a user's absolute ones are measured against.
 */
import { addedMs, median, medianColumn, numeric, type Row } from "./tier_costs.ts";

/**
 * Why an attack's cells are no base for tier costs: a fault injected, overload (shed or dropped requests),
 * or a cold phase (no warm-up: its caches filled while measured). Null when they are.
 */
export function unfitBase(rows: Row[]): string | null {
  const valid = rows.filter((row) => row.valid === true);
  if (valid.length === 0) return "no valid rows";
  const faults = valid.map((row) => String(row.faults ?? "").trim()).find((f) => f !== "");
  if (faults) return `a fault was injected (faults ${faults})`;
  const over = valid.find((row) => (numeric(row.shed) ?? 0) > 0 || (numeric(row.dropped) ?? 0) > 0);
  if (over)
    return `overloaded (shed ${numeric(over.shed) ?? 0}, dropped ${numeric(over.dropped) ?? 0} in ${over.strategy} repeat ${over.repeat})`;
  if (valid.some((row) => numeric(row.warmup_s) === 0 && row.strategy !== "none"))
    return "a cold phase (warmup_s 0: its caches filled while it was measured)";
  return null;
}

/** A run's rows: FILE's `#run_id`, else its latest (last written) run; `attack`, else its base cells, else its first. */
export function baseRowsOf(
  rows: Row[],
  file: string,
  runId: string | null,
  wanted: string | null,
): { rows: Row[]; peak: Row[]; from: string; runId: string } | string {
  const chosen = runId ?? (rows.length > 0 ? String(rows[rows.length - 1]?.run_id) : null);
  if (chosen === null) return `Cannot advise: ${file} holds no rows`;
  const run = rows.filter((row) => String(row.run_id) === chosen);
  if (run.length === 0) {
    const runs = [...new Set(rows.map((row) => String(row.run_id)))];
    return `Cannot advise: no run ${chosen} in ${file}: expected one of ${runs.join(", ")}`;
  }
  const attacks = [...new Set(run.map((row) => String(row.attack)))];
  if (wanted !== null && !attacks.includes(wanted))
    return `Cannot advise: no attack ${wanted} in run ${chosen} of ${file}: expected one of ${attacks.join(", ")}`;
  const attack = wanted ?? attacks.find((name) => name.endsWith("_base")) ?? (attacks[0] as string);
  const cells = run.filter((row) => String(row.attack) === attack);
  const unfit = unfitBase(cells);
  if (unfit !== null) {
    const fit = attacks.filter(
      (a) => a !== attack && unfitBase(run.filter((row) => row.attack === a)) === null,
    );
    return `Cannot advise from attack ${attack} of ${file}#${chosen}: ${unfit}; tier costs need a steady, warm, fault-free attack${fit.length > 0 ? `: give --attack with one of ${fit.join(", ")}` : ""}`;
  }
  const said = runId === null ? "its latest run, " : "";
  // Its peak cells, where the run has them: the CPU bound's figures (lab/model/capacity.ts).
  const peakName = `${attack.replace(/_base$/, "")}_peak`;
  return {
    rows: cells,
    peak: run.filter((row) => String(row.attack) === peakName && row.valid === true),
    runId: chosen,
    from: `${file}#${chosen} (${said}attack ${attack}${attacks.length > 1 ? ` of ${attacks.join(", ")}` : ""})`,
  };
}

/** The machine the base rows were measured on, as a line: CPU model × cores, memory, Bun. */
export function machineOf(rows: Row[]): string {
  const first = rows[0] ?? {};
  const part = (column: string) =>
    first[column] == null || first[column] === "" ? null : String(first[column]);
  const cpu = part("cpu_model");
  if (cpu === null) return "an unrecorded machine (the rows have no cpu_model)";
  return [
    `${cpu} × ${part("cpu_count") ?? "?"}`,
    part("mem_total_gb") === null ? null : `${part("mem_total_gb")} GB`,
    part("bun_version") === null ? null : `Bun ${part("bun_version")}`,
  ]
    .filter((p) => p !== null)
    .join(", ");
}

/**
 * The base run's own miss cost and Redis round trip, the figures a user's absolute ones are measured
 * against: its idle probes (miss_cost_base_ms, redis_rtt_base_ms) plus what its cells added; from a run
 * without probes, its database loads' mean under load and redis's command p50, said so.
 */
export function baseFigures(rows: Row[]): {
  missMs: number | null;
  missSource: string;
  redisMs: number | null;
  redisSource: string;
  /** What the base cells added per database / Redis round trip (tier_costs.ts's addedMs, old CSVs too). */
  addedMissMs: number;
  addedRedisMs: number;
} {
  const valid = rows.filter((row) => row.valid === true);
  const probeMiss = medianColumn(valid, "miss_cost_base_ms");
  const probeRedis = medianColumn(valid, "redis_rtt_base_ms");
  const addedMiss = median(valid.map((row) => addedMs(row, "postgres"))) ?? 0;
  const addedRedis = median(valid.map((row) => addedMs(row, "redis"))) ?? 0;
  const loads = medianColumn(valid, "db_load_ms_mean");
  const redisP50 = medianColumn(
    valid.filter((row) => row.strategy === "redis"),
    "redis_cmd_p50_ms",
  );
  return {
    missMs: probeMiss !== null ? probeMiss + addedMiss : loads,
    missSource:
      probeMiss !== null
        ? "its idle probe of the server's own query (miss_cost_base_ms)"
        : "its database loads' mean under load (db_load_ms_mean: the run has no idle probe)",
    redisMs: probeRedis !== null ? probeRedis + addedRedis : redisP50,
    redisSource:
      probeRedis !== null
        ? "its idle ping (redis_rtt_base_ms)"
        : "redis's command p50 under load (redis_cmd_p50_ms: the run has no idle ping)",
    addedMissMs: addedMiss,
    addedRedisMs: addedRedis,
  };
}
