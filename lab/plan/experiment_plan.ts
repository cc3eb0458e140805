/**
 * An experiment as data (the question, the strategies, the attacks and their load) and how it becomes cells
 * and attack plans. Experiment files import these types; nothing here runs anything.
 */

import type { SeedPlan } from "../../seed/seed.ts";
import {
  DEFAULT_CONFIG,
  type PgDriver,
  type RedisClientName,
  type StrategyName,
} from "../../server_config.ts";
import type { SimRequest } from "../sim/simulate.ts";
import type {
  AttackPlan,
  KeyDistribution,
  LoadModel,
  NormalizedResult,
  RequestTemplate,
  ToolName,
} from "./attack_plan.ts";

/** A service the server can reach through Toxiproxy instead of directly. */
export type ProxiedService = "redis" | "postgres";

/**
 * A service's network distance for a whole attack (warm-up and measured run): a latency toxic on both
 * streams, so a round trip gains 2 × `latencyMs`. The lab's Toxiproxy build (tools/toxiproxy) adds
 * `latency_us`, so fractions of a millisecond work (the stock toxic takes whole ms); 0 routes through the
 * proxy with no toxic: the proxy's own cost alone.
 */
export interface NetworkPath {
  latencyMs: number;
  /** ± this much, drawn per chunk by Toxiproxy. */
  jitterMs?: number;
  /** A bandwidth cap on each stream (Toxiproxy's `bandwidth` toxic, KB/s with 1 KB = 1000 B). */
  bandwidthKBps?: number;
}

/**
 * A fault during the measured run: `down` disables the proxy (open connections are closed, new ones
 * refused, as when a server dies); `hang` puts a timeout-0 toxic on both streams (connections stay open,
 * nothing answers, as when a server stops or a network drops packets; removing it closes those connections);
 * `reset` resets each connection (RST) the next time the client sends on it, as a middlebox or a crashing
 * peer does.
 */
export interface Fault {
  service: ProxiedService;
  kind: "down" | "hang" | "reset";
  /** Seconds after the measured run starts. */
  atS: number;
  durationS: number;
}

/** The label a fault has in rows and timelines, e.g. "redis down". */
export function faultLabel(fault: Pick<Fault, "service" | "kind">): string {
  return `${fault.service} ${fault.kind}`;
}

/** One measured attack of an experiment, as data. */
export interface ExperimentAttack {
  name: string;
  model: LoadModel;
  /**
   * Used only when no installed tool can run `model` (e.g. an open model on a machine with only autocannon):
   * the run says so before it starts, and the CSV records the model that ran.
   */
  fallbackModel?: LoadModel;
  durationS: number;
  warmupS: number;
  /** Default 5 s. */
  timeoutS?: number;
  requests: RequestTemplate[];
  /** The attack's own dataset (another review count, other payload sizes); the runner reseeds for it. */
  seed?: SeedPlan;
  keys: {
    distribution: KeyDistribution;
    seed: number /** default: the seeded row count */;
    keyspace?: number;
  };
  /**
   * Targets for `--dry-run`'s sample and `bun run attack`; a run's lists are sized from the model
   * (lab/plan/segments.ts), so each run gets a fresh segment of the stream.
   */
  targetCount?: number;
  /**
   * The share of a measured run's requests that may re-send a stream position (default 0). Passes that
   * replay a key sequence on purpose are separate attacks over the same stream, not re-sent positions.
   */
  allowedReuseRatio?: number;
  /** Open models: most connections/VUs the tool may open. Default 256. */
  maxConnections?: number;
  /** Closed model: the highest rate its target lists are sized for (default 100 000 rps). */
  maxRateRps?: number;
  /**
   * Server settings for this attack's cells, over the experiment's (`server`): e.g. the same steps with and
   * without load shedding. Attacks that share a server (`sequence`) must agree on them.
   */
  server?: Partial<ServerSettings>;
  /**
   * Load generators on hosts of their own (lab/isolation/netns.ts): 0 (default) runs the one tool process
   * beside the server, as always; N ≥ 1 runs one generator in each of N network-namespace hosts, the plan
   * split by the tool's own mechanism and merged exactly (lab/load/distributed.ts; vegeta and k6), the
   * server, Postgres and Redis staying on the machine's own namespace.
   */
  loadgenHosts?: number;
  /** Services reached through Toxiproxy for this attack, and the distance added to each. */
  network?: Partial<Record<ProxiedService, NetworkPath>>;
  /**
   * This attack is the base twin of attack `baseOf` (applyOverrides): the same plan with nothing added by
   * `--miss-cost-ms` / `--redis-rtt-ms`, the same services still through Toxiproxy.
   */
  baseOf?: string;
  /**
   * Faults injected during the measured run (their services go through Toxiproxy). Swallowed cache errors
   * are then expected; without faults a row with cache_errors > 0 is invalid.
   */
  faults?: Fault[];
}

