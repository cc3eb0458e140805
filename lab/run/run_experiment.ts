/**
 * The experiment runner: a pipeline of cells (strategy × attack × repeat, interleaved across strategies).
 * The plan is lab/plan/experiment_plan.ts, the tool choice lab/load/choose.ts, where servers and load go
 * run_hosts.ts, the services run_services.ts, each cell run_cell.ts, each measured attack lab/cell/measure.ts.
 * Per cell: reset state → fresh server process → poll readiness → verify answers against the database →
 * warm-up → measured attack (live status line) → server counters and pg_stat_statements deltas → stop →
 * one CSV row. A cell that cannot be trusted is written with valid=false and the reason, never as a number.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ensureSeeded } from "../../seed/seed.ts";
import { StreamCache } from "../cell/cell_trace.ts";
import type { PrometheusLink } from "../cell/prometheus_targets.ts";
import { connectRemoteServers, type RemoteServer, remoteCells } from "../cell/remote.ts";
import { sweepNetworks } from "../isolation/netns.ts";
import { chooseToolOrFallback } from "../load/choose.ts";
import type { Tool } from "../load/tool.ts";
import { predictRow } from "../model/predict_row.ts";
import type { AttackPlan, TraceKeys } from "../plan/attack_plan.ts";
import {
  attackPlan,
  type Cell,
  cells,
  type Experiment,
  type ExperimentAttack,
  plannedSeconds,
  seedFor,
} from "../plan/experiment_plan.ts";
import { applyOverrides, askedRoundTrips, type Overrides, withPayloadBytes } from "../plan/overrides.ts";
import { cellsBound, searchedCells, searchOf, withVerdict } from "../plan/search.ts";
import { type SettledCell, settleCells } from "../plan/settled_cells.ts";
import { buildRow, failed, type RowContext, rowLine } from "../results/cell_row.ts";
import { appendRow, type CsvRow, newRunId, resolveCsvPath } from "../results/csv.ts";
import { machine } from "../results/machine.ts";
import type { Services } from "../services/lifecycle.ts";
import { REPO_ROOT, rawRoot as rawRootDir } from "../shared/repo.ts";
import { acquireRunLock } from "../shared/run_lock.ts";
import { loadTraceKeys, prepareTraces, withTrace } from "../trace/trace_plan.ts";
import { describeOverrides, describeRun } from "./describe_run.ts";
import { type CellHold, type CellRun, interrupted, releaseCell, runCell } from "./run_cell.ts";
import { ReplayedSegments, writeReplayedCurves } from "./run_curves.ts";
import { openRunHosts, type RunHosts } from "./run_hosts.ts";
import { clusterStrategies, measureRunBase, openRunServices, valkeyPlanLine } from "./run_services.ts";

/** A run: the experiment's name, the command line's overrides of its plan, and how and where it runs. */
/** What the plan says of a `--redis-cluster` run. */
export const REDIS_CLUSTER_LINE =
  "redis: the lab's local Redis Cluster of three masters (--redis-cluster), REDIS_CLUSTER_NODES on every server";

export interface RunOptions extends Overrides {
  name: string;
  out?: string;
  dryRun?: boolean;
  /** Where each printed command's files are written (`--commands-dir`); without it, nowhere. */
  commandsDir?: string;
  /** Progress lines (stderr by default; a dry run's plan is its output: stdout). */
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
  /** A trace to replay in place of every attack's key draws (`--trace`). */
  trace?: TraceKeys;
  /** The user's word that a database without cachelab's marker may be reseeded (`--i-own-this-database`). */
  handedOver?: boolean;
  /** A Prometheus to announce every cell's servers to, METRICS=1 on (`--prometheus`; lab/cell/prometheus_targets.ts). */
  prometheus?: PrometheusLink;
  /** The run lock's file; default lab/shared/run_lock.ts's RUN_LOCK_PATH (tests: one of their own). */
  lockPath?: string;
  /** Every cell's servers on the lab's local Redis Cluster of three masters (`--redis-cluster`). */
  redisCluster?: boolean;
  /** The run's Redis: the lab's Redis (default) or its valkey-server (`--redis-server valkey`). */
  redisServer?: "redis" | "valkey";
}

export interface RunSummary {
  csvPath: string;
  rows: CsvRow[];
  interrupted: boolean;
  wallS: number;
  plannedS: number;
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
  const log =
    options.log ??
    (options.dryRun ? (line: string) => console.log(line) : (line: string) => console.error(line));
  const startedMs = performance.now();
  const overridden = applyOverrides(experiment, options);
  // Traces are read once, before anything starts: a bad line or a plan longer than its trace stops here.
  const traced = await prepareTraces(
    options.trace ? withTrace(overridden, options.trace) : overridden,
    loadTraceKeys,
    log,
  );
  if (typeof traced === "string") return traced;
  const exp = clusterStrategies(payloadOverTrace(traced, options.payloadBytes, log), options, log);
  if (typeof exp === "string") return exp;
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
  const hosts = await openRunHosts(exp, cellList, {
    name: options.name,
    remote,
    dryRun: options.dryRun === true,
  });
  if (typeof hosts === "string") return hosts;
  try {
    return await runCells({ exp, cellList, remote, hosts, startedMs }, { ...options, log });
  } finally {
    hosts.network?.remove();
  }
}

