/**
 * What each request cost the server, by what answered it (process memory, Redis, a database load of its
 * own or one it joined, a write),
 * and what each Redis command cost, timed where it happens: from a /products handler starting to its
 * response being ready, into the allocation-free histograms of load_timer.ts. Every request is counted by
 * outcome; one in TIER_TIMING (4 by default) is timed, chosen by arrival order, because two clock reads are
 * most of what the timing costs a local hit (docs/benchmarks.md, ratio T). TIER_TIMING=0 turns it off, for the
 * benchmark that prices it. /stats reports it and the lab's model reads its means as the tiers' costs
 * (docs/methodology.md "Tier costs"). GET /metrics observes the same outcomes when on, every request timed.
 */
import type { ServerConfig } from "../server_config.ts";
import type { CacheStrategy, Loader } from "../strategies/_strategy.ts";
import { DbShedError } from "./db_gate.ts";
import { LoadHistogram, type LoadTimes } from "./load_timer.ts";

/**
 * What answered a request: process memory, Redis, a database load it started (`miss`) or one another request
 * had started that it waited on (`join`), a write, or no answer (shed, an error, invalid input).
 */
export const OUTCOMES = ["l1_hit", "l2_hit", "miss", "join", "write", "shed", "error", "invalid"] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * What one request's cache lookups did, filled in by `lookup`: a request with several (a list page reads
 * its category's generation first) is a miss if any loaded, else a join if any waited on another's load,
 * else an L2 hit if any left process memory.
 */
export interface Lookups {
  loaded: boolean;
  left: boolean;
  joined?: boolean;
  /** A lookup that left process memory, still to be settled: its key's loads, and how many had finished. */
  waiting?: Waiting | undefined;
  finishedBefore?: number;
}

/** The requests that left process memory for a key and are not answered yet, and that key's loads finished. */
interface Waiting {
  key: string;
  requests: number;
  finished: number;
}

/** A lookup through the cache, noting what it did into `lookups` (none when nothing times requests). */
export type Lookup = (
  cache: CacheStrategy,
  lookups: Lookups | undefined,
  key: string,
  load: Loader,
) => string | Promise<string | undefined>;

/**
 * Wraps a handler to time it; the handler gets the request's Lookups to fill in. The wrapper is a bound
 * function: Elysia reads nothing from its source (an arrow passing the whole context on made it build every
 * part of every request, 40% of a local hit), so the route parses what it needs itself.
 */
export type Timed = <C, R extends Response | Promise<Response>>(
  route: string,
  handler: (context: C, lookups?: Lookups) => R,
  write?: boolean,
) => (context: C) => R;

/** Told of each timed request too (server/metrics.ts's Prometheus histogram). */
export type OnRequest = (labels: RequestLabels, ms: number) => void;
export interface RequestLabels {
  method: string;
  route: string;
  outcome: Outcome;
}

/** The Redis commands a strategy sends on the request path (not PING, which /ready sends). */
type Sent = "get" | "eval" | "evalsha" | "publish";
type Commands = { [K in Sent]?: (...args: never[]) => Promise<unknown> };

const plainLookup: Lookup = (cache, _lookups, key, load) => cache.getOrLoad(key, load);

/**
 * The server's request and Redis timing. With TIER_TIMING=0 and no `onRequest` (METRICS off), lookups go
 * straight to the cache and handlers are registered as they are: nothing is timed.
 */