export interface ServerSettings {
  /**
   * Server processes of the cell's strategy, each on its own port, sharing Postgres and Redis (default 1).
   * The attack deals its stream over them round-robin by position (AttackPlan.instanceUrls); only tools
   * that take a full URL per target can (vegeta, k6, oha).
   */
  instances: number;
  /** The Postgres client under drizzle: postgres.js (default) or Bun.SQL (the server's PG_DRIVER). */
  pgDriver: PgDriver;
  /** The Redis client (REDIS_CLIENT): ioredis (default), Bun's built-in one, node-redis (tracking, a cluster). */
  redisClient: RedisClientName;
  pgPoolMax: number;
  /** Requests that may wait for a database slot (0: unbounded, no shedding). */
  pgQueueMax: number;
  /** How long one may wait before it is shed with 503 (0: no limit, the lab's default: LAB_ACQUIRE_TIMEOUT_MS). */
  pgAcquireTimeoutMs: number;
  /** Event-loop delay past which the server sheds with 503 (0: never, the lab's default: LAB_MAX_EVENT_LOOP_DELAY_MS). */
  maxEventLoopDelayMs: number;
  cacheTtlMs: number;
  l1TtlMs: number;
  l1MaxEntries: number;
  /** XFetch early refresh's β in the caching strategies (0: off). */
  earlyRefreshBeta: number;
  /** The server process's CPU limit in cores (cgroup quota), or null for none. */
  cpuLimit: number | null;
  /** The lab's Redis `maxmemory` in MB (allkeys-lru) during the cell, or null to leave it. */
  redisMaxmemoryMb: number | null;
  /**
   * The server in a network-namespace host of its own (lab/isolation/netns.ts) instead of the machine's own
   * namespace: Postgres and Redis stay there, reached across the bridge through Toxiproxy proxies that listen
   * on the bridge's address; the load comes from the machine's namespace or from the load-generator hosts.
   */
  apart: boolean;
}

/** What a measured attack gave, as the hooks see it. */
export interface AttackOutcome {
  /** Null when the attack did not run (verification failed, the tool crashed). */
  result: NormalizedResult | null;
  hitRatio: number | null;
  valid: boolean;
  invalidReason: string | null;
}

export interface DuringResult {
  staleReads: number;
  /** Checks that completed (PUT acknowledged, GET answered). */
  checks: number;
  /** Checks that could not complete: a failed PUT or GET is a failed check, never a clean one. */
  failed: number;
  /** What the checker sent, with `probe: true` and `atMs` from DuringContext.nowMs: the simulation replays it. */
  probes: SimRequest[];
  /** A staleness checker (lab/cell/staleness.ts): its reads, of which `staleReads` were stale. */
  reads?: number;
  /** One window per reader that saw the new version (ms after the write was acknowledged), ascending. */
  stalenessMs?: number[];
  /** Readers past the strategy's bound + margin: a row older than the strategy says it serves. */
  beyondBound?: number;
  boundMs?: number;
  marginMs?: number;
}

export interface DuringContext {
  /** The first instance. */
  serverUrl: string;
  /** Every instance of the cell, in plan order. */
  serverUrls: string[];
  strategy: StrategyName;
  /** The attack's server settings (TTLs, instances). */
  settings: ServerSettings;
  signal: AbortSignal;
  keyspace: number;
  /** The clock of the cell's simulated trace (ms since its server started). */
  nowMs: () => number;
}

