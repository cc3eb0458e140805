/**
 * One tool-agnostic attack plan, as plain typed data, and the normalized result every tool's output is
 * turned into. Units are in the names; a value a tool does not provide is `null`, never 0.
 */

import type { TraceFormat } from "../trace/trace.ts";

export const TOOL_NAMES = ["oha", "vegeta", "k6", "wrk", "autocannon"] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/**
 * open: a fixed arrival rate, whatever the latency (latency questions; coordinated-omission safe).
 * ramping: arrival-rate stages, each ramping linearly from the previous rate to `targetRps`.
 * closed: a fixed number of connections, each sending its next request when the last one returns
 * (capacity questions).
 */
export type LoadModel =
  | { kind: "open"; rateRps: number }
  | { kind: "ramping"; startRps: number; stages: { targetRps: number; durationS: number }[] }
  | { kind: "closed"; connections: number };

export type HttpMethod = "GET" | "PUT" | "POST" | "DELETE";

/** A uniform integer in min..max (inclusive), drawn per target from the plan's seed. */
export interface IntRange {
  min: number;
  max: number;
}

/**
 * One kind of request in the mix. `path` and `body` may hold `{id}` (a key drawn from the plan's key
 * distribution) and `{name}` for each entry of `vars` (a uniform draw), e.g.
 * `/products?category={category}&page={page}&size=20` with `vars: { category: {min: 1, max: 50}, … }`.
 */
export interface RequestTemplate {
  name: string;
  /** Relative weight in the mix (e.g. 80 and 20). */
  weight: number;
  method: HttpMethod;
  path: string;
  /** JSON body template; sent with content-type: application/json. */
  body?: string;
  vars?: Record<string, IntRange>;
}

export type KeyDistribution =
  | { kind: "uniform" }
  /** P(rank k) ∝ 1 / k^exponent; ranks are mapped to ids by a seeded permutation. */
  | { kind: "zipf"; exponent: number }
  /** `hotShare` of the requests go to a `hotFraction` of the keyspace (e.g. 0.9 to 0.1). */
  | { kind: "hotspot"; hotFraction: number; hotShare: number }
  /** 1, 2, 3, … wrapping at the keyspace: every key once before any twice (cold-start passes). */
  | { kind: "sequential" }
  /**
   * A user's trace in its own order (lab/trace/): its i-th distinct key is product id i + 1, a read is the
   * plan's GET template, a write or delete its PUT template. Never replayed: a list ends with the trace.
   */
  | TraceKeys;

/** Where a trace plan's requests come from, as `bun run trace` and lab/trace/read.ts take it. */
export interface TraceKeys {
  kind: "trace";
  file: string;
  format?: TraceFormat;
  /** The delimited format's column spec (time-col=…,key-col=…). */
  columns?: string;
  /** access-log: the regex whose first capture is the key. */
  route?: string;
  skipBadLines?: boolean;
  /**
   * `fixed` (default): the attack's own rate, in the trace's order. `recorded`: the trace's own per-second
   * rates (from its timestamps) times `speed`, as a ramping arrival rate (k6).
   */
  pace?: "fixed" | "recorded";
  /** With `recorded`: how much faster than recorded (2: twice the rate, half the time). Default 1. */
  speed?: number;
}

export interface KeyPlan {
  distribution: KeyDistribution;
  /** Keys are ids 1..keyspace. */
  keyspace: number;
  seed: number;
}

export interface AttackPlan {
  /** Short name, used in file names and the CSV `attack` column. */
  name: string;
  /** Origin of the server under test, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /**
   * Several server instances (the first is `baseUrl`): stream position p goes to instance p mod N, the way a
   * round-robin balancer deals requests in arrival order, so the same stream reaches the same instance for
   * every strategy. Absent: one instance.
   */
  instanceUrls?: string[];
  /** Load generators on hosts of their own (ExperimentAttack.loadgenHosts); absent or 0: one, beside the server. */
  loadgenHosts?: number;
  model: LoadModel;
  /** Measured duration (ramping: the sum of its stages). */
  durationS: number;
  /** Run before the measured attack with the same plan and thrown away. */
  warmupS: number;
  /** Per-request timeout: a slower response is an error, not a latency sample. */
  timeoutS: number;
  headers: Record<string, string>;
  requests: RequestTemplate[];
  keys: KeyPlan;
  /**
   * How many targets `generateTargets(plan)` and `bun run attack --targets` hand a tool. The experiment
   * runner sizes each run's list from the model instead (lab/plan/segments.ts).
   */
  targetCount: number;
  /**
   * The share of a measured run's requests that may re-send a stream position (default 0; a sampling tool
   * such as oha: SAMPLED_REUSE_TOLERANCE in lab/plan/segments.ts). Declared by the experiment, never assumed.
   */
  allowedReuseRatio?: number;
  /**
   * Closed model: the highest rate its target lists are sized for (default CLOSED_RATE_BOUND_RPS in
   * lab/plan/segments.ts); a run faster than that wraps its list, and its row says so.
   */
  maxRateRps?: number;
  /**
   * Open/ramping models: the most connections (oha `-c`, k6 maxVUs) the tool may open to hold the rate.
   * Closed model: ignored (the model's own `connections`).
   */
  maxConnections: number;
}

