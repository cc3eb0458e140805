/**
 * `bun run experiment`'s deployment flags: the user's own figures (what a miss costs, how far Redis is, the
 * body size, instances, cache size and TTLs, warm-up, pool, CPU) over what the experiment file says, for
 * every attack. Parsed and checked here, so a bad value exits 2 before anything starts.
 */
import { availableParallelism } from "node:os";
import { PAYLOAD_BYTES_MAX } from "../../seed/payload.ts";
import { bodyBytesFloor } from "../../seed/product_rows.ts";
import { MAX_INT4 } from "../../server_config.ts";
import { MIN_CORES } from "../isolation/cgroup.ts";
import { type Experiment, MAX_INSTANCES } from "../plan/experiment_plan.ts";
import type { Overrides } from "../plan/overrides.ts";
import { searchOf } from "../plan/search.ts";
import { MAX_TRACE_KEYS } from "../trace/trace_plan.ts";
import { UsageError } from "./args.ts";

export const DEPLOYMENT_OPTIONS = {
  "miss-cost-ms": { type: "string" },
  "redis-rtt-ms": { type: "string" },
  "no-base": { type: "boolean", default: false },
  "payload-bytes": { type: "string" },
  instances: { type: "string" },
  "l1-entries": { type: "string" },
  "ttl-s": { type: "string" },
  "l1-ttl-s": { type: "string" },
  "warmup-s": { type: "string" },
  pool: { type: "string" },
  cpu: { type: "string" },
} as const;

export const DEPLOYMENT_USAGE = `  your deployment, over what the experiment file says (every attack's own settings too):
  --miss-cost-ms N      what a miss costs you: one database load as your application sees it, in ms. The lab
                        measures its own through Toxiproxy before the first cell and adds only the difference
                        to every database round trip (half each way, over the distance an attack declares);
                        below its own, the run is refused. Each attack runs after its twin <attack>_base, the
                        same cells through the same proxy with nothing added (docs/methodology.md)
  --redis-rtt-ms N      your Redis round trip as \`redis-cli --latency\` reports it, in ms: the same way, over
                        the lab's own PING through its path to Redis
  --no-base             no <attack>_base twins
  --payload-bytes N     every product's JSON body (GET /products/{id}) exactly N bytes, its description as
                        long as it takes: from what its other fields take (${bodyBytesFloor(100_000)} at 100 000 rows) to
                        ${PAYLOAD_BYTES_MAX}; it wins over a trace's own value sizes
  --instances N         server processes per cell, 1..${MAX_INSTANCES}, the stream dealt round-robin
  --l1-entries N        local's, two_tier's and tracking's L1 size in entries
  --ttl-s N             the cache TTL in seconds (decimal)
  --l1-ttl-s N          two_tier's and tracking's L1 TTL in seconds (decimal)
  --warmup-s N          warm-up seconds before every measured run (0: none)
  --pool N              the server's Postgres pool (PG_POOL_MAX), 1..1000
  --cpu N               the server's CPU limit in cores (cgroup; decimal, ${MIN_CORES} up to this machine's ${availableParallelism()})`;

type Values = Record<string, string | boolean | undefined>;

/** `raw` as a plain decimal (`12`, `0.5`) up to `max`; a UsageError saying what is allowed on anything else. */
function decimal(flag: string, raw: string, max = 1_000_000): number {
  if (!/^\d+(\.\d+)?$/.test(raw) || Number(raw) > max)
    throw new UsageError(
      `Cannot parse --${flag}: expected a decimal number from 0 to ${max}, like 12 or 0.5: received ${raw}`,
    );
  return Number(raw);
}