export interface Experiment {
  /** The question the experiment answers. */
  question: string;
  /** The expected result, so the numbers can be read against a hypothesis. */
  expect: string;
  strategies: StrategyName[];
  repeats: number;
  seed: SeedPlan;
  server?: Partial<ServerSettings>;
  attacks: ExperimentAttack[];
  /** Preferred tools in order; the first installed one that runs every attack faithfully is used. */
  tools?: ToolName[];
  /**
   * true: one server per strategy × repeat runs every attack in order (caches reset only before the first),
   * e.g. cold-start passes. false (default): a fresh server for every attack.
   */
  sequence?: boolean;
  /** Error ratio above which a cell is invalid. Default 0.01. */
  maxErrorRatio?: number;
  /**
   * The server sheds load (503 with Retry-After) on purpose and that is the outcome measured: shed requests
   * are not errors (the tool's 503s must still match the server's own count). Without it a 503 is an error.
   */
  sheddingExpected?: boolean;
  /**
   * The attack whose cells are the model's base for every other attack (lab/model/predict_row.ts), or a
   * function naming each attack's (model_check: one per body size). Without it: an `<attack>_base` twin.
   */
  modelBase?: string | ((attack: string) => string);
  /** Skip the strategy's remaining attacks in this repeat once this returns a reason (saturation steps). */
  stopWhen?: (outcome: AttackOutcome, attack: ExperimentAttack) => string | null;
  /**
   * Separate ladders of steps in one experiment (e.g. per load-generator count): a stop skips only the
   * remaining attacks with the same scope. Default: one scope.
   */
  stopScope?: (attack: ExperimentAttack) => string;
  /**
   * Runs beside the measured attack and sends its requests to the server's probe routes (server_config.ts
   * PROBE_PREFIX), so they stay out of the workload's counters. A check that could not complete is
   * `failed`, never clean.
   */
  during?: (context: DuringContext) => Promise<DuringResult>;
}

export interface Cell {
  index: number;
  strategy: StrategyName;
  repeat: number;
  attacks: ExperimentAttack[];
}

/** The dataset an attack runs on: its own `seed`, else the experiment's. */
type SeedOf = { seed?: SeedPlan | undefined };
export function seedFor(experiment: Required<SeedOf>, attack?: SeedOf): SeedPlan {
  return attack?.seed ?? experiment.seed;
}

/** The most server instances a cell may start (each is a Bun process with its own pools). */
export const MAX_INSTANCES = 8;

/** The most instances any attack of the experiment starts: the run reserves that many ports. */
export function maxInstances(experiment: Experiment): number {
  return Math.max(1, ...experiment.attacks.map((attack) => serverSettings(experiment, attack).instances));
}

/**
 * The lab's cells run without the admission gate unless an experiment asks for it, though the server's own
 * default is 2 s: the gate admits one query per pool connection instead of pipelining, which changes the
 * miss path's queueing (about −25% of `none`'s rps at saturation, docs/server.md "Bounded waits"), so every figure
 * measured before it existed stays comparable. Rows record the value either way (pg_acquire_timeout_ms).
 */
export const LAB_ACQUIRE_TIMEOUT_MS = 0;

/** The same for shedding on event-loop delay (on in the server): off unless an experiment sets it (max_event_loop_delay_ms). */
export const LAB_MAX_EVENT_LOOP_DELAY_MS = 0;

/** The server settings of `attack`'s cells (or the experiment's, without one): its own over the experiment's. */
export function serverSettings(experiment: Experiment, attack?: ExperimentAttack): ServerSettings {
  const given = { ...experiment.server, ...attack?.server };
  const instances = given.instances ?? 1;
  if (!(Number.isInteger(instances) && instances >= 1 && instances <= MAX_INSTANCES)) {
    throw new RangeError(
      `Cannot plan the server: instances must be an integer in 1..${MAX_INSTANCES}: received ${instances}`,
    );
  }
  return {
    instances,
    pgDriver: given.pgDriver ?? DEFAULT_CONFIG.pgDriver,
    redisClient: given.redisClient ?? DEFAULT_CONFIG.redisClient,
    pgPoolMax: given.pgPoolMax ?? DEFAULT_CONFIG.pgPoolMax,
    pgQueueMax: given.pgQueueMax ?? DEFAULT_CONFIG.pgQueueMax,
    pgAcquireTimeoutMs: given.pgAcquireTimeoutMs ?? LAB_ACQUIRE_TIMEOUT_MS,
    maxEventLoopDelayMs: given.maxEventLoopDelayMs ?? LAB_MAX_EVENT_LOOP_DELAY_MS,
    cacheTtlMs: given.cacheTtlMs ?? DEFAULT_CONFIG.cacheTtlMs,
    l1TtlMs: given.l1TtlMs ?? DEFAULT_CONFIG.l1TtlMs,
    l1MaxEntries: given.l1MaxEntries ?? DEFAULT_CONFIG.l1MaxEntries,
    earlyRefreshBeta: given.earlyRefreshBeta ?? 0,
    cpuLimit: given.cpuLimit ?? null,
    redisMaxmemoryMb: given.redisMaxmemoryMb ?? null,
    apart: given.apart ?? false,
  };
}

