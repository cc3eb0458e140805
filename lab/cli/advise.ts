/**
 * `bun run advise`: the answer for numbers not run. Tier costs from a run's CSV, hit ratios given or from a
 * trace's miss-ratio curve, and lab/model's prediction per strategy at the miss cost and Redis round trip
 * asked; prints the card (or JSON) and writes the two sweep charts. What it computes: docs/advise.md.
 *
 *   bun run advise [--from FILE[#run_id]] [--attack NAME] [--hit-ratio X | --trace FILE [--l1-entries N]]
 *                  [--miss-cost-ms M] [--redis-rtt-ms R] [--rate-rps N] [--pool N] [--cores N]
 *                  [--p99-target-ms T] [--instances N] [--write-ratio W] [--staleness-budget-ms S]
 *                  [--json] [--charts DIR]
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type AdviseInputs, advise } from "../model/advice.ts";
import { baseFigures, baseRowsOf, machineOf } from "../model/base_run.ts";
import { DEFAULT_P99_TARGET_MS } from "../model/capacity.ts";
import { allCosts, hasServerCosts, medianColumn, type Row } from "../model/tier_costs.ts";
import { adviceJson, adviceText, sig, sweepSvgs } from "../results/advise_report.ts";
import { parseRows, RESULTS_IDENTITY_COLUMNS } from "../results/summary.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { localCurve, lruCurve } from "../trace/mrc.ts";
import { loadTrace, TraceError } from "../trace/read.ts";
import {
  asksForHelp,
  exitWith,
  inputFileProblem,
  parseFlags,
  parsePositiveInt,
  refuseUsage,
  UsageError,
} from "./args.ts";

/** The committed reference: the base when this machine has no quickstart run of its own. */
export const REFERENCE_FROM = "docs/results/quickstart.csv";
/** This machine's own quickstart run, where `bun run experiment quickstart` writes it. */
export const OWN_FROM = "results/quickstart.csv";
export const DEFAULT_CHARTS_DIR = "results/advise";

const USAGE = `usage: bun run advise [--from FILE[#run_id]] [--attack NAME] [--hit-ratio X | --trace FILE [--l1-entries N]]
                      [--miss-cost-ms M] [--redis-rtt-ms R] [--rate-rps N] [--pool N] [--cores N]
                      [--p99-target-ms T] [--instances N] [--write-ratio W] [--staleness-budget-ms S]
                      [--json] [--charts DIR]

  --from                a run's CSV for the tier costs (its srv_* columns), #run_id to choose a run; default
                        ${OWN_FROM} (this machine's own quickstart), else ${REFERENCE_FROM}
                        (the lab's machine); its latest run, its X_base cells if it has them
  --attack              the run's attack to take the costs from (default: its X_base, else its first)
  --hit-ratio           reads answered without a load, 0..1 (every cache; the in-process ones taken to hold
                        what Redis holds); default: the base run's simulation
  --trace               a trace file instead: in-process hit ratio = quick-lru's at --l1-entries, Redis's =
                        LRU's with room for every key (bun run trace mrc); its write share is the write ratio
  --l1-entries          in-process capacity for --trace (default: the base run's l1_max_entries)
  --miss-cost-ms        what a miss costs you, ms: one database load as your application sees it (your APM's
                        query time); default: the base run's own. At least the base run's own (it is added to)
  --redis-rtt-ms        your Redis round trip, ms, as redis-cli --latency reports it; default: the base run's
  --rate-rps            your request rate: each strategy says whether it holds the p99 target there and how
                        many instances it needs (default: the base run's offered rate, for queries/s only)
  --pool                the server's Postgres pool (default: the base run's pg_pool_max)
  --cores               cores for the server, Postgres and Redis together (default: the base run's)
  --p99-target-ms       the p99 a strategy must hold for its capacity, ms (default ${DEFAULT_P99_TARGET_MS})
  --instances           server instances (default 1): local's staleness bound is its TTL with more than one
  --write-ratio         share of requests that are PUTs, 0..1 (default 0, or the trace's)
  --staleness-budget-ms rules out a strategy whose staleness bound is above it
  --json                one JSON object instead of the card
  --charts              where the two SVG charts go (default ${DEFAULT_CHARTS_DIR}/)
  -h, --help            this text`;

