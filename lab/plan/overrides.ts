/**
 * The command line's overrides of an experiment (`bun run experiment … --pool 4 --miss-cost-ms 5`): every
 * attack's plan and server settings over what the file says, the base twins a miss cost or a Redis round trip
 * calls for, and what Toxiproxy adds for them once the run has measured the lab's own (addedOverBase).
 */
import type { SeedPlan } from "../../seed/seed.ts";
import type { StrategyName } from "../../server_config.ts";
import type { ToolName } from "./attack_plan.ts";
import type {
  Experiment,
  ExperimentAttack,
  NetworkPath,
  ProxiedService,
  ServerSettings,
} from "./experiment_plan.ts";

/** What the command line may override: every attack's plan, over what the experiment file says. */
export interface Overrides {
  strategies?: StrategyName[];
  tool?: ToolName;
  repeats?: number;
  durationS?: number;
  rateRps?: number;
  /** Every cell's server in a network-namespace host of its own (ServerSettings.apart). */
  serverApart?: boolean;
  /** Every attack's warm-up seconds (`--warmup-s`). */
  warmupS?: number;
  /** Server settings over the experiment's and every attack's own (`--instances`, `--pool`, `--ttl-s`, …). */
  settings?: Partial<
    Pick<ServerSettings, "instances" | "pgPoolMax" | "cacheTtlMs" | "l1TtlMs" | "l1MaxEntries" | "cpuLimit">
  >;
  /** Every product's JSON body this many bytes: a fixed payload profile on every seed plan (`--payload-bytes`). */
  payloadBytes?: number;
  /**
   * What a miss costs the user (ms): one database load as their application sees it (`--miss-cost-ms`). The
   * run adds the difference from the lab's own to every Postgres round trip, over each attack's declared distance.
   */
  missCostMs?: number;
  /** The user's Redis round trip (ms), as `redis-cli --latency` reports it (`--redis-rtt-ms`), likewise. */
  redisRttMs?: number;
  /** No `<attack>_base` twins for the added round trips (`--no-base`). */
  noBase?: boolean;
}

/** The experiment with the command line's overrides applied, and the base twins they call for. */
export function applyOverrides(experiment: Experiment, options: Overrides): Experiment {
  const settings = options.settings ?? {};
  const server = { ...experiment.server, ...(options.serverApart ? { apart: true } : {}), ...settings };
  const attacks = experiment.attacks.map((attack) => overriddenAttack(attack, options));
  const overridden: Experiment = {
    ...experiment,
    strategies: options.strategies ?? experiment.strategies,
    repeats: options.repeats ?? experiment.repeats,
    tools: options.tool ? [options.tool] : experiment.tools,
    ...(Object.keys(server).length > 0 ? { server } : {}),
    attacks: withRoundTrips(attacks, options, experiment.sequence === true),
  };
  return options.payloadBytes === undefined ? overridden : withPayloadBytes(overridden, options.payloadBytes);
}

/**
 * One attack with the command line's duration, warm-up, rate and server settings over its own (an attack
 * chosen at run time, lab/plan/search.ts, gets them too, all but the rate).
 */
export function overriddenAttack(attack: ExperimentAttack, options: Overrides): ExperimentAttack {
  const settings = options.settings ?? {};
  return {
    ...attack,
    durationS: options.durationS ?? attack.durationS,
    warmupS: options.warmupS ?? attack.warmupS,
    model:
      options.rateRps !== undefined && attack.model.kind === "open"
        ? { kind: "open" as const, rateRps: options.rateRps }
        : attack.model,
    // An attack's own settings would win over the experiment's: the command line's win over both.
    ...(attack.server ? { server: { ...attack.server, ...settings } } : {}),
  };
}

/** Every seed plan of the experiment (its own and each attack's) with every product body `bytes` long. */
export function withPayloadBytes(experiment: Experiment, bytes: number): Experiment {
  const payloadBytes = { kind: "fixed", bytes } as const;
  // One object per distinct plan, so attacks that shared a dataset still share it (no reseed between them).
  const sized = new Map<SeedPlan, SeedPlan>();
  const size = (seed: SeedPlan): SeedPlan => {
    const done = sized.get(seed) ?? { ...seed, payloadBytes };
    sized.set(seed, done);
    return done;
  };
  return {
    ...experiment,
    seed: size(experiment.seed),
    attacks: experiment.attacks.map((attack) =>
      attack.seed ? { ...attack, seed: size(attack.seed) } : attack,
    ),
  };
}

/** The name of an attack's base twin: the same cells with nothing added to its services' round trips. */
export function baseName(attack: Pick<ExperimentAttack, "name">): string {
  return `${attack.name}_base`;
}