/** A cell's settings: those of its attacks, which must agree when they share one server. */
export function cellSettings(experiment: Experiment, cell: Pick<Cell, "attacks">): ServerSettings {
  const [first, ...rest] = cell.attacks.map((attack) => serverSettings(experiment, attack));
  const settings = first ?? serverSettings(experiment);
  for (const other of rest) {
    if (JSON.stringify(other) !== JSON.stringify(settings)) {
      throw new RangeError(
        "Cannot run a sequence of attacks with different server settings: they share one server",
      );
    }
  }
  return settings;
}

/** A sequence's servers: one for the whole sequence, or with base twins one for the bases, then one for the rest. */
function sequenceGroups(attacks: ExperimentAttack[]): ExperimentAttack[][] {
  const bases = attacks.filter((attack) => attack.baseOf !== undefined);
  if (bases.length === 0) return [attacks];
  return [bases, attacks.filter((attack) => attack.baseOf === undefined)];
}

/**
 * Cells in run order: repeats outermost, strategies innermost and rotated by one each repeat (r1: a b c, r2: b c
 * a), so drift (a database settling, a machine warming) spreads over every strategy, not the first. Base twins
 * come right before their attack, so in every repeat each strategy's base cell runs before any target cell.
 */
export function cells(experiment: Experiment): Cell[] {
  const list: Cell[] = [];
  const strategies = experiment.strategies;
  for (let repeat = 1; repeat <= experiment.repeats; repeat++) {
    const groups = experiment.sequence
      ? sequenceGroups(experiment.attacks)
      : experiment.attacks.map((attack) => [attack]);
    const turn = (repeat - 1) % Math.max(strategies.length, 1);
    const order = [...strategies.slice(turn), ...strategies.slice(0, turn)];
    for (const attacks of groups) {
      for (const strategy of order) list.push({ index: list.length + 1, strategy, repeat, attacks });
    }
  }
  return list;
}

/**
 * The attack as a plan against the run's servers: `baseUrls` holds one origin per reserved port, and the
 * attack's `instances` take the first ones (one origin: every attack gets it).
 */
export function attackPlan(
  attack: ExperimentAttack,
  experiment: Experiment,
  baseUrls: string | string[],
): AttackPlan {
  const urls = typeof baseUrls === "string" ? [baseUrls] : baseUrls;
  const { instances } = serverSettings(experiment, attack);
  if (urls.length < instances) {
    throw new RangeError(
      `Cannot plan ${attack.name}: ${instances} instances need ${instances} server URLs: received ${urls.length}`,
    );
  }
  return {
    name: attack.name,
    baseUrl: urls[0] as string,
    ...(instances > 1 ? { instanceUrls: urls.slice(0, instances) } : {}),
    ...((attack.loadgenHosts ?? 0) > 0 ? { loadgenHosts: attack.loadgenHosts } : {}),
    model: attack.model,
    durationS: attack.durationS,
    warmupS: attack.warmupS,
    timeoutS: attack.timeoutS ?? 5,
    headers: {},
    requests: attack.requests,
    keys: {
      distribution: attack.keys.distribution,
      keyspace: attack.keys.keyspace ?? seedFor(experiment, attack).rows,
      seed: attack.keys.seed,
    },
    targetCount: attack.targetCount ?? 100_000,
    maxConnections: attack.maxConnections ?? 256,
    ...(attack.maxRateRps === undefined ? {} : { maxRateRps: attack.maxRateRps }),
    ...(attack.allowedReuseRatio === undefined ? {} : { allowedReuseRatio: attack.allowedReuseRatio }),
  };
}

/** The services a cell's server reaches through Toxiproxy: those any of its attacks adds distance or faults to. */
export function proxiedServices(attacks: ExperimentAttack[], serverApart = false): ProxiedService[] {
  // A server in a host of its own reaches both services through the proxies on the bridge.
  if (serverApart) return ["postgres", "redis"];
  const names = new Set<ProxiedService>();
  for (const attack of attacks) {
    for (const name of Object.keys(attack.network ?? {}) as ProxiedService[]) names.add(name);
    for (const fault of attack.faults ?? []) names.add(fault.service);
  }
  return (["postgres", "redis"] as const).filter((name) => names.has(name));
}

/** Seconds of load the cells plan: warm-ups and measured runs. */
export function plannedSeconds(cellList: Cell[]): number {
  return cellList.reduce(
    (sum, cell) => sum + cell.attacks.reduce((s, attack) => s + attack.warmupS + attack.durationS, 0),
    0,
  );
}
