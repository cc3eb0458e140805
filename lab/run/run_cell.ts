/**
 * One cell as its steps: 1–2 reset and the database settled (lab/cell/settle.ts), 3 the cell's network and a
 * fresh server, 4 verification before load, 5–7 each attack measured (lab/cell/measure.ts) and recorded. What
 * a cell holds (its servers, its proxies, a Redis limit) is kept in a CellHold, so the run releases it whether
 * the cell ends, crashes or is stopped.
 */

import { join } from "node:path";
import type { SeedPlan } from "../../seed/seed.ts";
import type { CellTrace, StreamCache } from "../cell/cell_trace.ts";
import { limitRedisMemory, type RedisMemoryLimit } from "../cell/constraints.ts";
import { startCellServers, stopServers } from "../cell/instances.ts";
import { measureAttack } from "../cell/measure.ts";
import { announceCell, type PrometheusLink, withdrawTargets } from "../cell/prometheus_targets.ts";
import { describeRemote, type RemoteServer, resetRemoteServers } from "../cell/remote.ts";
import { REDIS_PREFIX, resetCell } from "../cell/reset.ts";
import type { ServerProcess } from "../cell/server_process.ts";
import { settleColumns, settleDatabase } from "../cell/settle.ts";
import { verifyServer } from "../cell/verify.ts";
import { type CellNetwork, openCellNetwork } from "../faults/network.ts";
import type { AttackPlan, NormalizedResult } from "../plan/attack_plan.ts";
import { type Experiment, type ExperimentAttack, seedFor } from "../plan/experiment_plan.ts";
import type { SettledCell } from "../plan/settled_cells.ts";
import { buildRow, failed, type RowContext } from "../results/cell_row.ts";
import type { CsvRow } from "../results/csv.ts";
import { timelinePath } from "../results/timeline.ts";
import type { ReplayedSegment } from "../trace/replayed_curves.ts";
import { describeSeed, describeTopology } from "./describe_run.ts";
import type { RunHosts } from "./run_hosts.ts";
import type { RunServices } from "./run_services.ts";

/** What every cell of a run shares. */
export interface CellRun {
  exp: Experiment;
  run: RunServices;
  hosts: RunHosts;
  remote: RemoteServer[] | null;
  context: RowContext;
  rawRoot: string;
  csvPath: string;
  streams: StreamCache;
  /** Whether the experiment writes (its cells after the first reseed). */
  writes: boolean;
  /** The seed plan the database holds now: a cell whose attack has another is reseeded first. */
  seeded: SeedPlan;
  serverEntry?: string;
  /** `--prometheus`: servers with METRICS=1, announced to it with the cell's labels. */
  prometheus?: PrometheusLink;
  signal?: AbortSignal;
  log: (line: string) => void;
  status: (line: string) => void;
}

/** What a cell holds while it runs. */
export interface CellHold {
  servers: ServerProcess[];
  network: CellNetwork | null;
  memory: RedisMemoryLimit | null;
}

/** Records a row (and, for the replayed curves, what the cell sent); false stops the cell's remaining attacks. */
export type RecordRow = (
  row: CsvRow,
  attack: ExperimentAttack,
  result: NormalizedResult | null,
  segment: ReplayedSegment | null,
) => boolean;

export function interrupted(run: Pick<CellRun, "signal">): boolean {
  return run.signal?.aborted === true;
}

/** One cell: reset, fresh server, verify, then each attack. */
export async function runCell(
  run: CellRun,
  cell: SettledCell,
  hold: CellHold,
  record: RecordRow,
): Promise<void> {
  const { exp } = run;
  const { sql } = run.run;
  const redis = run.run.cluster ?? run.run.redis;
  // 1–2. Reset: the seed (experiments that write change rows) and the lab's Redis keys.
  const seed = seedFor(exp, cell.attacks[0]);
  if (seed !== run.seeded) {
    run.log(`  reseeding for ${cell.attacks[0]?.name}: ${describeSeed(seed)}`);
  }
  await resetCell({ sql, redis, seed, reseed: (run.writes && cell.index > 1) || seed !== run.seeded });
  run.seeded = seed;
  // Postgres's own work after a seed, and any VACUUM under way, done before this cell rather than during it.
  const settle = await settleDatabase(sql);
  if (settle.note !== null) run.log(`  database: ${settle.note} (${settle.settleS} s)`);
  const { servers, network } = await startCell(run, cell, hold);
  const announced = announce(run, cell, servers);
  const trace: CellTrace = { startedMs: performance.now(), requests: [] };
  const verification = await verifyServers(run, cell, servers);
  // 5–7. Each attack: warm-up, measured run, collect and judge, record.
  for (const [i, attack] of cell.attacks.entries()) {
    if (interrupted(run)) return;
    const { row, result, segment } = await attackRow(run, {
      cell,
      attack,
      plan: cell.plans[i] as AttackPlan,
      servers,
      network,
      memory: hold.memory,
      trace,
      verification,
      scraped: announced ?? undefined,
    });
    if (interrupted(run)) return; // an attack cut short is not a row
    if (!record(Object.assign(row, settleColumns(settle)), attack, result, segment)) return;
  }
}

/**
 * With `--prometheus`: the cell's servers in the targets file, with its labels, and what waits for their
 * next scrape (the measured run's bracket, lab/cell/measure.ts); null without.
 */