/** `path` with `addedRttMs` more on its round trip (half each way, to the µs the toxic takes). */
function lengthened(path: NetworkPath | undefined, addedRttMs: number): NetworkPath {
  const latencyMs = Math.round(((path?.latencyMs ?? 0) + addedRttMs / 2) * 1_000) / 1_000;
  return { ...path, latencyMs };
}

/** The attack with each service's round trip lengthened by `added[service]` ms (0: through the proxy as declared). */
function withAdded(
  attack: ExperimentAttack,
  added: Partial<Record<ProxiedService, number>>,
): ExperimentAttack {
  const network = { ...attack.network };
  for (const service of ["postgres", "redis"] as const) {
    const rttMs = added[service];
    if (rttMs !== undefined) network[service] = lengthened(network[service], rttMs);
  }
  return { ...attack, network };
}

/** The services whose round trip the command line asks for, and the figure asked (ms, absolute). */
export function askedRoundTrips(options: Pick<Overrides, "missCostMs" | "redisRttMs">): AskedRoundTrips {
  const asked: AskedRoundTrips = {};
  if (options.missCostMs !== undefined) asked.postgres = options.missCostMs;
  if (options.redisRttMs !== undefined) asked.redis = options.redisRttMs;
  return asked;
}

export type AskedRoundTrips = Partial<Record<ProxiedService, number>>;

/**
 * Every attack through Toxiproxy to the services `--miss-cost-ms` and `--redis-rtt-ms` name, each after its
 * base twin `<attack>_base` (unless `noBase`): the same attack through the same proxies, so the proxy's own
 * cost is in both. Nothing is added yet: what the flags add depends on the lab's own base, measured at run
 * time (withAddedOverBase). A sequence (one server runs its attacks in order) is twinned whole: its base
 * attacks first, then its own.
 */
function withRoundTrips(
  attacks: ExperimentAttack[],
  options: Overrides,
  sequence: boolean,
): ExperimentAttack[] {
  const services = Object.keys(askedRoundTrips(options)) as ProxiedService[];
  if (services.length === 0) return attacks;
  const nothing = Object.fromEntries(services.map((service) => [service, 0]));
  const targets = attacks.map((attack) => withAdded(attack, nothing));
  if (options.noBase) return targets;
  const names = new Set(attacks.map((attack) => attack.name));
  const bases = targets.map((attack) => {
    const name = baseName(attack);
    if (names.has(name)) {
      throw new RangeError(`Cannot add base cells: the experiment already has an attack named ${name}`);
    }
    return { ...attack, name, baseOf: attack.name };
  });
  if (sequence) return [...bases, ...targets];
  return targets.flatMap((target, i) => [bases[i] as ExperimentAttack, target]);
}

/** The lab's own figures, measured before the first cell (lab/cell/idle_probe.ts); null: not measured. */
export interface MeasuredBase {
  missCostMs: number | null;
  redisRttMs: number | null;
}

const BASE_OF: Record<ProxiedService, { flag: string; what: string; key: keyof MeasuredBase; path: string }> =
  {
    postgres: { flag: "miss-cost-ms", what: "miss cost", key: "missCostMs", path: "Postgres" },
    redis: { flag: "redis-rtt-ms", what: "Redis round trip", key: "redisRttMs", path: "Redis" },
  };

/**
 * What Toxiproxy adds to each asked service's round trip: the figure asked less the lab's own, to the µs;
 * or, for a figure below the base (or a base not measured), the one line that refuses the run.
 */
export function addedOverBase(
  asked: AskedRoundTrips,
  base: MeasuredBase,
): Partial<Record<ProxiedService, number>> | string {
  const added: Partial<Record<ProxiedService, number>> = {};
  for (const [service, askedMs] of Object.entries(asked) as [ProxiedService, number][]) {
    const { flag, what, key, path } = BASE_OF[service];
    const baseMs = base[key];
    if (baseMs === null) {
      return `Cannot use --${flag} ${askedMs}: the lab could not measure its own ${what} through its path to ${path}`;
    }
    const addedUs = Math.round(askedMs * 1_000) - Math.round(baseMs * 1_000);
    if (addedUs < 0) {
      return `Cannot use --${flag} ${askedMs}: below this machine's own ${what}, ${baseMs} ms (measured just now through the lab's path to ${path}): give at least ${baseMs}`;
    }
    added[service] = addedUs / 1_000;
  }
  return added;
}

/**
 * The attack as a run sends it once the base is known: `added` ms more on each named service's round trip,
 * half each way over what it declares; a base twin as it is (nothing added).
 */
export function withAddedOverBase(
  attack: ExperimentAttack,
  added: Partial<Record<ProxiedService, number>>,
): ExperimentAttack {
  return attack.baseOf === undefined ? withAdded(attack, added) : attack;
}
