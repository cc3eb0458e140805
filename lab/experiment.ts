/**
 * The experiment runner: a pipeline of cells (strategy × attack × repeat, interleaved across strategies).
 * Per cell: reset state → fresh server process → poll readiness → verify answers against the database →
 * warm-up → measured attack (live status line) → server counters and pg_stat_statements deltas → stop →
 * one CSV row. A cell that cannot be trusted is written with valid=false and the reason, never as a number.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import postgres from "postgres";
import { categoryOf, ensureSeeded, type SeedPlan } from "../seed/seed.ts";
import { DEFAULT_CONFIG, type StrategyName } from "../server_config.ts";
import {
  chooseDbQueries,
  flushLabKeys,
  HIT_RATIO_TOLERANCE,
  judge,
  judgeStream,
  pgStatementCalls,
  processUsage,
  REDIS_PREFIX,
  type ServerStatsSnapshot,
  sampledHitRatioTolerance,
  serverStats,
  startStatsWindow,
  verifyServer,
} from "./cell/checks.ts";
import { buildRow, failed, keyParams, type RowContext, rowLine } from "./cell/row.ts";
import { type ServerProcess, startServer } from "./cell/server_process.ts";
import { fromTargets, type SimRequest, simulate } from "./cell/simulate.ts";
import { loadTools, runTool, type ToolRun } from "./load/attack.ts";
import type { Detection, Tool } from "./load/tools/_tool.ts";
import type {
  AttackPlan,
  KeyDistribution,
  LoadModel,
  NormalizedResult,
  RequestTemplate,
  Target,
  ToolName,
} from "./plan/plan.ts";
import {
  CLOSED_RATE_MARGIN,
  distinctKeysTolerance,
  expectedDistinctKeys,
  listSize,
  reusedPositions,
  SAMPLED_REUSE_TOLERANCE,
  sentCount,
  sentPositions,
} from "./plan/segments.ts";
import { generateTargets, TargetStream } from "./plan/targets.ts";
import { appendRow, type CsvRow, resolveCsvPath } from "./results/csv.ts";
import { machine } from "./results/machine.ts";
import { type Services, servicesDown, servicesStatus, servicesUp } from "./services/services.ts";
import { freePort } from "./shared/ports.ts";
import { REPO_ROOT } from "./shared/repo.ts";

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
}

export interface ServerSettings {
  pgPoolMax: number;
  cacheTtlMs: number;
  l1TtlMs: number;
  l1MaxEntries: number;
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
}

export interface DuringContext {
  serverUrl: string;
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
  /** Skip the strategy's remaining attacks in this repeat once this returns a reason (saturation steps). */
  stopWhen?: (outcome: AttackOutcome, attack: ExperimentAttack) => string | null;
  /**
   * The experiment injects faults, so swallowed cache errors are expected; without it, a row with
   * cache_errors > 0 is invalid.
   */
  faults?: boolean;
  /**
   * Runs beside the measured attack and sends its requests with the server's probe header (server.ts
   * PROBE_HEADER), so they stay out of the workload's counters. A check that could not complete is
   * `failed`, never clean.
   */
  during?: (context: DuringContext) => Promise<DuringResult>;
}

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
}

export interface Cell {
  index: number;
  strategy: StrategyName;
  repeat: number;
  attacks: ExperimentAttack[];
}

export interface RunSummary {
  csvPath: string;
  rows: CsvRow[];
  interrupted: boolean;
  wallS: number;
  plannedS: number;
}

const CELL_OVERHEAD_S = 3;

export function serverSettings(experiment: Experiment): ServerSettings {
  return {
    pgPoolMax: experiment.server?.pgPoolMax ?? DEFAULT_CONFIG.pgPoolMax,
    cacheTtlMs: experiment.server?.cacheTtlMs ?? DEFAULT_CONFIG.cacheTtlMs,
    l1TtlMs: experiment.server?.l1TtlMs ?? DEFAULT_CONFIG.l1TtlMs,
    l1MaxEntries: experiment.server?.l1MaxEntries ?? DEFAULT_CONFIG.l1MaxEntries,
  };
}