function number(flag: string, raw: string | undefined, check: (n: number) => boolean, expect: string) {
  if (raw === undefined) return undefined;
  const value = raw.trim() === "" ? Number.NaN : Number(raw);
  if (!Number.isFinite(value) || !check(value))
    throw new UsageError(`Cannot parse --${flag}: expected ${expect}: received ${raw}`);
  return value;
}

const ratio = (flag: string, raw: string | undefined) =>
  number(flag, raw, (n) => n >= 0 && n <= 1, "a ratio in 0..1");
const ms = (flag: string, raw: string | undefined) => number(flag, raw, (n) => n >= 0, "milliseconds ≥ 0");

/** No --from: this machine's own quickstart (under `root`) when it has one, else the lab's committed reference. */
export function defaultFromIn(root: string): string {
  return existsSync(join(root, OWN_FROM)) ? OWN_FROM : REFERENCE_FROM;
}

/** Bad input (exit 2) says where the usage is; a fault of the lab's own reference (exit 1) does not. */
function refuse(message: string, code: number): number {
  if (code === 2) return refuseUsage("advise", message);
  console.error(message);
  return code;
}

/** `bun run advise …`; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  if (asksForHelp(args)) {
    console.log(USAGE);
    return 0;
  }
  try {
    const parsed = parseFlags({
      args,
      options: {
        from: { type: "string" },
        attack: { type: "string" },
        pool: { type: "string" },
        cores: { type: "string" },
        "p99-target-ms": { type: "string" },
        "hit-ratio": { type: "string" },
        trace: { type: "string" },
        "l1-entries": { type: "string" },
        "miss-cost-ms": { type: "string" },
        "redis-rtt-ms": { type: "string" },
        "rate-rps": { type: "string" },
        instances: { type: "string" },
        "write-ratio": { type: "string" },
        "staleness-budget-ms": { type: "string" },
        json: { type: "boolean", default: false },
        charts: { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    });
    const v = parsed.values as Record<string, string | boolean | undefined>;
    const str = (name: string) => (typeof v[name] === "string" ? (v[name] as string) : undefined);
    const hitRatio = ratio("hit-ratio", str("hit-ratio"));
    const tracePath = str("trace");
    if (hitRatio !== undefined && tracePath !== undefined)
      throw new UsageError(
        "Cannot run bun run advise: --hit-ratio and --trace both give the hit ratio: received both",
      );
    const l1Raw = str("l1-entries");
    if (l1Raw !== undefined && tracePath === undefined)
      throw new UsageError(
        `Cannot run bun run advise: --l1-entries needs --trace: received --l1-entries ${l1Raw}`,
      );
    const l1Entries = l1Raw === undefined ? undefined : parsePositiveInt("l1-entries", l1Raw);
    const askedMiss = ms("miss-cost-ms", str("miss-cost-ms")) ?? null;
    const askedRedis = ms("redis-rtt-ms", str("redis-rtt-ms")) ?? null;
    const rateRaw = number("rate-rps", str("rate-rps"), (n) => n > 0 && n <= 1e9, "a rate in (0, 1e9]");
    const poolRaw =
      str("pool") === undefined ? undefined : parsePositiveInt("pool", str("pool") as string, 1_000);
    const coresRaw = number("cores", str("cores"), (n) => n > 0 && n <= 4096, "cores in (0, 4096]");
    const p99Target =
      number("p99-target-ms", str("p99-target-ms"), (n) => n > 0 && n <= 3_600_000, "milliseconds > 0") ??
      DEFAULT_P99_TARGET_MS;
    const instancesRaw = str("instances");
    const instances = instancesRaw === undefined ? 1 : parsePositiveInt("instances", instancesRaw, 10_000);
    const writeRaw = number(
      "write-ratio",
      str("write-ratio"),
      (n) => n >= 0 && n < 1,
      "a ratio in 0..1 (below 1)",
    );
    const stalenessBudgetMs = ms("staleness-budget-ms", str("staleness-budget-ms")) ?? null;

    const defaultFrom = defaultFromIn(REPO_ROOT);
    const [file = defaultFrom, runId = null] = (str("from") ?? defaultFrom).split("#");
    const path = file.startsWith("/")
      ? file
      : join(str("from") === undefined ? REPO_ROOT : process.cwd(), file);
    // What is wrong with a file the user named is their input (exit 2); with the committed reference, the lab's.
    const refused = str("from") === undefined && file === REFERENCE_FROM ? 1 : 2;
    const problem = inputFileProblem(path);
    if (problem !== null) return refuse(`Cannot read --from: ${problem}: received ${file}`, refused);
    let all: Row[];
    try {
      all = parseRows(await Bun.file(path).text(), { path: file, columns: RESULTS_IDENTITY_COLUMNS });
    } catch (error) {
      return refuse((error as Error).message, refused); // "Cannot read <file>: …"
    }
    const base = baseRowsOf(all, file, runId, str("attack") ?? null);
    if (typeof base === "string") {
      return refuse(base, 2);
    }
    const defaulted =
      str("from") !== undefined
        ? ""
        : file === OWN_FROM
          ? " (this machine's own quickstart: no --from given)"
          : ` (the lab's committed reference: no --from given and no ${OWN_FROM} on this machine)`;
    const from = `${base.from}${defaulted}`;
    const machine = machineOf(base.rows);
    if (!hasServerCosts(base.rows)) {
      return refuse(
        `Cannot advise: ${from} has no srv_* columns (server-side tier costs per outcome): it was recorded before the server timed its requests. Make a run that has them with \`bun run experiment quickstart\` on a cachelab that records srv_*, then \`bun run advise --from results/quickstart.csv\``,
        refused,
      );
    }
    const { costs, skipped } = allCosts(base.rows);
    const byName = (name: string) => costs.find((c) => c.strategy === name);

    let hit: number;
    let l1Hit: number;
    let trackingL1Hit: number | null = null; // its own simulation's, from a base run that has it
    let hitSource: string;
    let writeRatio = writeRaw ?? 0;
    let redisEntries: number | null = null;
    if (tracePath !== undefined) {
      const entries = l1Entries ?? byName("two_tier")?.l1MaxEntries ?? byName("local")?.l1MaxEntries ?? null;
      if (entries === null)
        throw new UsageError(
          "Cannot run bun run advise: --trace needs --l1-entries (the base run has no l1_max_entries)",
        );
      let trace: Awaited<ReturnType<typeof loadTrace>>;
      try {
        trace = await loadTrace(tracePath);
      } catch (error) {
        if (!(error instanceof TraceError)) throw error;
        return refuse(error.message, 2);
      }
      const keys = trace.keys.length;
      const reads = trace.op.reduce((n, op) => n + (op === 0 ? 1 : 0), 0);
      if (reads === 0)
        throw new UsageError(`Cannot run bun run advise: the trace has no reads: received ${tracePath}`);
      l1Hit = localCurve(trace, [{ label: String(entries), entries }])[0]?.hitRatio as number;
      hit = lruCurve(trace, [{ label: "all keys", entries: keys }])[0]?.hitRatio as number;
      writeRatio = writeRaw ?? 1 - reads / trace.op.length;
      redisEntries = keys;
      hitSource = `the trace ${tracePath}: in-process = quick-lru at ${entries} entries (local, two_tier's and tracking's L1), Redis = LRU with room for all ${keys} keys (compulsory misses only); TTLs ignored`;
    } else if (hitRatio !== undefined) {
      hit = hitRatio;
      l1Hit = hitRatio;
      hitSource = `given (--hit-ratio ${hitRatio}); two_tier's and tracking's L1 and local taken to hold what Redis holds`;
    } else {
      const h = medianColumn(
        base.rows.filter((r) => r.strategy === "redis"),
        "hit_ratio_expected",
      );
      const h1 =
        byName("two_tier")?.l1HitRatioExpected ??
        medianColumn(
          base.rows.filter((r) => r.strategy === "local"),
          "hit_ratio_expected",
        );
      if (h === null || h1 === null) {
        return refuse(
          `Cannot advise: ${from} has no simulated hit ratios (hit_ratio_expected): give --hit-ratio or --trace`,
          refused,
        );
      }
      hit = h;
      l1Hit = Math.min(h1, h);
      const own = byName("tracking")?.l1HitRatioExpected ?? null;
      trackingL1Hit = own === null ? null : Math.min(own, h);
      hitSource = "the base run's simulation (hit_ratio_expected, l1_hit_ratio_expected)";
    }
    const rateRps = rateRaw ?? medianColumn(base.rows, "offered_rps");
    if (rateRps === null) {
      return refuse(
        `Cannot advise: ${from} has no offered_rps (a closed-model run): give --rate-rps`,
        refused,
      );
    }
    // Your figures are absolute; the model adds what they are beyond the base run's own.
    const figures = baseFigures(base.rows);
    const addedOf = (
      flag: string,
      asked: number | null,
      baseMs: number | null,
      source: string,
      baseAdded: number,
    ): number | string => {
      if (asked === null) return baseAdded;
      if (baseMs === null)
        return `Cannot use --${flag} with ${from}: it records no figure of its own to add to (${source})`;
      if (asked < baseMs)
        return `Cannot use --${flag} ${asked}: below the base run's own, ${sig(baseMs)} ms (${source}, on ${machine}): give at least ${sig(baseMs)}`;
      return asked - baseMs + baseAdded;
    };
    const missCostMs = addedOf(
      "miss-cost-ms",
      askedMiss,
      figures.missMs,
      figures.missSource,
      figures.addedMissMs,
    );
    const redisRttMs = addedOf(
      "redis-rtt-ms",
      askedRedis,
      figures.redisMs,
      figures.redisSource,
      figures.addedRedisMs,
    );
    for (const refusal of [missCostMs, redisRttMs]) {
      if (typeof refusal === "string") {
        return refuse(refusal, 2);
      }
    }
    const pgPoolMax = poolRaw ?? medianColumn(base.rows, "pg_pool_max");
    const cores =
      coresRaw ?? medianColumn(base.rows, "server_cpu_limit") ?? medianColumn(base.rows, "cpu_count");
    if (pgPoolMax === null || cores === null) {
      return refuse(
        `Cannot advise: ${from} records no ${pgPoolMax === null ? "pg_pool_max" : "cpu_count"}: give ${pgPoolMax === null ? "--pool" : "--cores"}`,
        2,
      );
    }
    const peak = allCosts(base.peak).costs;
    const inputs: AdviseInputs = {
      ...(peak.length > 0 ? { peak } : {}),
      missCostMs: missCostMs as number,
      redisRttMs: redisRttMs as number,
      askedMissCostMs: askedMiss,
      askedRedisRttMs: askedRedis,
      pgPoolMax,
      cores,
      p99TargetMs: p99Target,
      checkRateRps: rateRaw ?? null,
      hitRatio: hit,
      l1HitRatio: l1Hit,
      trackingL1HitRatio: trackingL1Hit,
      hitSource,
      rateRps,
      instances,
      writeRatio,
      stalenessBudgetMs,
      redisEntries,
    };
    const advice = advise(costs, inputs);
    advice.skipped.unshift(...skipped);

    // --json writes nothing beside its answer unless --charts asks for the charts.
    let charts: string[] = [];
    if (v.json !== true || str("charts") !== undefined) {
      const dir = str("charts") ?? join(process.cwd(), DEFAULT_CHARTS_DIR);
      const svgs = await sweepSvgs(advice);
      mkdirSync(dir, { recursive: true });
      charts = (["redis_rtt_ms", "miss_cost_ms"] as const).map((axis) => {
        const out = join(dir, `advise_${axis}.svg`);
        writeFileSync(out, svgs[axis]);
        return out;
      });
    }
    const meta = {
      from,
      inputs,
      charts,
      base: { file, runId: base.runId, machine, ...figures },
    };
    console.log(v.json === true ? JSON.stringify(adviceJson(advice, meta)) : adviceText(advice, meta));
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      return refuse(error.message, 2);
    }
    throw error;
  }
}

if (import.meta.main) await exitWith(() => main(process.argv.slice(2)));