function announce(run: CellRun, cell: SettledCell, servers: ServerProcess[]) {
  const link = run.prometheus;
  if (link === undefined) return null;
  const announced = announceCell(link, servers, {
    run_id: run.context.runId,
    experiment: run.context.name,
    strategy: cell.strategy,
    repeat: String(cell.repeat),
    cell: String(cell.index),
  });
  return async () => {
    const atS = await announced.scrapedAfter(Date.now() / 1000);
    if (atS === null)
      run.log(`  Prometheus at ${link.url} has not scraped the servers in ${link.targetsFile}`);
    return atS;
  };
}

/** 3. The cell's network (services it reaches through Toxiproxy), its Redis limit, then fresh servers. */
async function startCell(
  run: CellRun,
  cell: SettledCell,
  hold: CellHold,
): Promise<{ servers: ServerProcess[]; network: CellNetwork }> {
  const { hosts, remote } = run;
  const { settings } = cell;
  const network = await openCellNetwork(
    run.run.toxiproxy,
    run.run.services,
    cell.proxied,
    `cachelab-${run.context.runId}-${cell.index}`,
    settings.apart ? hosts.gateway : "127.0.0.1",
  );
  hold.network = network;
  // The lab's Redis under the cell's maxmemory (allkeys-lru); put back after the cell, whatever happens.
  hold.memory =
    settings.redisMaxmemoryMb === null
      ? null
      : await limitRedisMemory(run.run.redis, Math.round(settings.redisMaxmemoryMb * 1024 * 1024), {
          recordPath: run.run.limitRecord,
        });
  // A remote server is not restarted: its own reset gives it an empty cache, as a fresh process has.
  if (remote !== null) await resetRemoteServers(remote);
  hold.servers =
    remote ??
    (await startCellServers(cell.strategy, {
      ports: hosts.ports,
      hostname: hosts.listenHostFor(settings.apart),
      ...(settings.apart && hosts.serverHost ? { prefix: hosts.serverHost.command([]) } : {}),
      entry: run.serverEntry,
      metrics: run.prometheus !== undefined,
      services: network.services,
      settings,
      redisPrefix: REDIS_PREFIX,
    }));
  return { servers: hold.servers, network };
}

/** 4. Verification before load: every instance, the first failure (naming its instance) or null. */
async function verifyServers(
  run: CellRun,
  cell: SettledCell,
  servers: ServerProcess[],
): Promise<string | null> {
  const { exp } = run;
  const rows = seedFor(exp, cell.attacks[0]).rows;
  const keyspace = Math.max(...cell.attacks.map((attack) => attack.keys.keyspace ?? rows));
  for (const [i, server] of servers.entries()) {
    const verification = await verifyServer(server, run.run.sql, {
      rows,
      avoidKeyspace: keyspace,
    }).catch((error: Error) => `verification failed: ${error.message}`);
    if (verification !== null) {
      return servers.length > 1 ? `instance ${i + 1} of ${servers.length}: ${verification}` : verification;
    }
  }
  return null;
}

interface AttackStep {
  cell: SettledCell;
  attack: ExperimentAttack;
  plan: AttackPlan;
  servers: ServerProcess[];
  network: CellNetwork;
  /** The cell's own Redis limit, or null. */
  memory: RedisMemoryLimit | null;
  trace: CellTrace;
  /** Why the cell's servers failed verification, or null. */
  verification: string | null;
  /** With `--prometheus`: waits for the next scrape of the servers (MeasureTarget.scraped). */
  scraped: (() => Promise<number | null>) | undefined;
}

/** 5–6. One attack on the cell's servers, measured and judged; an invalid row when they failed verification. */
async function attackRow(
  run: CellRun,
  step: AttackStep,
): Promise<{ row: CsvRow; result: NormalizedResult | null; segment: ReplayedSegment | null }> {
  const { cell, attack, plan, verification } = step;
  const { hosts, remote, context } = run;
  const rawPath = join(
    run.rawRoot,
    `${String(cell.index).padStart(3, "0")}-${cell.strategy}-r${cell.repeat}-${attack.name}`,
  );
  if (verification !== null) {
    return {
      row: buildRow(context, cell, attack, plan, failed(verification, rawPath)),
      result: null,
      segment: null,
    };
  }
  const { network } = step;
  await network.applyPath(attack);
  const { foundMemoryLimit } = run.run;
  return measureAttack(
    {
      context,
      sql: run.run.sql,
      redis: run.run.cluster ?? run.run.redis,
      streams: run.streams,
      status: run.status,
      log: run.log,
      signal: run.signal,
      timelinePath: timelinePath(run.csvPath),
    },
    {
      cell,
      attack,
      plan,
      servers: step.servers,
      trace: step.trace,
      rawPath,
      network,
      memory: step.memory ?? (foundMemoryLimit === null ? null : { describe: () => foundMemoryLimit }),
      loadgenHosts: hosts.loadgenHosts.slice(0, attack.loadgenHosts ?? 0),
      topology:
        remote === null
          ? describeTopology(attack.loadgenHosts ?? 0, hosts.network, cell.settings.apart)
          : describeRemote(remote),
      ...(step.scraped ? { scraped: step.scraped } : {}),
    },
  );
}

/** Stops what a cell holds and forgets it. */
export async function releaseCell(hold: CellHold, prometheus?: PrometheusLink): Promise<void> {
  if (prometheus !== undefined && hold.servers.length > 0) withdrawTargets(prometheus);
  await stopServers(hold.servers);
  hold.servers = [];
  await hold.network?.close();
  hold.network = null;
  await hold.memory?.restore();
  hold.memory = null;
}