/** The experiment with the command line's overrides applied. */
export function applyOverrides(experiment: Experiment, options: RunOptions): Experiment {
  return {
    ...experiment,
    strategies: options.strategies ?? experiment.strategies,
    repeats: options.repeats ?? experiment.repeats,
    tools: options.tool ? [options.tool] : experiment.tools,
    attacks: experiment.attacks.map((attack) => ({
      ...attack,
      durationS: options.durationS ?? attack.durationS,
      model:
        options.rateRps !== undefined && attack.model.kind === "open"
          ? { kind: "open", rateRps: options.rateRps }
          : attack.model,
    })),
  };
}

/** Cells in run order: repeats outermost, strategies innermost, so drift hits every strategy alike. */
export function cells(experiment: Experiment): Cell[] {
  const list: Cell[] = [];
  for (let repeat = 1; repeat <= experiment.repeats; repeat++) {
    const groups = experiment.sequence ? [experiment.attacks] : experiment.attacks.map((attack) => [attack]);
    for (const attacks of groups) {
      for (const strategy of experiment.strategies) {
        list.push({ index: list.length + 1, strategy, repeat, attacks });
      }
    }
  }
  return list;
}

export function attackPlan(attack: ExperimentAttack, experiment: Experiment, baseUrl: string): AttackPlan {
  return {
    name: attack.name,
    baseUrl,
    model: attack.model,
    durationS: attack.durationS,
    warmupS: attack.warmupS,
    timeoutS: attack.timeoutS ?? 5,
    headers: {},
    requests: attack.requests,
    keys: {
      distribution: attack.keys.distribution,
      keyspace: attack.keys.keyspace ?? experiment.seed.rows,
      seed: attack.keys.seed,
    },
    targetCount: attack.targetCount ?? 100_000,
    maxConnections: attack.maxConnections ?? 256,
    ...(attack.maxRateRps === undefined ? {} : { maxRateRps: attack.maxRateRps }),
    ...(attack.allowedReuseRatio === undefined ? {} : { allowedReuseRatio: attack.allowedReuseRatio }),
  };
}

/** Why no list the tool can be handed keeps the plan's runs a fresh stream, or null. */
function streamRefusal(tool: Tool, plan: AttackPlan): string | null {
  for (const durationS of [plan.warmupS, plan.durationS]) {
    if (durationS <= 0) continue;
    const size = listSize(tool.capabilities.sends, plan, durationS);
    if (typeof size === "string") return size;
  }
  return null;
}

/** The tool: the first installed of the preference list that runs every attack without refusing. */
export async function chooseTool(
  experiment: Experiment,
  plans: AttackPlan[],
): Promise<{ tool: Tool; detection: Detection; skipped: string[] } | { refusal: string }> {
  const tools = await loadTools();
  const order = experiment.tools ?? tools.map((tool) => tool.name);
  const reasons: string[] = [];
  for (const name of order) {
    const tool = tools.find((candidate) => candidate.name === name);
    if (!tool) continue;
    const detection = await tool.detect();
    if (!detection.installed) {
      reasons.push(`${name}: not installed (${detection.install})`);
      continue;
    }
    const refusal = plans
      .map((plan) => tool.refusal(plan) ?? streamRefusal(tool, plan))
      .find((reason) => reason !== null);
    if (refusal) {
      reasons.push(`${name}: ${refusal}`);
      continue;
    }
    return { tool, detection, skipped: reasons };
  }
  return { refusal: `no tool can run this experiment faithfully:\n  ${reasons.join("\n  ")}` };
}

function plannedSeconds(cellList: Cell[]): number {
  return cellList.reduce(
    (sum, cell) => sum + cell.attacks.reduce((s, attack) => s + attack.warmupS + attack.durationS, 0),
    0,
  );
}

