/**
 * The command line's overrides of an experiment (`bun run experiment … --pool 4 --miss-cost-ms 5`): every
 * attack's plan and server settings over what the file says, and the base twins an added round trip calls for.
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
  /** A round trip (ms) added to every Postgres command, over the distance each attack declares (`--miss-cost-ms`). */
  missCostMs?: number;
  /** A round trip (ms) added to every Redis command, likewise (`--redis-rtt-ms`). */
  redisRttMs?: number;
  /** No `<attack>_base` twins for the added round trips (`--no-base`). */
  noBase?: boolean;
}

/** The experiment with the command line's overrides applied, and the base twins they call for. */
export function applyOverrides(experiment: Experiment, options: Overrides): Experiment {
  const settings = options.settings ?? {};
  const server = { ...experiment.server, ...(options.serverApart ? { apart: true } : {}), ...settings };
  const attacks = experiment.attacks.map((attack) => ({
    ...attack,
    durationS: options.durationS ?? attack.durationS,
    warmupS: options.warmupS ?? attack.warmupS,
    model:
      options.rateRps !== undefined && attack.model.kind === "open"
        ? { kind: "open" as const, rateRps: options.rateRps }
        : attack.model,
    // An attack's own settings would win over the experiment's: the command line's win over both.
    ...(attack.server ? { server: { ...attack.server, ...settings } } : {}),
  }));
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

/**
 * `--miss-cost-ms` and `--redis-rtt-ms` on every attack, each before its base twin `<attack>_base` (unless
 * `noBase`): the same attack through the same proxies at 0 ms added, so the proxy's own cost is in both. A
 * sequence (one server runs its attacks in order) is twinned whole: its base attacks first, then its own.
 */
function withRoundTrips(
  attacks: ExperimentAttack[],
  options: Overrides,
  sequence: boolean,
): ExperimentAttack[] {
  const added: Partial<Record<ProxiedService, number>> = {};
  if ((options.missCostMs ?? 0) > 0) added.postgres = options.missCostMs;
  if ((options.redisRttMs ?? 0) > 0) added.redis = options.redisRttMs;
  const services = Object.keys(added) as ProxiedService[];
  if (services.length === 0) return attacks;
  const targets = attacks.map((attack) => withAdded(attack, added));
  if (options.noBase) return targets;
  const names = new Set(attacks.map((attack) => attack.name));
  const bases = attacks.map((attack) => {
    const name = baseName(attack);
    if (names.has(name)) {
      throw new RangeError(`Cannot add base cells: the experiment already has an attack named ${name}`);
    }
    const nothing = Object.fromEntries(services.map((service) => [service, 0]));
    return { ...withAdded(attack, nothing), name, baseOf: attack.name };
  });
  if (sequence) return [...bases, ...targets];
  return targets.flatMap((target, i) => [bases[i] as ExperimentAttack, target]);
}
