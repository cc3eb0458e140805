/** What a run prints before it starts: the plan, the cells, the exact command lines, an ETA; and where a row ran. */
import { join } from "node:path";
import { describePayload } from "../../seed/payload.ts";
import type { SeedPlan } from "../../seed/seed.ts";
import { describeFaults, describePath } from "../faults/network.ts";
import type { Network } from "../isolation/netns.ts";
import type { Detection, Tool } from "../load/tool.ts";
import {
  attackPlan,
  type Cell,
  type Experiment,
  type ExperimentAttack,
  plannedSeconds,
  proxiedServices,
  serverSettings,
} from "../plan/experiment_plan.ts";
import type { AskedRoundTrips, Overrides } from "../plan/overrides.ts";
import { describeSearch, searchOf } from "../plan/search.ts";
import { generateTargets } from "../plan/targets.ts";
import { keyParams } from "../results/cell_row.ts";
import { shellCommand } from "../shared/shell.ts";

/**
 * Seconds a cell takes beside its load (reset, settle, start, verify, the tool's own start and output,
 * reads, simulation, stop), for the ETA: quickstart's cells measured 0.7 s on the lab's 2-core machine.
 */
const CELL_OVERHEAD_S = 1;

/**
 * Targets in the list beside a printed command: a sample of the stream, cheap to write at any rate, and at
 * least one per connection (autocannon and wrk give each connection or thread its own stripe).
 */
const SAMPLE_TARGETS = 100;

/** A seed plan in a line: `2000 rows (seed 42)`, with its reviews and payload sizes when it has them. */
export function describeSeed(seed: SeedPlan): string {
  const reviews = seed.reviewsPerProduct ? `, ${seed.reviewsPerProduct} reviews each` : "";
  const payload = seed.payloadBytes ? `, payload ${describePayload(seed.payloadBytes)}` : "";
  return `${seed.rows} rows (seed ${seed.seed})${reviews}${payload}`;
}

/** A run as planned, and the folder (one the run made, empty) where each printed command's files go. */
export interface DescribedRun {
  experiment: Experiment;
  cellList: Cell[];
  tool: Tool;
  detection: Detection;
  baseUrls: string[];
  /** Where the commands' files are written; null: nowhere (the command is printed, its files not). */
  commandsDir: string | null;
  /** The round trips the command line asked for (`--miss-cost-ms`, `--redis-rtt-ms`): known only at run time less the lab's own. */
  asked?: AskedRoundTrips;
}

/**
 * The plan, the cells, the exact command lines and an ETA: what is printed before a run. Each attack's
 * command is a line to paste into bash as is, in `<commandsDir>/<attack>/`, where `files` (absolute path →
 * content) are to be written: the command's inputs, a sample of its targets, and command.json (its argv).
 */
