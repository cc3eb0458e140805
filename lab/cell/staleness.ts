/**
 * Staleness measured, not assumed: beside the load, a checker primes a row into every instance's cache,
 * PUTs it through one instance (the writers take turns), then reads it through every other instance (the
 * writer itself on one instance) until each returns the new version, timing how long each took. A window is
 * the time from the PUT's answer to the start of the first read that returned the new version (0 when the
 * first did). Reads poll every ~0.5 ms at first and back off to 20 ms, so a millisecond bus delay and a
 * two-second TTL are both resolved to a few percent.
 * The strategy's stated bound (local: its TTL; redis: none, its DEL lands before the PUT answers; two_tier:
 * the bus delay, tracking: the push's, each taken as none) plus the experiment's margin is what a window may not exceed: a reader still
 * stale then is counted past the bound and the row is invalid. Every request carries the server's probe
 * header, so the workload's counters and distinct keys never see it, and is handed to the simulation
 * (probes change the caches like any read).
 */
import type { StrategyName } from "../../server_config.ts";
import { PROBE_PREFIX } from "../../server_config.ts";
import type { DuringContext, DuringResult, ServerSettings } from "../plan/experiment_plan.ts";
import type { SimRequest } from "../sim/simulate.ts";

/** How long another instance may serve the old row after a write, as each strategy's header states it. */
export function stalenessBoundMs(
  strategy: StrategyName,
  settings: Pick<ServerSettings, "cacheTtlMs">,
): number {
  switch (strategy) {
    case "none":
    case "redis":
    case "two_tier":
    case "tracking":
      return 0;
    case "local":
      return settings.cacheTtlMs;
  }
}

export interface StalenessOptions {
  /** Added to the strategy's bound: timing noise, the bus delay under load. */
  marginMs: number;
  /** Checks running at once, each on its own row (default 2). */
  concurrency?: number;
  /** Pause between one check's end and the next's start (default 50 ms). */
  pauseMs?: number;
}

/** What one check's reader saw: its window, or null when it was still stale at the bound. */
interface ReaderOutcome {
  windowMs: number | null;
  reads: number;
  staleReads: number;
}

/** The version a PUT or GET answered; throws when it answered anything else (the check then fails). */
export async function versionOf(response: Response, what: string): Promise<number> {
  const body = (await response.json().catch(() => null)) as { version?: unknown } | null;
  if (response.status !== 200 || typeof body?.version !== "number") {
    throw new Error(`Cannot check a stale read: ${what} answered ${response.status} without a version`);
  }
  return body.version;
}

/**
 * The checker, as an experiment's `during` hook. Its result's `stalenessMs` holds one window per (check,
 * reader) that ended; `beyondBound` counts the readers past bound + margin: still stale when the checker
 * gave up (no window), or fresh only after it.
 */
export function stalenessChecker(
  options: StalenessOptions,
): (context: DuringContext) => Promise<DuringResult> {
  return async (context) => {
    const bound = stalenessBoundMs(context.strategy, context.settings);
    const limitMs = bound + options.marginMs;
    const urls = context.serverUrls;
    const probes: SimRequest[] = [];
    const windows: number[] = [];
    const busy = new Set<number>();
    const result = { staleReads: 0, checks: 0, failed: 0, reads: 0, beyondBound: 0 };
    let turn = 0;

    const read = async (id: number, instance: number): Promise<number> => {
      const response = await fetch(`${urls[instance]}${PROBE_PREFIX}/products/${id}`);
      probes.push({ op: "detail", id, atMs: context.nowMs(), probe: true, instance });
      return versionOf(response, "GET");
    };

    /** Reads `id` through `instance` until it shows `written`, or the bound has passed. */
    const follow = async (id: number, instance: number, written: number, ackMs: number) => {
      const outcome: ReaderOutcome = { windowMs: null, reads: 0, staleReads: 0 };
      while (true) {
        const startedMs = performance.now();
        const version = await read(id, instance);
        outcome.reads++;
        if (version >= written) {
          outcome.windowMs = outcome.staleReads === 0 ? 0 : startedMs - ackMs;
          return outcome;
        }
        outcome.staleReads++;
        const elapsedMs = performance.now() - ackMs;
        if (elapsedMs > limitMs || context.signal.aborted) return outcome;
        await Bun.sleep(Math.min(20, 0.5 + elapsedMs / 50));
      }
    };

    const check = async () => {
      let id = 1 + Math.floor(Math.random() * context.keyspace);
      while (busy.has(id)) id = 1 + Math.floor(Math.random() * context.keyspace);
      busy.add(id);
      const writer = turn++ % urls.length;
      const readers = urls.length === 1 ? [0] : urls.map((_, i) => i).filter((i) => i !== writer);
      try {
        // Every instance holds the row before the write: what a stale window is made of.
        for (let instance = 0; instance < urls.length; instance++) await read(id, instance);
        const put = await fetch(`${urls[writer]}${PROBE_PREFIX}/products/${id}`, {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ stock: Math.floor(Math.random() * 1_000) }),
        });
        const written = await versionOf(put, "PUT");
        const ackMs = performance.now();
        probes.push({ op: "write", id, atMs: context.nowMs(), probe: true, instance: writer });
        const outcomes = await Promise.all(readers.map((reader) => follow(id, reader, written, ackMs)));
        // A check cut short by the run's end says nothing about the bound.
        if (context.signal.aborted && outcomes.some((outcome) => outcome.windowMs === null)) return;
        result.checks++;
        for (const outcome of outcomes) {
          result.reads += outcome.reads;
          result.staleReads += outcome.staleReads;
          if (outcome.windowMs === null || outcome.windowMs > limitMs) result.beyondBound++;
          if (outcome.windowMs !== null) windows.push(outcome.windowMs);
        }
      } catch {
        result.failed++;
      } finally {
        busy.delete(id);
      }
    };

    const loop = async () => {
      while (!context.signal.aborted) {
        await check();
        await Bun.sleep(options.pauseMs ?? 50);
      }
    };
    await Promise.all(Array.from({ length: options.concurrency ?? 2 }, loop));
    probes.sort((a, b) => a.atMs - b.atMs);
    return {
      staleReads: result.staleReads,
      checks: result.checks,
      failed: result.failed,
      probes,
      reads: result.reads,
      stalenessMs: windows.sort((a, b) => a - b),
      beyondBound: result.beyondBound,
      boundMs: bound,
      marginMs: options.marginMs,
    };
  };
}