/**
 * `--payload-bytes` over a trace's own value sizes: the flag is the user's word on the body size, so it wins,
 * and the run says which sizes it set aside (the trace's size columns still describe the trace).
 */
function payloadOverTrace(
  exp: Experiment,
  payloadBytes: number | undefined,
  log: (line: string) => void,
): Experiment {
  if (payloadBytes === undefined) return exp;
  const sized = exp.attacks.filter((attack) => attack.seed?.payloadBytes?.kind === "per-id");
  if (sized.length === 0) return exp;
  log(
    `the trace's value sizes are set aside for ${sized.map((attack) => attack.name).join(", ")}: --payload-bytes ${payloadBytes} sizes every body`,
  );
  return withPayloadBytes(exp, payloadBytes);
}

/** The run as planned: the experiment with its overrides, the cells it runs, and where they run. */
interface PlannedRun {
  exp: Experiment;
  cellList: Cell[];
  remote: RemoteServer[] | null;
  hosts: RunHosts;
  startedMs: number;
}

/** The tool, the printed plan and the CSV; then (unless a dry run) the services, the seed and every cell. */
async function runCells(
  planned: PlannedRun,
  options: RunOptions & { log: (line: string) => void },
): Promise<RunSummary | string> {
  const { cellList, remote, hosts, startedMs } = planned;
  const { log } = options;
  const baseUrls = hosts.urlsFor(false);
  const chosen = options.toolModule
    ? {
        experiment: planned.exp,
        tool: options.toolModule,
        detection: await options.toolModule.detect(),
        skipped: [],
      }
    : await chooseToolOrFallback(planned.exp, baseUrls, log);
  if ("refusal" in chosen) return chosen.refusal;
  const exp = chosen.experiment;
  const { tool, detection } = chosen;
  if (options.toolModule) {
    const refusal = exp.attacks
      .map((attack) => tool.refusal(attackPlan(attack, exp, baseUrls)))
      .find((reason) => reason !== null);
    if (refusal) return `${tool.name} cannot run ${options.name}: ${refusal}`;
  }
  // The printed commands' files go where --commands-dir says, and nowhere without it: a run leaves nothing.
  const commandsDir = options.commandsDir === undefined ? null : resolve(options.commandsDir);
  const described = describeRun(options.name, {
    experiment: exp,
    cellList,
    tool,
    detection,
    baseUrls,
    commandsDir,
    asked: askedRoundTrips(options),
  });
  for (const [path, content] of Object.entries(described.files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, content);
  }
  log(described.text);
  const overrides = describeOverrides(options);
  if (overrides) log(overrides);
  if (options.redisCluster) log(REDIS_CLUSTER_LINE);
  if (options.redisServer === "valkey") log(valkeyPlanLine(process.env));
  for (const reason of chosen.skipped) log(`skipped ${reason}`);
  const requestedCsv = resolve(options.out ?? join(REPO_ROOT, "results", `${options.name}.csv`));
  const { path: csvPath, notice } = resolveCsvPath(requestedCsv);
  if (notice) log(notice);
  log(`rows go to ${csvPath}`);
  // Every cell settled once (settings, proxies, URLs, plans), after the tool's fallback changed what it may.
  const settled = settleCells(exp, cellList, hosts.urlsFor);
  if (options.dryRun)
    return { csvPath, rows: [], interrupted: false, wallS: 0, plannedS: plannedSeconds(cellList) };

  // Hosts (network namespaces) a killed run left behind.
  for (const removed of sweepNetworks()) log(`removed ${removed}, left by a run that was killed`);
  const run = await openRunServices(settled, {
    name: options.name,
    services: options.services,
    handedOver: options.handedOver === true,
    remote,
    baseUrls,
    log,
    redisCluster: options.redisCluster === true,
    redisServer: options.redisServer ?? "redis",
  });
  if (typeof run === "string") return run;
  const runId = newRunId();
  const rawRoot = join(rawRootDir(), runId);
  mkdirSync(rawRoot, { recursive: true });
  const context: RowContext = {
    runId,
    startedAt: new Date().toISOString(),
    name: options.name,
    experiment: exp,
    services: run.services,
    machine: machine(),
    tool,
    detection,
    asked: askedRoundTrips(options),
    base: null,
  };
  const cellRun: CellRun = {
    exp,
    run,
    hosts,
    remote,
    context,
    rawRoot,
    csvPath,
    streams: new StreamCache(),
    writes: exp.attacks.some((attack) => attack.requests.some((template) => template.method !== "GET")),
    seeded: seedFor(exp, settled[0]?.attacks[0]),
    serverEntry: options.serverEntry,
    ...(options.prometheus ? { prometheus: options.prometheus } : {}),
    signal: options.signal,
    log,
    status: options.status ?? (() => {}),
  };
  const rows: CsvRow[] = [];
  // The cell's servers, released by the cell loop, or by the final `finally` when the run is interrupted.
  const hold: CellHold = { servers: [], network: null, memory: null };
  try {
    // Query counts come from pg_stat_statements where the server preloads it; else from the server's counter.
    await run.sql`create extension if not exists pg_stat_statements`.catch(() => {});
    // The first cell's dataset (an attack may bring its own: experiment_plan.ts seedFor).
    const firstSeed = seedFor(exp, settled[0]?.attacks[0]);
    const seeding = await ensureSeeded(run.sql, firstSeed, { handedOver: options.handedOver === true });
    log(
      seeding.seeded
        ? `seeded ${firstSeed.rows} rows (${seeding.reason})`
        : `database already seeded as planned (checksum ${seeding.checksum.slice(0, 12)}…)`,
    );
    // The lab's own miss cost and Redis round trip, then every cell over them; a figure below is refused here.
    const based = await measureRunBase(cellRun, settled, hosts.gateway);
    if (typeof based === "string") return based;
    const segments = new ReplayedSegments();
    await runCellList(cellRun, { cells: based, hold, rows, baseUrls, segments, overrides: options });
    writeReplayedCurves(segments, { csvPath, runId, experiment: options.name, log });
    if (!interrupted(cellRun)) searchOf(cellRun.exp)?.finish?.(rows, { csvPath, runId, log });
  } finally {
    await releaseCell(hold, options.prometheus);
    await run.close(interrupted(cellRun));
  }
  return {
    csvPath,
    rows,
    interrupted: interrupted(cellRun),
    wallS: (performance.now() - startedMs) / 1_000,
    plannedS: plannedSeconds(cellList),
  };
}

