/**
 * Shedding on event-loop delay, the way production Node servers do (Fastify's under-pressure): when the CPU,
 * not the pool, is the limit, requests wait in the kernel and in Bun before any handler runs, where no
 * database gate sees them. A timer due every SAMPLE_MS measures how late it fires; while the last two samples
 * were over MAX_EVENT_LOOP_DELAY_MS the /products handlers answer 503 with Retry-After at once, which costs
 * far less than serving, so the backlog drains. One late sample is a pause (a collection, the VM taking the
 * core away) the loop recovers from by itself: shedding on it turned away a few hundred requests of a
 * server at a quarter of its capacity (bench/hot_path.ts, ratio S). Two in a row is a backlog. Timer drift,
 * not perf_hooks: on Bun 1.4.4 monitorEventLoopDelay missed a 200 ms block and eventLoopUtilization() reads 0.
 */

/** How often the delay is sampled: a wake-up costs an idle process about 0.1 ms (1% of a core every 10 ms). */
export const SAMPLE_MS = 20;

export interface LoopDelayStats {
  /** How late the last sample fired, ms (null when nothing is sampled: MAX_EVENT_LOOP_DELAY_MS=0). */
  eventLoopDelayMs: number | null;
  /** The latest any sample fired since start (or the last reset), ms. */
  eventLoopDelayPeakMs: number | null;
}

/**
 * The event-loop monitor; `state.shedding` is read on every request, so it is a plain field. With a limit of
 * 0 nothing is sampled (no timer) and nothing is shed.
 */
export function createLoopMonitor(maxDelayMs: number) {
  const state = { shedding: false };
  let delayMs = 0;
  let peakMs = 0;
  let wasLate = false;
  let due = performance.now() + SAMPLE_MS;
  let timer = maxDelayMs > 0 ? setTimeout(sample, SAMPLE_MS) : undefined;
  function sample(): void {
    const now = performance.now();
    delayMs = Math.max(0, now - due);
    if (delayMs > peakMs) peakMs = delayMs;
    const late = delayMs > maxDelayMs;
    state.shedding = late && wasLate;
    wasLate = late;
    due = now + SAMPLE_MS;
    timer = setTimeout(sample, SAMPLE_MS);
    timer.unref();
  }
  timer?.unref();
  const round = (ms: number) => (timer === undefined ? null : Math.round(ms * 100) / 100);
  return {
    state,
    /** Seconds a shed client should wait: the sampler clears the state within a sample of the loop catching up. */
    retryAfterS: 1,
    stats: (): LoopDelayStats => ({
      eventLoopDelayMs: round(delayMs),
      eventLoopDelayPeakMs: round(peakMs),
    }),
    reset(): void {
      peakMs = 0;
    },
    close(): void {
      clearTimeout(timer);
    },
  };
}

export type LoopMonitor = ReturnType<typeof createLoopMonitor>;
