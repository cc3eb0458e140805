/**
 * The experiment runner: a pipeline of cells (strategy × attack × repeat, interleaved across strategies).
 * The plan is lab/plan/experiment_plan.ts, the tool choice lab/load/choose.ts, each measured attack
 * lab/cell/measure.ts.
 * Per cell: reset state → fresh server process → poll readiness → verify answers against the database →
 * warm-up → measured attack (live status line) → server counters and pg_stat_statements deltas → stop →
 * one CSV row. A cell that cannot be trusted is written with valid=false and the reason, never as a number.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import postgres from "postgres";
import { databaseOwnership, HANDOVER_ENV, HANDOVER_FLAG } from "../../seed/ownership.ts";
import { ensureSeeded } from "../../seed/seed.ts";
import type { StrategyName } from "../../server_config.ts";
import {
  foundRedisMemoryLimit,
  limitRedisMemory,
  type RedisMemoryLimit,
  restoreLeftRedisLimit,
} from "../cell/constraints.ts";
import { startCellServers, stopServers } from "../cell/instances.ts";
import { type CellTrace, measureAttack, StreamCache } from "../cell/measure.ts";
import {
  connectRemoteServers,
  describeRemote,
  identityMismatch,
  type RemoteServer,
  remoteMismatch,
  resetRemoteServers,
  serverEnvironment,
} from "../cell/remote.ts";
import { REDIS_PREFIX, resetCell } from "../cell/reset.ts";
import type { ServerProcess } from "../cell/server_process.ts";
import { verifyServer } from "../cell/verify.ts";
import { type CellNetwork, describeFaults, describePath, openCellNetwork } from "../faults/network.ts";
import { Toxiproxy } from "../faults/toxiproxy.ts";
import { createNetwork, type Network, netnsUnavailable, sweepNetworks } from "../isolation/netns.ts";
import { chooseToolOrFallback } from "../load/choose.ts";
import type { Detection, Tool } from "../load/tools/tool.ts";
import type { NormalizedResult, ToolName } from "../plan/attack_plan.ts";
import {
  applyOverrides,
  attackPlan,
  type Cell,
  cellSettings,
  cells,
  type Experiment,
  type ExperimentAttack,
  maxInstances,
  plannedSeconds,
  proxiedServices,
  serverSettings,
} from "../plan/experiment_plan.ts";
import { generateTargets } from "../plan/targets.ts";
import { buildRow, failed, keyParams, type RowContext, rowLine } from "../results/cell_row.ts";
import { appendRow, type CsvRow, newRunId, resolveCsvPath } from "../results/csv.ts";
import { machine } from "../results/machine.ts";
import { timelinePath } from "../results/timeline.ts";
import { type Services, servicesDown, servicesStatus, servicesUp } from "../services/lifecycle.ts";
import { TOXIPROXY_MISSING } from "../services/native_toxiproxy.ts";
import { redactUrl } from "../services/probe.ts";
import { freePort } from "../shared/ports.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { acquireRunLock } from "../shared/run_lock.ts";

export interface RunOptions {
  name: string;
  strategies?: StrategyName[];
  tool?: ToolName;
  repeats?: number;
  durationS?: number;
  rateRps?: number;
  out?: string;
  dryRun?: boolean;
  /** Progress lines (stderr by default). */
  log?: (line: string) => void;
  /** Live status line; overwritten in place on a terminal. */
  status?: (line: string) => void;
  signal?: AbortSignal;
  /** Use these services instead of finding them (tests point at their own database). */
  services?: Services;
  /** Server entry script instead of server.ts (tests start a deliberately broken server). */
  serverEntry?: string;
  /** This tool module instead of choosing one (tests: a tool that replays its targets on purpose). */
  toolModule?: Tool;
  /**
   * Servers the lab did not start (`--server-url`): the cells they match run against them, reset through
   * their own endpoint; the others are skipped with what a server would need for them (lab/cell/remote.ts).
   */
  serverUrls?: string[];
  /** Every cell's server in a host of its own (`--server-apart`). */
  serverApart?: boolean;
  /** The user's word that a database without cachelab's marker may be reseeded (`--i-own-this-database`). */
  handedOver?: boolean;
  /** The run lock's file; default lab/shared/run_lock.ts's RUN_LOCK_PATH (tests: one of their own). */
  lockPath?: string;
}