/** The plan, the cells, the exact command lines and an ETA: what is printed before a run. */
export function describeRun(
  name: string,
  experiment: Experiment,
  cellList: Cell[],
  tool: Tool,
  detection: Detection,
  baseUrl: string,
): string {
  const lines = [
    `experiment ${name}: ${experiment.question}`,
    `expect: ${experiment.expect}`,
    `strategies ${experiment.strategies.join(", ")} · repeats ${experiment.repeats} · seed ${experiment.seed.rows} rows (seed ${experiment.seed.seed}) · tool ${tool.name} ${detection.version}`,
    `server: ${baseUrl} ${JSON.stringify(serverSettings(experiment))}`,
  ];
  for (const attack of experiment.attacks) {
    const plan = attackPlan(attack, experiment, baseUrl);
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
  }
  const planned = plannedSeconds(cellList);
  const eta = planned + cellList.length * CELL_OVERHEAD_S;
  lines.push(
    `${cellList.length} cells · ${planned} s of load · ETA ≈ ${Math.floor(eta / 60)} min ${Math.round(eta % 60)} s`,
  );
  return lines.join("\n");
}

/** Runs the experiment; rows are appended as each cell finishes. */
export async function runExperiment(
  experiment: Experiment,
  options: RunOptions,
): Promise<RunSummary | string> {
  const log = options.log ?? ((line: string) => console.error(line));
  const status = options.status ?? (() => {});
  const startedMs = performance.now();
  let exp = applyOverrides(experiment, options);
  const cellList = cells(exp);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  let chosen: Awaited<ReturnType<typeof chooseTool>> = options.toolModule
    ? { tool: options.toolModule, detection: await options.toolModule.detect(), skipped: [] }
    : await chooseTool(
        exp,
        exp.attacks.map((attack) => attackPlan(attack, exp, baseUrl)),
      );
  if ("refusal" in chosen && exp.attacks.some((attack) => attack.fallbackModel)) {
    const fallback = {
      ...exp,
      attacks: exp.attacks.map((attack) => ({ ...attack, model: attack.fallbackModel ?? attack.model })),
    };
    const second = await chooseTool(
      fallback,
      fallback.attacks.map((attack) => attackPlan(attack, fallback, baseUrl)),
    );
    if (!("refusal" in second)) {
      log(
        `WARNING: ${chosen.refusal}\nRunning the fallback model instead (${JSON.stringify(fallback.attacks[0]?.model)}): ` +
          "closed-model latency is not coordinated-omission safe. Install oha, vegeta or k6 " +
          "(bash scripts/install-deps.sh) for the open model.",
      );
      exp = fallback;
    }
    chosen = second;
  }
  if ("refusal" in chosen) return chosen.refusal;
  const { tool, detection } = chosen;
  log(describeRun(options.name, exp, cellList, tool, detection, baseUrl));
  for (const reason of chosen.skipped) log(`skipped ${reason}`);
  const requestedCsv = resolve(options.out ?? join(REPO_ROOT, "results", `${options.name}.csv`));
  const { path: csvPath, notice } = resolveCsvPath(requestedCsv);
  if (notice) log(notice);
  log(`rows go to ${csvPath}`);
  if (options.dryRun)
    return { csvPath, rows: [], interrupted: false, wallS: 0, plannedS: plannedSeconds(cellList) };

  const before = options.services ? null : await servicesStatus({ log: () => {} });
  const services = options.services ?? (await servicesUp({ log }));
  const startedServices = before !== null && (!before.postgres || !before.redis);
  const sql = postgres(services.databaseUrl, { max: 2, onnotice: () => {} });
  const redis = new Redis(services.redisUrl, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    commandTimeout: 5_000,
  });
  await redis.connect();
  const runId = `${new Date().toISOString().replace(/[-:]/g, "").slice(0, 15)}-${crypto.randomUUID().slice(0, 8)}`;
  const rawRoot = join(REPO_ROOT, "results", "raw", runId);
  mkdirSync(rawRoot, { recursive: true });
  const context: RowContext = {
    runId,
    startedAt: new Date().toISOString(),
    name: options.name,
    experiment: exp,
    settings: serverSettings(exp),
    services,
    machine: machine(),
    tool,
    detection,
  };
  const writes = exp.attacks.some((attack) => attack.requests.some((template) => template.method !== "GET"));
  const rows: CsvRow[] = [];
  const streams = new StreamCache();
  const stopped = new Set<string>();
  // The cell's server, stopped by the cell loop, or by the final `finally` when the run is interrupted.
  const current: { server: ServerProcess | null } = { server: null };
  const interrupted = () => options.signal?.aborted === true;

  /** One cell: reset, fresh server, verify, then each attack; `record` returns false to stop the cell. */
  async function runCell(
    cell: Cell,
    record: (row: CsvRow, attack: ExperimentAttack, result: NormalizedResult | null) => boolean,
  ): Promise<void> {
    if (writes && cell.index > 1) await ensureSeeded(sql, exp.seed); // writes change rows: each cell starts from the seed
    await flushLabKeys(redis);
    try {
      current.server = await startServer({
        port,
        entry: options.serverEntry,
        env: {
          CACHE_STRATEGY: cell.strategy,
          DATABASE_URL: services.databaseUrl,
          REDIS_URL: services.redisUrl,
          REDIS_KEY_PREFIX: REDIS_PREFIX,
          PG_POOL_MAX: String(context.settings.pgPoolMax),
          CACHE_TTL_MS: String(context.settings.cacheTtlMs),
          L1_TTL_MS: String(context.settings.l1TtlMs),
          L1_MAX_ENTRIES: String(context.settings.l1MaxEntries),
          NODE_ENV: "production",
        },
      });
    } catch (error) {
      throw new Error(`server did not start: ${(error as Error).message.split("\n")[0]}`);
    }
    const running = current.server;
    const trace: CellTrace = { startedMs: performance.now(), requests: [] };
    const keyspace = Math.max(...cell.attacks.map((attack) => attack.keys.keyspace ?? exp.seed.rows));
    const verification = await verifyServer(running, sql, {
      rows: exp.seed.rows,
      avoidKeyspace: keyspace,
    }).catch((error: Error) => `verification failed: ${error.message}`);
    for (const attack of cell.attacks) {
      if (interrupted()) return;
      const plan = attackPlan(attack, exp, baseUrl);
      const rawPath = join(
        rawRoot,
        `${String(cell.index).padStart(3, "0")}-${cell.strategy}-r${cell.repeat}-${attack.name}`,
      );
      const { row, result } =
        verification !== null
          ? { row: buildRow(context, cell, attack, plan, failed(verification, rawPath)), result: null }
          : await measureAttack({
              context,
              cell,
              attack,
              plan,
              server: running,
              sql,
              rawPath,
              exp,
              tool,
              detection,
              status,
              options,
              streams,
              trace,
            });
      if (interrupted()) return; // an attack cut short is not a row
      if (!record(row, attack, result)) return;
    }
  }
  try {
    // Query counts come from pg_stat_statements where the server preloads it; else from the server's counter.
    await sql`create extension if not exists pg_stat_statements`.catch(() => {});
    const seeding = await ensureSeeded(sql, exp.seed);
    log(
      seeding.seeded
        ? `seeded ${exp.seed.rows} rows (${seeding.reason})`
        : `database already seeded as planned (checksum ${seeding.checksum.slice(0, 12)}…)`,
    );
    for (const cell of cellList) {
      if (interrupted()) break;
      const group = `${cell.strategy}#${cell.repeat}`;
      if (stopped.has(group)) continue;
      // A crash inside one cell becomes invalid rows for its remaining attacks; the run goes on.
      const done = new Set<string>();
      try {
        await runCell(cell, (row, attack, result) => {
          appendRow(csvPath, row);
          rows.push(row);
          done.add(attack.name);
          log(
            `cell ${cell.index}/${cellList.length} ${cell.strategy} r${cell.repeat} ${attack.name}: ${rowLine(row)}`,
          );
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
            attackPlan(attack, exp, baseUrl),
            failed(reason, rawRoot),
          );
          appendRow(csvPath, row);
          rows.push(row);
          log(
            `cell ${cell.index}/${cellList.length} ${cell.strategy} r${cell.repeat} ${attack.name}: ${rowLine(row)}`,
          );
        }
      } finally {
        await current.server?.stop();
        current.server = null;
      }
    }
  } finally {
    await current.server?.stop();
    await sql.end({ timeout: 2 });
    redis.disconnect();
    if (interrupted() && startedServices) {
      for (const line of await servicesDown({ log: () => {} })) log(line);
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

/** The plan's stream, shared by every strategy's cells: the same targets at the same positions. */
class StreamCache {
  readonly #entries = new Map<string, { stream: TargetStream; targets: Target[] }>();

  /** Targets `start` .. `start + count − 1` of the plan's stream. */
  slice(plan: AttackPlan, start: number, count: number): Target[] {
    const key = JSON.stringify(plan);
    let entry = this.#entries.get(key);
    if (!entry) {
      // A few plans at a time: saturation's steps and cold_start's passes come one after another.
      if (this.#entries.size >= 3) this.#entries.delete(this.#entries.keys().next().value as string);
      entry = { stream: new TargetStream(plan), targets: [] };
      this.#entries.set(key, entry);
    }
    const missing = start + count - entry.targets.length;
    if (missing > 0) for (const target of entry.stream.take(missing)) entry.targets.push(target);
    return entry.targets.slice(start, start + count);
  }
}

/** What one cell carries from attack to attack: the requests its server has seen, for the simulation. */
interface CellTrace {
  startedMs: number;
  requests: SimRequest[];
}

/**
 * The requests a run sent, as the simulator reads them: the tool's own account of which list positions it
 * sent, spread evenly over its send window from `startMs` (ms since the cell's server started).
 */
function sentRequests(run: ToolRun, targets: Target[], startMs: number, seed: number): SimRequest[] | null {
  const sent = run.result.sent;
  if (sent === null) return null;
  const positions = sentPositions(sent, targets.length, seed);
  const spacingMs = ((run.result.durationS ?? run.wallS) * 1_000) / Math.max(1, positions.length);
  const times = new Float64Array(positions.length);
  for (let i = 0; i < positions.length; i++) times[i] = startMs + i * spacingMs;
  return fromTargets(
    Array.from(positions, (position) => targets[position] as Target),
    times,
  );
}

/** Two time-ordered request lists as one. */
function mergeByTime(a: SimRequest[], b: SimRequest[]): SimRequest[] {
  if (b.length === 0) return a;
  const merged: SimRequest[] = [];
  let j = 0;
  for (const request of a) {
    while (j < b.length && (b[j] as SimRequest).atMs <= request.atMs) merged.push(b[j++] as SimRequest);
    merged.push(request);
  }
  while (j < b.length) merged.push(b[j++] as SimRequest);
  return merged;
}

function tierRatio(before: ServerStatsSnapshot, after: ServerStatsSnapshot, names: string[]): number | null {
  for (const name of names) {
    const a = after.tiers[name];
    if (!a) continue;
    const b = before.tiers[name] ?? { hits: 0, misses: 0 };
    const hits = a.hits - b.hits;
    const lookups = hits + a.misses - b.misses;
    return lookups > 0 ? hits / lookups : null;
  }
  return null;
}

async function measureAttack(args: {
  context: RowContext;
  cell: Cell;
  attack: ExperimentAttack;
  plan: AttackPlan;
  server: ServerProcess;
  sql: postgres.Sql;
  rawPath: string;
  exp: Experiment;
  tool: Tool;
  detection: Detection;
  status: (line: string) => void;
  options: RunOptions;
  streams: StreamCache;
  trace: CellTrace;
}): Promise<{ row: CsvRow; result: NormalizedResult | null }> {
  const { context, cell, attack, plan, server, sql, rawPath, exp, tool, detection, status, options } = args;
  const { streams, trace } = args;
  const listFor = (durationS: number, closedRateRps: number | null = null): number => {
    const size = listSize(tool.capabilities.sends, plan, durationS, closedRateRps);
    if (typeof size === "string") throw new RangeError(`Cannot size ${tool.name}'s target list: ${size}`);
    return size;
  };
  const sinceCellMs = () => performance.now() - trace.startedMs;
  try {
    // The warm-up takes the stream's first segment, the measured run the next: never the same position.
    const warmupList = plan.warmupS > 0 ? listFor(plan.warmupS) : 0;
    let closedRateRps: number | null = null;
    if (plan.warmupS > 0) {
      const targets = streams.slice(plan, 0, warmupList);
      const startMs = sinceCellMs();
      const warmup = await runTool(tool, plan, {
        targets,
        durationS: plan.warmupS,
        workDir: rawPath,
        label: "warmup",
        detection,
        signal: options.signal,
      });
      for (const request of sentRequests(warmup, targets, startMs, plan.keys.seed) ?? []) {
        trace.requests.push(request);
      }
      const { completed, durationS } = warmup.result;
      if (plan.model.kind === "closed" && completed !== null && durationS) {
        closedRateRps = (CLOSED_RATE_MARGIN * completed) / durationS;
      }
    }
    const listTargets = listFor(plan.durationS, closedRateRps);
    const targets = streams.slice(plan, warmupList, listTargets);
    const before = await startStatsWindow(server);
    const usageBefore = processUsage(server.pid);
    const callsBefore = await pgStatementCalls(sql);
    const startedMs = performance.now();
    const ticker = setInterval(async () => {
      const now = await serverStats(server).catch(() => null);
      const elapsedS = (performance.now() - startedMs) / 1_000;
      if (now) {
        status(
          `cell ${cell.index} ${cell.strategy} r${cell.repeat} ${attack.name}: ${elapsedS.toFixed(0)}/${plan.durationS} s · server ${((now.requests - before.requests) / elapsedS).toFixed(0)} rps · cache errors ${now.cacheErrors - before.cacheErrors}`,
        );
      }
    }, 1_000);
    const duringAbort = new AbortController();
    const during = exp.during?.({
      serverUrl: server.url,
      signal: duringAbort.signal,
      keyspace: plan.keys.keyspace,
      nowMs: sinceCellMs,
    });
    const measuredStartMs = sinceCellMs();
    let run: ToolRun;
    try {
      run = await runTool(tool, plan, {
        targets,
        durationS: plan.durationS,
        workDir: rawPath,
        label: "measured",
        detection,
        signal: options.signal,
      });
    } finally {
      clearInterval(ticker);
      duringAbort.abort();
      status("");
    }
    const stale = during ? await during : null;
    const after = await serverStats(server);
    const usageAfter = processUsage(server.pid);
    const callsAfter = await pgStatementCalls(sql);
    const result = run.result;
    const serverRequests = after.requests - before.requests;
    const inFlight = plan.model.kind === "closed" ? plan.model.connections : plan.maxConnections;
    // pg_stat_statements deltas (not a reset: a reset would break another run's deltas) are the database's
    // own count, used when they agree with the server's.
    const { dbQueries, source: dbQueriesSource } = chooseDbQueries({
      server: after.dbQueries - before.dbQueries,
      probeQueries: after.probeDbQueries - before.probeDbQueries,
      pgDelta: callsBefore !== null && callsAfter !== null ? callsAfter - callsBefore : null,
      inFlight,
    });
    const reads = after.reads - before.reads;
    const hitRatio = reads > 0 ? 1 - (after.readDbQueries - before.readDbQueries) / reads : null;

    // The independent checks: which stream positions were sent, what the server saw, what a simulation
    // of the same key stream says the caches should have done.
    const sent = result.sent;
    const targetsSent = sent === null ? null : sentCount(sent);
    const reused = sent === null ? null : reusedPositions(sent, listTargets);
    const sentByTool = sentRequests(run, targets, measuredStartMs, plan.keys.seed);
    const measuredRequests = sentByTool && mergeByTime(sentByTool, stale?.probes ?? []);
    const sim =
      measuredRequests === null
        ? null
        : simulate(trace.requests, measuredRequests, {
            strategy: cell.strategy,
            cacheTtlMs: context.settings.cacheTtlMs,
            l1TtlMs: context.settings.l1TtlMs,
            l1MaxEntries: context.settings.l1MaxEntries,
            rows: exp.seed.rows,
            categoryOf: (id) => categoryOf(exp.seed, id),
          });
    for (const request of measuredRequests ?? []) trace.requests.push(request);
    // Distinct stream positions are independent draws: a re-sent position (a declared one, or a sampler's)
    // adds no key, so the expectation is for the positions, and re-sending is judged on its own.
    const distinctExpected =
      targetsSent === null || reused === null
        ? null
        : expectedDistinctKeys(plan, Math.round(targetsSent - reused));
    const distinctKeys = after.distinctKeys;
    const allowedReuseRatio =
      tool.capabilities.sends === "sampled"
        ? Math.max(attack.allowedReuseRatio ?? 0, SAMPLED_REUSE_TOLERANCE)
        : (attack.allowedReuseRatio ?? 0);
    const cacheErrors = after.cacheErrors - before.cacheErrors;
    const reasons = [
      judge(result, {
        maxErrorRatio: exp.maxErrorRatio ?? 0.01,
        serverRequests,
        inFlightAllowance: inFlight,
      }),
      targetsSent === null || reused === null || distinctExpected === null
        ? `${tool.name} did not say which targets it sent: the stream cannot be checked`
        : judgeStream({
            targetsSent,
            reused,
            allowedReuseRatio,
            distinctKeys,
            distinctKeysExpected: distinctExpected.mean,
            distinctKeysTolerance: distinctKeysTolerance(distinctExpected),
            hitRatio,
            hitRatioExpected: sim?.hitRatio ?? null,
            hitRatioTolerance:
              sent?.kind === "sampled"
                ? sampledHitRatioTolerance(distinctExpected.sd, reads)
                : HIT_RATIO_TOLERANCE,
            cacheErrors,
            faultsDeclared: exp.faults === true,
            staleChecksFailed: stale?.failed ?? 0,
          }),
    ].filter((reason) => reason !== null);
    const round = (value: number | null, digits = 4) =>
      value === null ? null : Math.round(value * 10 ** digits) / 10 ** digits;
    const row = buildRow(context, cell, attack, plan, {
      result,
      listTargets,
      targetsSent,
      targetReuseRatio: targetsSent && reused !== null ? round(reused / targetsSent, 6) : null,
      serverRequests,
      distinctKeys,
      distinctKeysExpected: distinctExpected === null ? null : Math.round(distinctExpected.mean),
      hitRatio: round(hitRatio),
      hitRatioExpected: round(sim?.hitRatio ?? null),
      hitRatioOptimal: round(sim?.optimalHitRatio ?? null),
      l1HitRatio: round(tierRatio(before, after, ["local", "l1"])),
      l2HitRatio: round(tierRatio(before, after, ["redis", "l2"])),
      dbQueries,
      dbQueriesSource,
      dbOffload: serverRequests > 0 ? round(1 - dbQueries / serverRequests) : null,
      cacheErrors,
      staleReads: stale ? stale.staleReads : null,
      staleChecks: stale ? stale.checks : null,
      staleChecksFailed: stale ? stale.failed : null,
      serverCpuS:
        usageBefore && usageAfter ? Math.round((usageAfter.cpuS - usageBefore.cpuS) * 100) / 100 : null,
      serverRssPeakMb: usageAfter?.rssPeakMb ?? null,
      loadgenCpuS: Number.isFinite(run.cpuS) ? Math.round(run.cpuS * 100) / 100 : null,
      invalidReason: reasons.length === 0 ? null : reasons.join("; "),
      rawPath,
    });
    return { row, result };
  } catch (error) {
    const reason = `tool failed: ${(error as Error).message.split("\n")[0]}`;
    return { row: buildRow(context, cell, attack, plan, failed(reason, rawPath)), result: null };
  }
}
