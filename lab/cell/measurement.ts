/**
 * What a measured attack is made of, step by step (lab/cell/measure.ts runs them): what the run shares, the
 * attack and its cell, what the warm-up leaves, what the measured run counts, and what the checks find.
 */
import type { Cluster, Redis } from "ioredis";
import type postgres from "postgres";
import type { CellNetwork, FaultWindow } from "../faults/network.ts";
import type { Host } from "../isolation/netns.ts";
import type { ToolRun } from "../load/run_attack.ts";
import type { AttackPlan, SentTargets, Target } from "../plan/attack_plan.ts";
import type { DuringResult, ExperimentAttack } from "../plan/experiment_plan.ts";
import type { SettledCell } from "../plan/settled_cells.ts";
import type { RowContext } from "../results/cell_row.ts";
import type { FaultOutcome } from "../results/timeline.ts";
import type { SimResult } from "../sim/simulate.ts";
import type { CellTrace, StreamCache } from "./cell_trace.ts";
import type { RedisMemoryLimit } from "./constraints.ts";
import type { GroupStats, groupUsage } from "./instances.ts";
import type { MissCost } from "./miss_cost.ts";
import type { PathRtt } from "./path_rtt.ts";
import type { StatsSample } from "./poll.ts";
import type { RedisFootprint } from "./redis_footprint.ts";
import type { ServerProcess } from "./server_process.ts";
import type { ServerTiming } from "./server_timing.ts";
import type { ServiceCpu } from "./service_cpu.ts";

/** What every measured attack of a run shares. */
export interface MeasureRun {
  /** The run's row context: the experiment (overrides applied), the tool, its detection, the settings. */
  context: RowContext;
  sql: postgres.Sql;
  /**
   * The lab's own Redis client (not the server's), or its Cluster client on a `--redis-cluster` run: the
   * eviction count under a cell's maxmemory, Redis's CPU, what it holds.
   */
  redis: Redis | Cluster;
  streams: StreamCache;
  /** The live status line. */
  status: (line: string) => void;
  /** Progress lines (the runner's log). */
  log?: (line: string) => void;
  /** Aborting kills the tool (the runner's Ctrl-C). */
  signal?: AbortSignal;
  /** Where each measured run's seconds go (results/<experiment>.timeline.csv). */
  timelinePath: string;
}

/** One attack of one cell, on the cell's server. */
export interface MeasureTarget {
  cell: SettledCell;
  attack: ExperimentAttack;
  plan: AttackPlan;
  /** The cell's server instances (one, or the attack's `instances`), in the order of plan.instanceUrls. */
  servers: ServerProcess[];
  trace: CellTrace;
  rawPath: string;
  /** The cell's proxies: the attack's distance is already on them; its faults are run here. */
  network: CellNetwork;
  /** The `maxmemory` the lab's Redis runs under in this cell (set for it, or found), or null: unlimited. */
  memory: Pick<RedisMemoryLimit, "describe"> | null;
  /** The load-generator hosts of this attack (its `loadgenHosts`), or none: the tool runs here. */
  loadgenHosts: Host[];
  /** How the row describes where the server and the load ran. */
  topology: string;
  /**
   * With `--prometheus`: waits for Prometheus to scrape every server from now on and returns the latest of
   * those scrapes' times (Unix seconds), or null when it did not within its timeout.
   */
  scraped?: () => Promise<number | null>;
}

export interface WarmedUp {
  /** The stream positions the warm-up took: the measured run's segment starts after them. */
  warmupList: number;
  /** A closed model's rate bound for sizing the measured list, from the warm-up's completions; or null. */
  closedRateRps: number | null;
  /** What the warm-up sent of the targets it got (their count, and the tool's account); null: no warm-up. */
  warmupSent?: { targets: number; sent: SentTargets | null } | null;
  /** The server's request count before the warm-up, and the tool's account of it; null: not known. */
  warmupCounted?: { requestsBefore: number; completed: number; sent: number } | null;
}

/** A warm-up's requests: the server's count, and the tool's answered and sent (`sentCount` of its account). */
export interface WarmupCount {
  server: number;
  completed: number;
  sent: number;
}

/** What the measured run counted: the tool's run, and the server's, the database's and Redis's deltas. */
export interface Counted {
  run: ToolRun;
  targets: Target[];
  listTargets: number;
  /** When the measured run started: ms since the cell's server started, and the Unix epoch ms. */
  measuredStartMs: number;
  startEpochMs: number;
  beforeEach: GroupStats;
  afterEach: GroupStats;
  usageBefore: ReturnType<typeof groupUsage>;
  usageAfter: ReturnType<typeof groupUsage>;
  redisEvictedKeys: number | null;
  /** What the lab's Redis held after the run (redis, two_tier and tracking), else null. */
  redisFootprint: RedisFootprint | null;
  /** With `--prometheus`: the scrapes that bracket the measured run (Unix seconds), or null. */
  metricsWindow: { fromS: number; toS: number } | null;
  samples: StatsSample[];
  windows: FaultWindow[];
  stale: DuringResult | null;
  serverRequests: number;
  /** The warm-up's counts (the simulation starts from what it sent), or null: no warm-up, or not known. */
  warmupCount: WarmupCount | null;
  reads: number;
  hitRatio: number | null;
  cacheErrors: number;
  inFlight: number;
  dbQueries: number;
  dbQueriesSource: string;
  /** The server's timing of its loads and Postgres's of the same statements (lab/cell/miss_cost.ts). */
  missCost: MissCost;
  /** What each tier cost, as the server timed it (lab/cell/server_timing.ts). */
  serverTiming: ServerTiming;
  /** Postgres's and Redis's CPU seconds so far, just before and just after the run (lab/cell/service_cpu.ts). */
  serviceCpu: { before: ServiceCpu; after: ServiceCpu };
  /** The round trips through the cell's proxies as delivered, measured beside the load (lab/cell/path_rtt.ts). */
  pathRtt: PathRtt;
}

/** The independent checks: which stream positions were sent, and what the caches should have done. */
export interface StreamChecks {
  targetsSent: number | null;
  reused: number | null;
  distinctExpected: { mean: number; sd: number; tolerance: number } | null;
  sim: SimResult | null;
}

export type Measurement = Counted &
  StreamChecks & { timelineRows: number; outcomes: FaultOutcome[]; reasons: string[] };