/** One pre-generated request, in the order the plan produced it. */
export interface Target {
  template: string;
  method: HttpMethod;
  /** Absolute URL. */
  url: string;
  /** Which of the plan's instances `url` names (0 with one instance). */
  instance: number;
  /** The key drawn for `{id}`, or null when the template has none. */
  key: number | null;
  body: string | null;
}

export interface LatencyMs {
  min: number | null;
  mean: number | null;
  p50: number | null;
  p90: number | null;
  p95: number | null;
  p99: number | null;
  p99_9: number | null;
  max: number | null;
}

/** Which positions of the list handed to a tool a run sent, as the tool itself tells. */
export type SentTargets =
  /** In list order from the first, wrapping at the end (vegeta, k6). */
  | { kind: "prefix"; count: number }
  /** Stripe k (targets k, k+S, k+2S, … of S stripes, wrapping within the stripe) sent counts[k] (wrk, autocannon). */
  | { kind: "stripes"; counts: number[] }
  /** `count` lines drawn uniformly with replacement (oha); which ones is not known. */
  | { kind: "sampled"; count: number };

/** One second of a run: the requests that STARTED in that second (Unix epoch second, integer). */
export interface TimelineSecond {
  epochS: number;
  /** Requests started in this second. */
  sent: number;
  /** Of those, responses with a 2xx status. */
  ok: number;
  /** Of those, transport errors plus non-2xx responses; null when the tool's per-request output cannot tell (say so in `source`). */
  errors: number | null;
  /** Nearest-rank percentiles of the latencies of the requests started in this second (null when none). */
  p50Ms: number | null;
  p99Ms: number | null;
}

/**
 * A run second by second, from the tool's own per-request output. Epoch seconds, so a caller can align it
 * with fault events and with server counters polled by wall clock.
 */
export interface Timeline {
  /** Where the seconds come from, e.g. "vegeta per-request results", "oha --db-url (answered requests only)". */
  source: string;
  /** Ascending, no gaps between the first and last second (empty seconds have sent 0). */
  seconds: TimelineSecond[];
}

/** A tool's result in one set of units; numbers are exactly the tool's own, converted. */
export interface NormalizedResult {
  tool: ToolName;
  toolVersion: string;
  model: LoadModel["kind"];
  /** Open/ramping: the rate asked for (ramping: the mean over the stages); closed: null. */
  offeredRps: number | null;
  /** Requests the tool started (or scheduled), when it says. */
  requests: number | null;
  /** Requests that got an HTTP response (any status). */
  completed: number | null;
  /** Responses with a 2xx status. */
  ok: number | null;
  /** HTTP status → count; null when the tool cannot count statuses. */
  statusCounts: Record<string, number> | null;
  /** Transport error message → count (timeouts, resets, refused). */
  errorCounts: Record<string, number> | null;
  /** Open models: iterations the tool dropped or requests aborted at the deadline. */
  droppedOrAborted: number | null;
  /** completed ÷ durationS (the send window, not the drain after it). */
  achievedRps: number | null;
  /** ok ÷ durationS. */
  okRps: number | null;
  latencyMs: LatencyMs;
  bytesIn: number | null;
  /** The send window: from the first request to the last one sent (open models: the planned duration). */
  durationS: number | null;
  /** After the send window, how long the tool waited for the last responses; null when it cannot tell. */
  drainS: number | null;
  /** Which targets were sent; null when the tool cannot tell. */
  sent: SentTargets | null;
  /** Per second of the run, by start time; null when the tool has no per-request output (its capabilities say so). */
  timeline: Timeline | null;
  /**
   * Latency of the 2xx responses alone (nearest rank over per-request results), when the tool has them:
   * with load shedding, fast 503s would pull the overall percentiles down. Absent: the tool cannot tell.
   */
  okLatencyMs?: { p50: number | null; p99: number | null } | null;
}