export interface RunSummary {
  csvPath: string;
  rows: CsvRow[];
  interrupted: boolean;
  wallS: number;
  plannedS: number;
}

const CELL_OVERHEAD_S = 3;
/** Where a cell's Redis limit records what it replaced, so a killed run's limit is put back (cell/constraints.ts). */
const REDIS_LIMIT_RECORD = join(REPO_ROOT, ".cachelab", "redis-maxmemory.json");

/** The plan, the cells, the exact command lines and an ETA: what is printed before a run. */
export function describeRun(
  name: string,
  experiment: Experiment,
  cellList: Cell[],
  tool: Tool,
  detection: Detection,
  baseUrls: string[],
): string {
  const lines = [
    `experiment ${name}: ${experiment.question}`,
    `expect: ${experiment.expect}`,
    `strategies ${experiment.strategies.join(", ")} · repeats ${experiment.repeats} · seed ${experiment.seed.rows} rows (seed ${experiment.seed.seed}) · tool ${tool.name} ${detection.version}`,
    `server: ${baseUrls[0]} ${JSON.stringify(serverSettings(experiment))}`,
  ];
  for (const attack of experiment.attacks) {
    const plan = attackPlan(attack, experiment, baseUrls);
    const prepared = tool.prepare(generateTargets({ ...plan, targetCount: Math.min(plan.targetCount, 10) }), {
      plan,
      durationS: plan.durationS,
      toolVersion: detection.version ?? "",
      workDir: "<run dir>",
      binary: detection.path ?? tool.name,
    });
    lines.push(
      `attack ${attack.name}: ${JSON.stringify(attack.model)} · ${attack.warmupS}s warm-up + ${attack.durationS}s · keys ${attack.keys.distribution.kind} ${keyParams(attack.keys.distribution)} over ${plan.keys.keyspace} · mix ${attack.requests.map((t) => `${t.name} ${t.weight}`).join(", ")}`,
      `  command: ${prepared.argv.join(" ")}`,
    );
    const proxied = proxiedServices([attack], serverSettings(experiment, attack).apart);
    if (proxied.length > 0) {
      const paths = (["redis", "postgres"] as const).map(
        (service) => `${service} ${describePath(attack, service, proxied.includes(service))}`,
      );
      lines.push(`  network: ${paths.join(" · ")}`);
    }
    if (attack.server) lines.push(`  server: ${JSON.stringify(attack.server)}`);
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
  lines.push(
    `${cellList.length} cells · ${planned} s of load · ETA ≈ ${Math.floor(eta / 60)} min ${Math.round(eta % 60)} s`,
  );
  return lines.join("\n");
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

/**
 * The cells remote servers can stand for, and a line per kind of cell they cannot (with the environment a
 * server would need); a string when none is left.
 */
export function remoteCells(
  servers: RemoteServer[],
  exp: Experiment,
  cellList: Cell[],
): { cells: Cell[]; skipped: string[] } | string {
  const runnable: Cell[] = [];
  const skipped = new Map<string, { count: number; env: string }>();
  for (const cell of cellList) {
    const settings = cellSettings(exp, cell);
    const reason = remoteMismatch(servers, cell, settings);
    if (reason === null) {
      runnable.push(cell);
      continue;
    }
    const entry = skipped.get(reason) ?? { count: 0, env: serverEnvironment(cell.strategy, settings) };
    entry.count++;
    skipped.set(reason, entry);
  }
  const lines = [...skipped].map(
    ([reason, { count, env }]) =>
      `skipped ${count} cell${count === 1 ? "" : "s"}: ${reason} (a server for them: ${env})`,
  );
  if (runnable.length === 0) return `no cell matches the server\n${lines.join("\n")}`;
  return { cells: runnable, skipped: lines };
}

/**
 * Runs the experiment; rows are appended as each cell finishes. One run at a time per checkout: a second
 * refuses while one holds the run lock (lab/shared/run_lock.ts); a dry run takes no lock.
 */
export async function runExperiment(
  experiment: Experiment,
  options: RunOptions,
): Promise<RunSummary | string> {
  if (options.dryRun) return runUnlocked(experiment, options);
  const lock = acquireRunLock(`experiment ${options.name}`, options.lockPath);
  if ("refusal" in lock) return lock.refusal;
  try {
    return await runUnlocked(experiment, options);
  } finally {
    lock.release();
  }
}

async function runUnlocked(experiment: Experiment, options: RunOptions): Promise<RunSummary | string> {
  const log = options.log ?? ((line: string) => console.error(line));
  const status = options.status ?? (() => {});
  const startedMs = performance.now();
  let exp = applyOverrides(experiment, options);
  let cellList = cells(exp);
  // Servers someone else runs: only the cells they can stand for.
  let remote: RemoteServer[] | null = null;
  if (options.serverUrls) {
    const connected = await connectRemoteServers(options.serverUrls);
    if (typeof connected === "string") return connected;
    remote = connected;
    const chosen = remoteCells(connected, exp, cellList);
    if (typeof chosen === "string")
      return `${options.name} cannot run on ${options.serverUrls.join(", ")}: ${chosen}`;
    for (const line of chosen.skipped) log(line);
    cellList = chosen.cells;
  }
  // One port per instance the largest cell starts; every cell's instance i listens on ports[i].
  const ports: number[] = [];
  while (remote === null && ports.length < maxInstances(exp)) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  // Hosts of their own (network namespaces made for the run, removed with it): load generators, and the
  // server when a cell puts it apart. Postgres, Redis and Toxiproxy stay on the root namespace; with
  // generators apart the server listens on the bridge's address, a server apart on its host's.
  const loadgensNeeded =
    remote === null ? Math.max(0, ...exp.attacks.map((attack) => attack.loadgenHosts ?? 0)) : 0;
  const serverApart = remote === null && cellList.some((cell) => cellSettings(exp, cell).apart);
  if ((loadgensNeeded > 0 || serverApart) && netnsUnavailable() !== null) {
    const what = serverApart ? "its server" : "load generators";
    return `${options.name} runs ${what} on hosts of their own: ${netnsUnavailable()}`;
  }
  const hostNames = [
    ...(serverApart ? ["server"] : []),
    ...Array.from({ length: loadgensNeeded }, (_, i) => `loadgen${i + 1}`),
  ];
  const hosts = hostNames.length > 0 && !options.dryRun ? createNetwork(hostNames) : null;
  const serverHost = hosts?.hosts.find((host) => host.name === "server") ?? null;
  const loadgenHosts = hosts?.hosts.filter((host) => host.name !== "server") ?? [];
  const gateway = hosts?.gateway ?? "198.18.k.1";
  /** Where a cell's servers listen: their own host's address, the bridge's for generators apart, or loopback. */
  const listenHostFor = (apart: boolean): string =>
    apart ? (serverHost?.address ?? "198.18.k.10") : loadgensNeeded > 0 ? gateway : "127.0.0.1";
  const urlsFor = (apart: boolean): string[] =>
    remote?.map((server) => server.url) ?? ports.map((port) => `http://${listenHostFor(apart)}:${port}`);
  const baseUrls = urlsFor(false);
  try {
    return await runCells();
  } finally {
    hosts?.remove();
  }

  async function runCells(): Promise<RunSummary | string> {
    const chosen = options.toolModule
      ? {
          experiment: exp,
          tool: options.toolModule,
          detection: await options.toolModule.detect(),
          skipped: [],
        }
      : await chooseToolOrFallback(exp, baseUrls, log);
    if ("refusal" in chosen) return chosen.refusal;
    exp = chosen.experiment;
    const { tool, detection } = chosen;
    if (options.toolModule) {
      const refusal = exp.attacks
        .map((attack) => tool.refusal(attackPlan(attack, exp, baseUrls)))
        .find((reason) => reason !== null);
      if (refusal) return `${tool.name} cannot run ${options.name}: ${refusal}`;
    }
    log(describeRun(options.name, exp, cellList, tool, detection, baseUrls));
    for (const reason of chosen.skipped) log(`skipped ${reason}`);
    const requestedCsv = resolve(options.out ?? join(REPO_ROOT, "results", `${options.name}.csv`));
    const { path: csvPath, notice } = resolveCsvPath(requestedCsv);
    if (notice) log(notice);
    log(`rows go to ${csvPath}`);
    if (options.dryRun)
      return { csvPath, rows: [], interrupted: false, wallS: 0, plannedS: plannedSeconds(cellList) };

    // Hosts (network namespaces) a killed run left behind.
    for (const removed of sweepNetworks()) log(`removed ${removed}, left by a run that was killed`);
    const before = options.services ? null : await servicesStatus({ log: () => {} });
    const services = options.services ?? (await servicesUp({ log }));
    const needsProxy = cellList.some(
      (cell) => proxiedServices(cell.attacks, cellSettings(exp, cell).apart).length > 0,
    );
    if (needsProxy && services.toxiproxy === null)
      return `${options.name} routes services through Toxiproxy: ${TOXIPROXY_MISSING}`;
    const toxiproxy = services.toxiproxy ? new Toxiproxy(services.toxiproxy.url) : null;
    // What this run started itself (nothing answered before it): all that Ctrl-C may stop.
    const startedServices =
      before === null
        ? []
        : (["postgres", "redis", "toxiproxy"] as const).filter(
            (name) => before[name] === null && services[name]?.startedByCachelab === true,
          );
    const sql = postgres(services.databaseUrl, { max: 2, onnotice: () => {} });
    const redis = new Redis(services.redisUrl, {
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      commandTimeout: 5_000,
    });
    await redis.connect();
    // Nothing is written (tables, extension, reseed, PUTs) to a database that is not the lab's.
    const ownership = await databaseOwnership(sql, { handedOver: options.handedOver === true });
    // maxmemory is a setting of the whole Redis: only a Redis the lab started is the lab's to change.
    const limitsRedis = cellList.some((cell) => cellSettings(exp, cell).redisMaxmemoryMb !== null);
    const refusal = !ownership.owned
      ? `${options.name} cannot write to ${ownership.reason}; point DATABASE_URL at a database of cachelab's own (unset it and \`bun run services up\` starts one), or, if its rows may be replaced, hand it over with ${HANDOVER_FLAG} or ${HANDOVER_ENV}=1`
      : limitsRedis && remote === null && !services.redis.startedByCachelab
        ? `${options.name} sets maxmemory on Redis, and the Redis at ${redactUrl(services.redisUrl)} was not started by cachelab (${services.redis.mode}): its keys would be evicted; unset REDIS_URL (and free 127.0.0.1:6379) so \`bun run services up\` starts one of the lab's own`
        : null;
    // A remote server must read the database and Redis the lab verifies against and counts in.
    const foreign = refusal === null && remote !== null ? await identityMismatch(remote, sql, redis) : null;
    if (refusal !== null || foreign !== null) {
      await sql.end({ timeout: 2 });
      redis.disconnect();
      return refusal ?? `${options.name} cannot run on ${baseUrls.join(", ")}: ${foreign}`;
    }
    // A limit a killed run left on the lab's Redis is put back as that run found it.
    const restored = await restoreLeftRedisLimit(redis, REDIS_LIMIT_RECORD);
    if (restored !== null) log(restored);
    // A maxmemory nobody in this run set (a killed run's cell limit, or the operator's): say so, and record it.
    const foundMemoryLimit = await foundRedisMemoryLimit(redis);
    if (foundMemoryLimit !== null) {
      log(
        `warning: the lab's Redis already has ${foundMemoryLimit}; cells without their own limit run under it`,
      );
    }
    const runId = newRunId();
    const rawRoot = join(REPO_ROOT, "results", "raw", runId);
    mkdirSync(rawRoot, { recursive: true });
    const context: RowContext = {
      runId,
      startedAt: new Date().toISOString(),
      name: options.name,
      experiment: exp,
      services,
      machine: machine(),
      tool,
      detection,
    };
    const writes = exp.attacks.some((attack) =>
      attack.requests.some((template) => template.method !== "GET"),
    );
    const rows: CsvRow[] = [];
    const streams = new StreamCache();
    const stopped = new Set<string>();
    // The cell's servers, stopped by the cell loop, or by the final `finally` when the run is interrupted.
    const current: {
      servers: ServerProcess[];
      network: CellNetwork | null;
      memory: RedisMemoryLimit | null;
    } = { servers: [], network: null, memory: null };
    const interrupted = () => options.signal?.aborted === true;

    /** Appends the row (one write), keeps it for the summary, and logs its line. */
    function appendAndLog(cell: Cell, attack: ExperimentAttack, row: CsvRow): void {
      appendRow(csvPath, row);
      rows.push(row);
      log(
        `cell ${cellList.indexOf(cell) + 1}/${cellList.length} ${cell.strategy} r${cell.repeat} ${attack.name}: ${rowLine(row)}`,
      );
    }

    /** One cell: reset, fresh server, verify, then each attack; `record` returns false to stop the cell. */
    async function runCell(
      cell: Cell,
      record: (row: CsvRow, attack: ExperimentAttack, result: NormalizedResult | null) => boolean,
    ): Promise<void> {
      // 1–2. Reset: the seed (experiments that write change rows) and the lab's Redis keys.
      await resetCell({ sql, redis, seed: exp.seed, reseed: writes && cell.index > 1 });
      // 3. The cell's network (services it reaches through Toxiproxy), then a fresh server for its strategy.
      const settings = cellSettings(exp, cell);
      const network = await openCellNetwork(
        toxiproxy,
        services,
        proxiedServices(cell.attacks, settings.apart),
        `cachelab-${runId}-${cell.index}`,
        settings.apart ? gateway : "127.0.0.1",
      );
      current.network = network;
      const cellUrls = urlsFor(settings.apart);
      // The lab's Redis under the cell's maxmemory (allkeys-lru); put back after the cell, whatever happens.
      current.memory =
        settings.redisMaxmemoryMb === null
          ? null
          : await limitRedisMemory(redis, Math.round(settings.redisMaxmemoryMb * 1024 * 1024), {
              recordPath: REDIS_LIMIT_RECORD,
            });
      const memory = current.memory;
      // A remote server is not restarted: its own reset gives it an empty cache, as a fresh process has.
      if (remote !== null) await resetRemoteServers(remote);
      const started =
        remote ??
        (await startCellServers(cell.strategy, {
          ports,
          hostname: listenHostFor(settings.apart),
          ...(settings.apart && serverHost ? { prefix: serverHost.command([]) } : {}),
          entry: options.serverEntry,
          services: network.services,
          settings,
          redisPrefix: REDIS_PREFIX,
        }));
      current.servers = started;
      const trace: CellTrace = { startedMs: performance.now(), requests: [] };
      // 4. Verification before load.
      const keyspace = Math.max(...cell.attacks.map((attack) => attack.keys.keyspace ?? exp.seed.rows));
      let verification: string | null = null;
      for (const [i, server] of started.entries()) {
        verification = await verifyServer(server, sql, {
          rows: exp.seed.rows,
          avoidKeyspace: keyspace,
        }).catch((error: Error) => `verification failed: ${error.message}`);
        if (verification !== null) {
          if (started.length > 1) verification = `instance ${i + 1} of ${started.length}: ${verification}`;
          break;
        }
      }
      // 5–7. Each attack: warm-up, measured run, collect and judge, record.
      for (const attack of cell.attacks) {
        if (interrupted()) return;
        const plan = attackPlan(attack, exp, cellUrls);
        const rawPath = join(
          rawRoot,
          `${String(cell.index).padStart(3, "0")}-${cell.strategy}-r${cell.repeat}-${attack.name}`,
        );
        if (verification === null) await network.applyPath(attack);
        const { row, result } =
          verification !== null
            ? { row: buildRow(context, cell, attack, plan, failed(verification, rawPath)), result: null }
            : await measureAttack(
                {
                  context,
                  sql,
                  redis,
                  streams,
                  status,
                  log,
                  signal: options.signal,
                  timelinePath: timelinePath(csvPath),
                },
                {
                  cell,
                  attack,
                  plan,
                  servers: started,
                  trace,
                  rawPath,
                  network,
                  memory: memory ?? (foundMemoryLimit === null ? null : { describe: () => foundMemoryLimit }),
                  loadgenHosts: loadgenHosts.slice(0, attack.loadgenHosts ?? 0),
                  topology:
                    remote === null
                      ? describeTopology(attack.loadgenHosts ?? 0, hosts, settings.apart)
                      : describeRemote(remote),
                },
              );
        if (interrupted()) return; // an attack cut short is not a row
        if (!record(row, attack, result)) return;
      }
    }
    try {
      // Query counts come from pg_stat_statements where the server preloads it; else from the server's counter.
      await sql`create extension if not exists pg_stat_statements`.catch(() => {});
      const seeding = await ensureSeeded(sql, exp.seed, { handedOver: options.handedOver === true });
      log(
        seeding.seeded
          ? `seeded ${exp.seed.rows} rows (${seeding.reason})`
          : `database already seeded as planned (checksum ${seeding.checksum.slice(0, 12)}…)`,
      );
      for (const cell of cellList) {
        if (interrupted()) break;
        // stopWhen skips the strategy's remaining attacks in this repeat, within the attack's stop scope.
        const scope = cell.attacks[0] && exp.stopScope ? exp.stopScope(cell.attacks[0]) : "";
        const group = `${cell.strategy}#${cell.repeat}#${scope}`;
        if (stopped.has(group)) continue;
        // A crash inside one cell becomes invalid rows for its remaining attacks; the run goes on.
        const done = new Set<string>();
        try {
          await runCell(cell, (row, attack, result) => {
            appendAndLog(cell, attack, row);
            done.add(attack.name);
            const stop = exp.stopWhen?.(
              {
                result,
                hitRatio: row.hit_ratio as number | null,
                valid: row.valid === true,
                invalidReason: row.invalid_reason as string | null,
              },
              attack,
            );
            if (stop) {
              stopped.add(group);
              log(`  ${cell.strategy} r${cell.repeat}: ${stop}; skipping its remaining attacks`);
            }
            return !stop;
          });
        } catch (error) {
          if (interrupted()) break;
          const reason = `cell crashed: ${(error as Error).message.split("\n")[0]}`;
          for (const attack of cell.attacks.filter((candidate) => !done.has(candidate.name))) {
            const row = buildRow(
              context,
              cell,
              attack,
              attackPlan(attack, exp, baseUrls),
              failed(reason, rawRoot),
            );
            appendAndLog(cell, attack, row);
          }
        } finally {
          await stopServers(current.servers);
          current.servers = [];
          await current.network?.close();
          current.network = null;
          await current.memory?.restore();
          current.memory = null;
        }
      }
    } finally {
      await stopServers(current.servers);
      await current.network?.close();
      await current.memory?.restore();
      await sql.end({ timeout: 2 });
      redis.disconnect();
      if (interrupted() && startedServices.length > 0) {
        for (const line of await servicesDown({ log: () => {}, only: [...startedServices] })) log(line);
      }
    }
    return {
      csvPath,
      rows,
      interrupted: interrupted(),
      wallS: (performance.now() - startedMs) / 1_000,
      plannedS: plannedSeconds(cellList),
    };
  }
}
