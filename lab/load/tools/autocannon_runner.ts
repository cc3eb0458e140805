/**
 * Runs autocannon 9 through its JS API, which (unlike its CLI) can send a list of different requests, and
 * writes the result with per-connection and per-error counts to a JSON file.
 *
 *   bun lab/load/tools/autocannon_runner.ts config.json result.json
 *
 * Connection i of C replays targets i, i+C, i+2C, … and wraps to its first one: a stripe each, not the
 * whole list each (autocannon's `requests` default), which would send every key C times in a row and
 * flatter a cache. No rate option is ever set, so autocannon's latency correction (which back-fills
 * samples only with a rate, FACTS pitfall 16) stays off; version 9.0.0 rejects
 * `ignoreCoordinatedOmission` without a rate.
 *
 * Timeline: every request a connection writes (its `request` event) is counted in the second it started.
 * A sound response's start is now − its responseTime (autocannon's own float-ms timing from the write),
 * its latency that responseTime. One request at a time is outstanding per connection (no pipelining), so
 * an error belongs to the connection's newest request (a timeout: the one before, since autocannon writes
 * the next request before it emits `timeout`): it counts with that request's start and no latency, as
 * autocannon's latency has none. A request still outstanding when a later one is answered was lost
 * (counted as an error, no latency); one outstanding at the cut-off is only sent. A stale response (see
 * ConnectionCounts) is placed at its request's write, with no latency.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Timeline } from "../../plan/attack_plan.ts";
import { TimelineBuilder } from "../request_timeline.ts";

export const TIMELINE_SOURCE =
  "autocannon per-request events in lab/load/tools/autocannon_runner.ts: responses at now − responseTime " +
  "(none while a connection's timings are stale), errors and lost requests at their request's write, " +
  "without latency";

export interface RunnerRequest {
  method: string;
  /** Path and query, e.g. `/products/7`. */
  path: string;
  body: string | null;
}

export interface RunnerConfig {
  /** Origin, e.g. `http://127.0.0.1:3000`. */
  url: string;
  connections: number;
  durationS: number;
  timeoutS: number;
  headers: Record<string, string>;
  /** The targets in plan order. */
  requests: RunnerRequest[];
}

export interface RunnerOutput {
  autocannonVersion: string;
  config: Omit<RunnerConfig, "requests"> & { requestCount: number };
  /** autocannon's own result object, unchanged. */
  result: Record<string, unknown>;
  /** Error code (or message) → count; timeouts are "request timed out". Sums to `result.errors`. */
  errorCounts: Record<string, number>;
  /** Per connection, in stripe order. */
  connections: ConnectionCounts[];
  /** Every request written, in the second it started (see the header). */
  timeline: Timeline;
}

/**
 * autocannon 9.0.0 (lib/httpClient.js) reconnects after a socket error or a server-side close without
 * clearing its queue of sent requests. A request in flight when the server closes the connection is then
 * neither a response nor an error (`lost`), and every later response on that connection is timed from
 * the start of an older request (`staleResponses`): observed p50 61 ms, p99 650 ms for a server that
 * always answers in 20 ms (testdata/autocannon-9.0.0-drops.*).
 */
export interface ConnectionCounts {
  requests: number;
  responses: number;
  /** Socket errors and timeouts, as autocannon counts them. */
  errors: number;
  lost: number;
  staleResponses: number;
}

interface AutocannonClient {
  setRequests(requests: object[]): void;
  on(event: "response", listener: (status: number, bytes: number, responseTimeMs: number) => void): void;
  on(event: "connError", listener: (error: Error & { code?: string }) => void): void;
  on(event: "timeout" | "request", listener: () => void): void;
}

type Autocannon = (
  options: Record<string, unknown>,
  callback: (error: Error | null, result: Record<string, unknown>) => void,
) => unknown;

const require = createRequire(import.meta.url);

/** Connection i's share of the targets: i, i+C, i+2C, … */
export function stripe<T>(items: T[], connections: number, index: number): T[] {
  const share: T[] = [];
  for (let i = index; i < items.length; i += connections) share.push(items[i] as T);
  return share;
}