export function describeRun(
  name: string,
  run: DescribedRun,
): { text: string; files: Record<string, string> } {
  const { experiment, cellList, tool, detection, baseUrls } = run;
  const files: Record<string, string> = {};
  const lines = [
    `experiment ${name}: ${experiment.question}`,
    `expect: ${experiment.expect}`,
    `strategies ${experiment.strategies.join(", ")} · repeats ${experiment.repeats} · seed ${describeSeed(experiment.seed)} · tool ${tool.name} ${detection.version}`,
    `server: ${baseUrls[0]} ${JSON.stringify(serverSettings(experiment))}`,
  ];
  for (const attack of experiment.attacks) {
    const plan = attackPlan(attack, experiment, baseUrls);
    const connections = plan.model.kind === "closed" ? plan.model.connections : 0;
    const sample = Math.min(plan.targetCount, Math.max(SAMPLE_TARGETS, connections));
    const folder = attack.name.replace(/[^\w.-]/g, "_");
    const dir = run.commandsDir === null ? folder : join(run.commandsDir, folder);
    const prepared = tool.prepare(generateTargets(plan, sample), {
      plan,
      durationS: plan.durationS,
      toolVersion: detection.version ?? "",
      workDir: dir,
      binary: detection.path ?? tool.name,
    });
    if (run.commandsDir !== null) {
      for (const [file, content] of Object.entries(prepared.files)) files[join(dir, file)] = content;
      files[join(dir, "command.json")] = `${JSON.stringify(prepared.argv)}\n`;
    }
    const where =
      run.commandsDir === null
        ? `its files (--commands-dir DIR writes them, into DIR/${folder}) hold`
        : `its files are in ${dir},`;
    lines.push(
      `attack ${attack.name}: ${JSON.stringify(attack.model)} · ${attack.warmupS}s warm-up + ${attack.durationS}s · keys ${attack.keys.distribution.kind} ${keyParams(attack.keys.distribution)} over ${plan.keys.keyspace} · mix ${mixOf(attack)}`,
      `  command, to paste as is; ${where} its targets a sample (the stream's first ${sample}) of the list each run is handed:`,
      `  ${shellCommand(prepared.argv, { cwd: dir, ...(prepared.env ? { env: prepared.env } : {}) })}`,
    );
    const proxied = proxiedServices([attack], serverSettings(experiment, attack).apart);
    if (proxied.length > 0) {
      const paths = (["redis", "postgres"] as const).map(
        (service) => `${service} ${plannedPath(attack, service, proxied.includes(service), run.asked ?? {})}`,
      );
      lines.push(`  network: ${paths.join(" · ")}`);
    }
    if (attack.baseOf !== undefined) {
      lines.push(`  base of ${attack.baseOf}: its cells with nothing added, through the same proxies`);
    }
    if (attack.server) lines.push(`  server: ${JSON.stringify(attack.server)}`);
    if (attack.seed) lines.push(`  seed: ${describeSeed(attack.seed)} (its own: reseeded before its cells)`);
    if ((attack.loadgenHosts ?? 0) > 0) {
      lines.push(
        `  load: ${attack.loadgenHosts} generator${attack.loadgenHosts === 1 ? "" : "s"}, one per network-namespace host, ${tool.name === "k6" ? "execution segments of this command" : "this command at a split of the rate over their stripes of the targets"}, merged from every request`,
      );
    }
    if (plan.instanceUrls) {
      lines.push(
        `  instances: ${plan.instanceUrls.length} (${plan.instanceUrls.join(", ")}), stream positions dealt round-robin`,
      );
    }
    const faults = describeFaults(attack.faults);
    if (faults) lines.push(`  faults: ${faults}`);
  }
  const planned = plannedSeconds(cellList);
  const eta = planned + cellList.length * CELL_OVERHEAD_S;
  const minutes = (s: number) => `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  lines.push(`${cellList.length} cells · ${planned} s of load · ETA ≈ ${minutes(eta)}`);
  const search = searchOf(experiment);
  if (search !== null) {
    const chosen = experiment.strategies.length * search.maxStepsPerStrategy;
    const most = eta + chosen * (search.stepS + CELL_OVERHEAD_S);
    lines.push(
      `${describeSearch(experiment)}: with them all, ${cellList.length + chosen} cells, ETA ≤ ${minutes(most)}`,
    );
  }
  const order = strategyOrder(cellList);
  if (order !== null) lines.push(`order, turned by one each repeat: ${order}`);
  return { text: lines.join("\n"), files };
}

const OWN: Record<keyof AskedRoundTrips, string> = { postgres: "miss cost", redis: "Redis round trip" };

/**
 * How the server reaches `service` as planned: what a figure asked adds is known only once the run has
 * measured the lab's own before the first cell, so the plan says how it will be had, never a number.
 */
function plannedPath(
  attack: ExperimentAttack,
  service: keyof AskedRoundTrips,
  proxied: boolean,
  asked: AskedRoundTrips,
): string {
  const path = describePath(attack, service, proxied);
  const askedMs = attack.baseOf === undefined ? asked[service] : undefined;
  if (askedMs === undefined) return path;
  return `${path}${path === "toxiproxy" ? "," : " and"} half of (${askedMs} ms − the lab's own ${OWN[service]}) each way`;
}

/** Each repeat's order of strategies (`r1 none local · r2 local none`), or null when there is nothing to turn. */
export function strategyOrder(cellList: Cell[]): string | null {
  const repeats = new Map<number, string[]>();
  for (const cell of cellList) {
    const order = repeats.get(cell.repeat) ?? [];
    if (!order.includes(cell.strategy)) order.push(cell.strategy);
    repeats.set(cell.repeat, order);
  }
  if (repeats.size < 2 || [...repeats.values()].every((order) => order.length < 2)) return null;
  return [...repeats].map(([repeat, order]) => `r${repeat} ${order.join(" ")}`).join(" · ");
}

/** The deployment flags as given, in a line (null without any): what the plan above carries for them. */
export function describeOverrides(options: Overrides): string | null {
  const { settings = {} } = options;
  const parts = [
    options.missCostMs === undefined
      ? null
      : `--miss-cost-ms ${options.missCostMs}: Toxiproxy adds ${options.missCostMs} ms − the lab's own miss cost (measured before the first cell)`,
    options.redisRttMs === undefined
      ? null
      : `--redis-rtt-ms ${options.redisRttMs}: Toxiproxy adds ${options.redisRttMs} ms − the lab's own Redis round trip (measured before the first cell)`,
    options.noBase ? "--no-base (no <attack>_base cells)" : null,
    options.payloadBytes === undefined
      ? null
      : `--payload-bytes ${options.payloadBytes} (every product body ${options.payloadBytes} B)`,
    settings.instances === undefined ? null : `--instances ${settings.instances}`,
    settings.l1MaxEntries === undefined ? null : `--l1-entries ${settings.l1MaxEntries}`,
    settings.cacheTtlMs === undefined ? null : `--ttl-s ${settings.cacheTtlMs / 1_000}`,
    settings.l1TtlMs === undefined ? null : `--l1-ttl-s ${settings.l1TtlMs / 1_000}`,
    options.warmupS === undefined ? null : `--warmup-s ${options.warmupS}`,
    settings.pgPoolMax === undefined ? null : `--pool ${settings.pgPoolMax}`,
    settings.cpuLimit === undefined ? null : `--cpu ${settings.cpuLimit}`,
  ].filter((part) => part !== null);
  return parts.length === 0 ? null : `over the experiment file: ${parts.join(" · ")}`;
}

/** Where a row's server and load ran. */
export function describeTopology(loadgenHosts: number, network: Network | null, serverApart = false): string {
  const generators = `${loadgenHosts} load-generator host${loadgenHosts === 1 ? "" : "s"}`;
  const server = network?.hosts.find((host) => host.name === "server");
  if (serverApart && network !== null && server !== undefined) {
    return (
      `server on a host of its own (${server.address}), reaching Postgres and Redis through Toxiproxy on ` +
      `the bridge; services on this machine's namespace (${network.gateway}); ` +
      (loadgenHosts === 0
        ? "load tool on this machine's namespace (network namespaces over veth and a bridge)"
        : `${generators} (network namespaces over veth and a bridge, one generator each)`)
    );
  }
  if (loadgenHosts === 0 || network === null) return "one host: server, services and load tool on loopback";
  return (
    `server and services on this machine's namespace (${network.gateway}); ${generators} ` +
    "(network namespaces over veth and a bridge, one generator each)"
  );
}

/** The request mix as the run sends it: the weights, or for a trace the templates its operations take. */
function mixOf(attack: ExperimentAttack): string {
  if (attack.keys.distribution.kind !== "trace") {
    return attack.requests.map((t) => `${t.name} ${t.weight}`).join(", ");
  }
  const read = attack.requests.find((t) => t.method === "GET" && t.path.includes("{id}"));
  const write = attack.requests.find((t) => t.method === "PUT" && t.path.includes("{id}"));
  return `the trace's own: reads → ${read?.name ?? "none"}, writes and deletes → ${write?.name ?? "none"}`;
}