export function createTierTimer(
  config: Pick<ServerConfig, "tierTiming" | "strategy">,
  onRequest?: OnRequest | undefined,
) {
  const { strategy } = config;
  const enabled = config.tierTiming > 0;
  // Prometheus histograms count what they observe, so with METRICS on every request is timed.
  const every = onRequest === undefined ? config.tierTiming : 1;
  let requests = newRequestHistograms();
  let counts = newCounts();
  let commands = new LoadHistogram();
  let arrivals = 0;
  if (!enabled && onRequest === undefined) {
    return {
      lookup: plainLookup,
      timed: ((_route, handler) => handler) as Timed,
      timeCommands: <C>(sent: C): C => sent,
      snapshot,
      reset,
    };
  }
  // local and none have no second tier: an answer that is not a hit waited on a load, its own (the loader
  // runs in getOrLoad's call) or one it joined.
  const inProcessOnly = strategy === "local" || strategy === "none";
  // A Redis strategy's loader runs after its GET, so a request that left process memory and did not load
  // joined a load if one of its key finished while it waited (a Redis hit sees none: the fill follows the load).
  const waiting = new Map<string, Waiting>();
  function settle(lookups: Lookups): void {
    const wait = lookups.waiting;
    if (wait === undefined) return;
    lookups.waiting = undefined;
    if (!lookups.loaded && wait.finished > (lookups.finishedBefore as number)) lookups.joined = true;
    if (--wait.requests === 0) waiting.delete(wait.key);
  }
  const lookup: Lookup = (cache, lookups, key, load) => {
    if (lookups === undefined) return cache.getOrLoad(key, load);
    if (inProcessOnly) {
      const found = cache.getOrLoad(key, () => {
        lookups.loaded = true;
        return load();
      });
      if (typeof found !== "string" && !lookups.loaded) lookups.joined = true;
      return found;
    }
    settle(lookups); // a list page's first lookup (its category's generation) has been answered
    const found = cache.getOrLoad(key, () => {
      lookups.loaded = true;
      return load().finally(() => {
        const wait = waiting.get(key);
        if (wait !== undefined) wait.finished++;
      });
    });
    if (typeof found !== "string") {
      lookups.left = true;
      let wait = waiting.get(key);
      if (wait === undefined) {
        wait = { key, requests: 0, finished: 0 };
        waiting.set(key, wait);
      }
      wait.requests++;
      lookups.waiting = wait;
      lookups.finishedBefore = wait.finished;
    }
    return found;
  };

  function timed<C, R extends Response | Promise<Response>>(
    route: string,
    handler: (context: C, lookups?: Lookups) => R,
    write = false,
  ): (context: C) => R {
    const method = write ? "PUT" : "GET";
    // One labels object per outcome, made once: none is allocated per request.
    const labels = Object.fromEntries(
      OUTCOMES.map((outcome) => [outcome, { method, route, outcome }]),
    ) as Record<Outcome, RequestLabels>;
    /** Counts the request; times it when it was sampled (`startedMs` is -1 when it was not). */
    const record = (outcome: Outcome, startedMs: number) => {
      counts[outcome]++;
      if (startedMs < 0) return;
      const ms = performance.now() - startedMs;
      if (enabled) requests[outcome].record(ms);
      if (onRequest !== undefined) onRequest(labels[outcome], ms);
    };
    function wrapped(context: C): R {
      const startedMs = ++arrivals % every === 0 ? performance.now() : -1;
      const lookups: Lookups = { loaded: false, left: false };
      const answer = handler(context, lookups);
      if (!(answer instanceof Promise)) {
        record(outcomeOf(answer, lookups, write), startedMs);
        return answer;
      }
      // A rejection goes on to Elysia's onError, which answers a shed query 503 and anything else 500.
      return answer.then(
        (response: Response) => {
          settle(lookups);
          record(outcomeOf(response, lookups, write), startedMs);
          return response;
        },
        (error: unknown) => {
          settle(lookups);
          record(error instanceof DbShedError ? "shed" : "error", startedMs);
          throw error;
        },
      ) as R;
    }
    return wrapped.bind(null);
  }

  /** The adapter with its request-path commands timed (a failed command is no Redis time, as a failed load). */
  function timeCommands<C>(sent: C): C {
    if (!enabled) return sent;
    const timedCommands = { ...sent } as C & Commands;
    for (const name of ["get", "eval", "evalsha", "publish"] as const) {
      const send = (sent as Commands)[name];
      if (send === undefined) continue;
      timedCommands[name] = (...args: never[]) => {
        const startedMs = performance.now();
        return send(...args).then((reply) => {
          commands.record(performance.now() - startedMs);
          return reply;
        });
      };
    }
    return timedCommands;
  }

  /** Every request's outcome counted (`requestCounts`), the sampled ones' times (`requestMs`), one in `requestTimedEvery`. */
  function snapshot(): TierSnapshot {
    const requestMs = Object.fromEntries(
      OUTCOMES.map((outcome) => [outcome, requests[outcome].snapshot()]),
    ) as Record<Outcome, LoadTimes>;
    return {
      requestCounts: enabled ? { ...counts } : newCounts(),
      requestMs,
      requestTimedEvery: enabled ? every : 0,
      redisCommandMs: commands.snapshot(),
    };
  }

  function reset(): void {
    requests = newRequestHistograms();
    counts = newCounts();
    commands = new LoadHistogram();
  }

  return { lookup, timed: timed as Timed, timeCommands, snapshot, reset };
}

export type TierTimer = ReturnType<typeof createTierTimer>;

export interface TierSnapshot {
  requestCounts: Record<Outcome, number>;
  requestMs: Record<Outcome, LoadTimes>;
  requestTimedEvery: number;
  redisCommandMs: LoadTimes;
}

function newCounts(): Record<Outcome, number> {
  return Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0])) as Record<Outcome, number>;
}

function newRequestHistograms(): Record<Outcome, LoadHistogram> {
  return Object.fromEntries(OUTCOMES.map((outcome) => [outcome, new LoadHistogram()])) as Record<
    Outcome,
    LoadHistogram
  >;
}

function outcomeOf(response: Response, lookups: Lookups, write: boolean): Outcome {
  const { status } = response;
  if (status === 503) return "shed";
  if (status >= 500) return "error";
  if (status >= 400 && status !== 404) return "invalid";
  if (write) return "write";
  if (lookups.loaded) return "miss";
  return lookups.joined ? "join" : lookups.left ? "l2_hit" : "l1_hit";
}
