/**
 * Shedding on event-loop delay, the way production Node servers do (Fastify's under-pressure): when the CPU,
 * not the pool, is the limit, requests wait in the kernel and in Bun before any handler runs, where no
 * database gate sees them. A timer due every SAMPLE_MS measures how late it fires; while the last sample was
 * over MAX_EVENT_LOOP_DELAY_MS the /products handlers answer 503 with Retry-After at once, which costs far
 * less than serving, so the backlog drains. Timer drift, not perf_hooks: on Bun 1.4.4 monitorEventLoopDelay
 * missed a 200 ms block and eventLoopUtilization() reads 0.
 */

/** How often the delay is sampled: under-pressure's default resolution. */
export const SAMPLE_MS = 10;

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
  let due = performance.now() + SAMPLE_MS;
  let timer = maxDelayMs > 0 ? setTimeout(sample, SAMPLE_MS) : undefined;
  function sample(): void {
    const now = performance.now();
    delayMs = Math.max(0, now - due);
    if (delayMs > peakMs) peakMs = delayMs;
    state.shedding = delayMs > maxDelayMs;
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