export async function runAutocannon(config: RunnerConfig): Promise<RunnerOutput> {
  if (config.requests.length < config.connections) {
    throw new RangeError(
      `Cannot run autocannon: fewer targets than connections: received ${config.requests.length} < ${config.connections}`,
    );
  }
  const autocannon = require("autocannon") as Autocannon;
  const version = (require("autocannon/package.json") as { version: string }).version;
  const toRequest = (request: RunnerRequest) =>
    request.body === null
      ? { method: request.method, path: request.path }
      : {
          method: request.method,
          path: request.path,
          body: request.body,
          headers: { ...config.headers, "content-type": "application/json" },
        };
  const stripes = Array.from({ length: config.connections }, (_, i) =>
    stripe(config.requests, config.connections, i).map(toRequest),
  );
  const errorCounts: Record<string, number> = {};
  const connections: ConnectionCounts[] = stripes.map(() => ({
    requests: 0,
    responses: 0,
    errors: 0,
    lost: 0,
    staleResponses: 0,
  }));
  const timeline = new TimelineBuilder();
  const nowMs = () => performance.timeOrigin + performance.now();
  /** Per connection: the write times (epoch ms) of its requests not yet answered or failed, oldest first. */
  const outstanding: number[][] = stripes.map(() => []);
  /** Requests older than the one an event belongs to were lost: sent, errors, no latency. */
  const settleLost = (pending: number[]): void => {
    for (const startMs of pending) timeline.add({ startMs, latencyMs: null, ok: false, error: true });
    pending.length = 0;
  };
  let next = 0;
  const setupClient = (client: AutocannonClient): void => {
    // Clients are built one after the other, before any request is sent.
    const index = next++;
    const counts = connections[index] as ConnectionCounts;
    const pending = outstanding[index] as number[];
    let stale = false;
    client.setRequests(stripes[index] as object[]);
    client.on("request", () => {
      counts.requests++;
      pending.push(nowMs());
    });
    client.on("response", (status, _bytes, responseTimeMs) => {
      // Emitted before the next request: only this response's request should be outstanding.
      counts.lost = Math.max(counts.lost, counts.requests - counts.responses - counts.errors - 1);
      if (stale || counts.lost > 0) {
        stale = true;
        counts.staleResponses++;
      }
      counts.responses++;
      const writtenMs = pending.pop() ?? nowMs();
      settleLost(pending);
      const ok = status >= 200 && status < 300;
      timeline.add(
        stale
          ? { startMs: writtenMs, latencyMs: null, ok, error: !ok }
          : { startMs: nowMs() - responseTimeMs, latencyMs: responseTimeMs, ok, error: !ok },
      );
    });
    client.on("connError", (error) => {
      counts.errors++;
      stale = true;
      const key = error.code ?? error.message;
      errorCounts[key] = (errorCounts[key] ?? 0) + 1;
      // Emitted before autocannon reconnects and writes the next request: the newest one failed.
      const failedMs = pending.pop() ?? nowMs();
      settleLost(pending);
      timeline.add({ startMs: failedMs, latencyMs: null, ok: false, error: true });
    });
    client.on("timeout", () => {
      // A timeout destroys the connection and clears its queue: the latency stays sound.
      counts.errors++;
      errorCounts["request timed out"] = (errorCounts["request timed out"] ?? 0) + 1;
      // autocannon has already reconnected and written the next request: the one before it timed out.
      const nextMs = pending.pop();
      const failedMs = pending.pop() ?? nowMs();
      settleLost(pending);
      if (nextMs !== undefined) pending.push(nextMs);
      timeline.add({ startMs: failedMs, latencyMs: null, ok: false, error: true });
    });
  };
  const result = await new Promise<Record<string, unknown>>((resolve, reject) => {
    autocannon(
      {
        url: config.url,
        connections: config.connections,
        duration: config.durationS,
        timeout: config.timeoutS,
        headers: config.headers,
        // Each client clones the options and encodes every request in them: keep this list to one entry
        // and hand each client its stripe in setupClient.
        requests: [stripes[0]?.[0]],
        setupClient,
      },
      (error, output) => (error ? reject(error) : resolve(output)),
    );
  });
  connections.forEach((counts, i) => {
    // One request per connection is in flight at the cut-off; any more vanished without a trace.
    counts.lost = Math.max(counts.lost, counts.requests - counts.responses - counts.errors - 1);
    const pending = outstanding[i] as number[];
    const inFlightMs = pending.pop();
    settleLost(pending);
    if (inFlightMs !== undefined)
      timeline.add({ startMs: inFlightMs, latencyMs: null, ok: false, error: false });
  });
  const { requests, ...rest } = config;
  return {
    autocannonVersion: version,
    config: { ...rest, requestCount: requests.length },
    result,
    errorCounts,
    connections,
    timeline: timeline.build({ source: TIMELINE_SOURCE, errors: true }),
  };
}

async function main(args: string[]): Promise<number> {
  const [configPath, resultPath] = args;
  if (configPath === undefined || resultPath === undefined || args.length !== 2) {
    console.error("Usage: bun lab/load/tools/autocannon_runner.ts <config.json> <result.json>");
    return 2;
  }
  const config = JSON.parse(readFileSync(configPath, "utf8")) as RunnerConfig;
  const output = await runAutocannon(config);
  writeFileSync(resultPath, `${JSON.stringify(output, null, 1)}\n`);
  return 0;
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)));