/**
 * Every cell in order, each row appended as it is measured. stopWhen skips a strategy's remaining attacks in
 * its repeat (within the attack's stop scope); a crash inside one cell becomes invalid rows for its remaining
 * attacks, and the run goes on.
 */
async function runCellList(
  cellRun: CellRun,
  loop: {
    cells: SettledCell[];
    hold: CellHold;
    rows: CsvRow[];
    baseUrls: string[];
    segments: ReplayedSegments;
    overrides: Overrides;
  },
): Promise<void> {
  const { exp, context, rawRoot, log } = cellRun;
  const { cells: cellList, hold } = loop;
  const stopped = new Set<string>();
  /** Appends the row (one write), keeps it for the summary, and logs its line. */
  const appendAndLog = (cell: SettledCell, attack: ExperimentAttack, row: CsvRow): void => {
    // The model's server-side mean for this cell, from the base cells measured before it (lab/model/).
    // The base's own cells are the model's input, never predicted from themselves.
    const base = typeof exp.modelBase === "function" ? exp.modelBase(String(row.attack)) : exp.modelBase;
    const from = base ? { from: { rows: loop.rows, runId: context.runId, attack: base } } : {};
    const prediction =
      row.attack === base
        ? { predictedMeanMs: null, predictedP99Ms: null, predictedFrom: null, reason: null, p99Reason: null }
        : predictRow(loop.rows, row, from);
    // Why a cell of a run that has a base got no figure; a run without base cells predicts nothing, says nothing.
    const hasBase = base !== undefined || loop.rows.some((r) => String(r.attack).endsWith("_base"));
    row.predicted_reason = hasBase ? (prediction.reason ?? prediction.p99Reason ?? null) : null;
    row.predicted_mean_ms = prediction.predictedMeanMs === null ? null : round4(prediction.predictedMeanMs);
    row.predicted_p99_ms = prediction.predictedP99Ms === null ? null : round4(prediction.predictedP99Ms);
    row.predicted_from = prediction.predictedFrom;
    withVerdict(exp, row);
    appendRow(cellRun.csvPath, row);
    loop.rows.push(row);
    log(
      `cell ${cellList.indexOf(cell) + 1 || cell.index}/${cellsBound(cellList, exp)} ${cell.strategy} r${cell.repeat} ${attack.name}: ${rowLine(row)}`,
    );
  };
  const urlsFor = cellRun.hosts.urlsFor;
  for (const cell of searchedCells(cellList, exp, { rows: loop.rows, urlsFor, overrides: loop.overrides })) {
    if (interrupted(cellRun)) break;
    if (stopped.has(cell.stopGroup)) continue;
    const done = new Set<string>();
    try {
      await runCell(cellRun, cell, hold, (row, attack, result, segment) => {
        appendAndLog(cell, attack, row);
        loop.segments.note(attack, cell.plans[cell.attacks.indexOf(attack)] as AttackPlan, cell, segment);
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
          stopped.add(cell.stopGroup);
          log(`  ${cell.strategy} r${cell.repeat}: ${stop}; skipping its remaining attacks`);
        }
        return !stop;
      });
    } catch (error) {
      if (interrupted(cellRun)) break;
      const reason = `cell crashed: ${(error as Error).message.split("\n")[0]}`;
      for (const attack of cell.attacks.filter((candidate) => !done.has(candidate.name))) {
        const plan = attackPlan(attack, exp, loop.baseUrls);
        appendAndLog(cell, attack, buildRow(context, cell, attack, plan, failed(reason, rawRoot)));
      }
    } finally {
      await releaseCell(hold, cellRun.prometheus);
    }
  }
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