/** `raw` as an integer in min..max; a UsageError naming the range (and `why` it ends there). */
function integer(flag: string, raw: string, min: number, max: number, why = ""): number {
  if (!/^\d+$/.test(raw))
    throw new UsageError(`Cannot parse --${flag}: expected an integer: received ${raw}`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new UsageError(`Cannot use --${flag}: expected ${min}..${max}${why}: received ${raw}`);
  return value;
}

/** Seconds (decimal) as whole milliseconds, at least 1 ms. */
function milliseconds(flag: string, raw: string): number {
  const ms = Math.round(decimal(flag, raw) * 1_000);
  if (ms < 1 || ms > MAX_INT4)
    throw new UsageError(`Cannot use --${flag}: expected 0.001..${MAX_INT4 / 1_000} s: received ${raw}`);
  return ms;
}

/** The flags a server the lab did not start cannot honour: they are its process's, or its network's. */
const NOT_REMOTE: [flag: string, why: string][] = [
  ["miss-cost-ms", "the lab cannot put Toxiproxy between a server it did not start and its database"],
  ["redis-rtt-ms", "the lab cannot put Toxiproxy between a server it did not start and its Redis"],
  ["pool", "a server the lab did not start has its own PG_POOL_MAX"],
  ["ttl-s", "a server the lab did not start has its own CACHE_TTL_MS"],
  ["l1-ttl-s", "a server the lab did not start has its own L1_TTL_MS"],
  ["l1-entries", "a server the lab did not start has its own L1_MAX_ENTRIES"],
  ["cpu", "the lab cannot limit the CPU of a process it did not start"],
];

/**
 * The deployment flags as overrides of `experiment`'s plan; throws UsageError on a bad value, a value out
 * of range, or a flag that means nothing here (with `--server-url`, `--no-base` without a round trip asked).
 */
export function deploymentFrom(
  values: Values,
  context: { experiment: Experiment; serverUrls?: string[]; trace: boolean },
): Overrides {
  const given = (flag: string): string | undefined => {
    const raw = values[flag];
    return typeof raw === "string" ? raw : undefined;
  };
  const urls = context.serverUrls;
  if (urls) {
    for (const [flag, why] of NOT_REMOTE) {
      if (given(flag) !== undefined)
        throw new UsageError(`Cannot combine --${flag} with --server-url: ${why}`);
    }
    const instances = given("instances");
    if (instances !== undefined && Number(instances) !== urls.length) {
      throw new UsageError(
        `Cannot combine --instances ${instances} with --server-url: the servers are its ${urls.length} URL(s), the lab starts no more`,
      );
    }
  }
  // Base twins mean nothing to steps chosen at run time: each regime of such a search sets its own distances.
  for (const flag of ["miss-cost-ms", "redis-rtt-ms"]) {
    if (given(flag) !== undefined && searchOf(context.experiment) !== null)
      throw new UsageError(`Cannot use --${flag} here: the experiment chooses its steps at run time`);
  }
  const overrides: Overrides = {};
  const missCost = given("miss-cost-ms");
  if (missCost !== undefined) overrides.missCostMs = decimal("miss-cost-ms", missCost, 60_000);
  const redisRtt = given("redis-rtt-ms");
  if (redisRtt !== undefined) overrides.redisRttMs = decimal("redis-rtt-ms", redisRtt, 60_000);
  if (values["no-base"] === true) {
    if (overrides.missCostMs === undefined && overrides.redisRttMs === undefined) {
      throw new UsageError(
        "Cannot use --no-base without --miss-cost-ms or --redis-rtt-ms: only they add base cells",
      );
    }
    overrides.noBase = true;
  }
  const payload = given("payload-bytes");
  if (payload !== undefined) overrides.payloadBytes = payloadBytes(payload, context);
  const warmup = given("warmup-s");
  if (warmup !== undefined) overrides.warmupS = integer("warmup-s", warmup, 0, 86_400);
  const settings: NonNullable<Overrides["settings"]> = {};
  const instances = given("instances");
  if (instances !== undefined)
    settings.instances = integer("instances", instances, 1, MAX_INSTANCES, " (the lab's most per cell)");
  const l1Entries = given("l1-entries");
  if (l1Entries !== undefined) settings.l1MaxEntries = integer("l1-entries", l1Entries, 1, 100_000_000);
  const ttl = given("ttl-s");
  if (ttl !== undefined) settings.cacheTtlMs = milliseconds("ttl-s", ttl);
  const l1Ttl = given("l1-ttl-s");
  if (l1Ttl !== undefined) settings.l1TtlMs = milliseconds("l1-ttl-s", l1Ttl);
  const pool = given("pool");
  if (pool !== undefined) settings.pgPoolMax = integer("pool", pool, 1, 1_000);
  const cpu = given("cpu");
  if (cpu !== undefined) settings.cpuLimit = cores(cpu);
  if (Object.keys(settings).length > 0) overrides.settings = settings;
  return overrides;
}

/** `--cpu`: cores, from the cgroup's least to this machine's CPUs (more would not limit anything). */
function cores(raw: string): number {
  const value = decimal("cpu", raw);
  const most = availableParallelism();
  if (value < MIN_CORES || value > most) {
    throw new UsageError(
      `Cannot use --cpu: expected ${MIN_CORES}..${most} cores (this machine's CPUs): received ${raw}`,
    );
  }
  return value;
}

/**
 * `--payload-bytes`: a body every seeded row can be given exactly, so from the longest a row's other fields
 * can be (longer ids with more rows; a trace's keys may become up to MAX_TRACE_KEYS rows) to the most a
 * body is sized to.
 */
function payloadBytes(raw: string, context: { experiment: Experiment; trace: boolean }): number {
  const { experiment } = context;
  const rows = context.trace
    ? MAX_TRACE_KEYS
    : Math.max(experiment.seed.rows, ...experiment.attacks.map((attack) => attack.seed?.rows ?? 0));
  const floor = bodyBytesFloor(rows);
  const value = integer("payload-bytes", raw, 0, Number.MAX_SAFE_INTEGER);
  if (value < floor) {
    throw new UsageError(
      `Cannot use --payload-bytes: a product's other fields take up to ${floor} bytes of its body at ${rows} rows${context.trace ? " (a trace's keys may become that many)" : ""}, so a smaller body cannot be met: received ${raw}`,
    );
  }
  if (value > PAYLOAD_BYTES_MAX) {
    throw new UsageError(
      `Cannot use --payload-bytes: expected at most ${PAYLOAD_BYTES_MAX}: received ${raw}`,
    );
  }
  return value;
}
