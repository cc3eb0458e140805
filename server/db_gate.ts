/**
 * The database admission gate: a FIFO in front of the handlers' queries, bounded by PG_POOL_MAX, PG_QUEUE_MAX
 * and PG_ACQUIRE_TIMEOUT_MS; a query it does not admit is shed with DbShedError (503 and Retry-After).
 */
import type { ServerConfig } from "../server_config.ts";

/**
 * A handler's query that the database gate did not admit: its queue was full (thrown at once) or the
 * request waited `PG_ACQUIRE_TIMEOUT_MS` for a slot. Handlers answer it with 503 and `Retry-After`. Thrown
 * inside a cache loader it rejects the load like any loader error: every strategy hands that rejection to
 * all the requests sharing the flight and caches nothing (the contract's "does not cache a failed load").
 */
export class DbShedError extends Error {
  constructor(
    message: string,
    /** Seconds a client should wait before retrying: the `Retry-After` value. */
    readonly retryAfterS: number,
  ) {
    super(message);
    this.name = "DbShedError";
  }
}

/**
 * How many handler queries the gate lets into postgres.js at once, per pool connection: one, so "in
 * flight" is PG_POOL_MAX. postgres.js 3.4.9 (src/index.js `handler`, src/connection.js `execute`) sends a
 * query to an idle connection, opens a closed one, and otherwise *pipelines* it onto a busy one (round
 * robin), up to `max_pipeline` = 100 written ahead per connection, and only then holds it in its own queue,
 * unbounded and without a timeout. A pipelined query is already waiting for a connection, only where
 * nothing counts, times out or sheds it, and behind whatever query happens to run there: one slow query (a
 * row lock, a cold page) stalls the k − 1 behind it while another connection may sit idle. With one per
 * connection every wait is in the gate's FIFO, bounded by PG_QUEUE_MAX and PG_ACQUIRE_TIMEOUT_MS, and goes
 * to whichever connection frees first (postgres.js marks a connection idle before the query's promise
 * settles, so the query admitted on release finds it idle).
 * The price is pipelining's throughput once the pool is saturated (the backend idles for one client
 * turn-around per query). Measured (wrk, 16 connections, `none`, loopback, 2 vCPU): PG_POOL_MAX=10 within
 * the noise (22.8k vs 23.4k rps); PG_POOL_MAX=2 about −18% (21.0k vs 25.5k), where 4 per connection got
 * 23.3k back. A deeper pipeline trades the bound for that rate; one keeps the settings' meaning exact.
 */
const QUERIES_PER_CONNECTION = 1;

interface Waiter {
  admit: () => void;
  shed: (error: DbShedError) => void;
  /** performance.now() past which it is shed. */
  deadline: number;
  next: Waiter | undefined;
}

/**
 * A FIFO admission gate in front of the handlers' queries: at most `slots` in flight, at most `queueMax`
 * waiting (0 = unbounded), each waiting at most `timeoutMs` (0 = forever). Every waiter has the same
 * timeout, so deadlines rise along the queue and a single timer, set for the head, expires them in order.
 */
export function createDbGate(options: { slots: number; queueMax: number; timeoutMs: number }) {
  const { slots, queueMax, timeoutMs } = options;
  // Every request still queued has been admitted or shed by then: the queue it met has turned over.
  const retryAfterS = Math.max(1, Math.ceil(timeoutMs / 1_000));
  let inFlight = 0;
  let waiting = 0;
  let peak = 0;
  let head: Waiter | undefined;
  let tail: Waiter | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function dequeue(): Waiter | undefined {
    const waiter = head;
    if (waiter) {
      head = waiter.next;
      if (head === undefined) tail = undefined;
      waiting--;
    }
    return waiter;
  }

  function armTimer(): void {
    if (timer !== undefined || head === undefined || timeoutMs === 0) return;
    timer = setTimeout(expire, Math.max(1, Math.ceil(head.deadline - performance.now())));
  }

  function expire(): void {
    timer = undefined;
    const now = performance.now();
    while (head !== undefined && head.deadline <= now) {
      (dequeue() as Waiter).shed(
        new DbShedError(
          `Cannot get a database connection: waited ${timeoutMs} ms: PG_ACQUIRE_TIMEOUT_MS=${timeoutMs}`,
          retryAfterS,
        ),
      );
    }
    armTimer();
  }

  function acquire(): Promise<void> | undefined {
    if (inFlight < slots) {
      inFlight++;
      return undefined;
    }
    if (queueMax > 0 && waiting >= queueMax) {
      throw new DbShedError(
        `Cannot get a database connection: ${waiting} waiting already: PG_QUEUE_MAX=${queueMax}`,
        retryAfterS,
      );
    }
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    const waiter: Waiter = {
      admit: resolve,
      shed: reject,
      deadline: performance.now() + timeoutMs,
      next: undefined,
    };
    if (tail) tail.next = waiter;
    else head = waiter;
    tail = waiter;
    waiting++;
    if (waiting > peak) peak = waiting;
    armTimer();
    return promise;
  }

  function release(): void {
    const waiter = dequeue();
    // The slot passes straight to the next waiter: inFlight is unchanged.
    if (waiter) waiter.admit();
    else inFlight--;
  }

  function admitted<T>(send: () => Promise<T>): Promise<T> {
    let sent: Promise<T>;
    try {
      sent = send();
    } catch (error) {
      release();
      throw error;
    }
    return sent.finally(release);
  }

  return {
    /** Runs `send` once a slot is free; throws or rejects DbShedError when the request is shed. */
    run<T>(send: () => Promise<T>): Promise<T> {
      const wait = acquire();
      return wait === undefined ? admitted(send) : wait.then(() => admitted(send));
    },
    stats: () => ({ dbWaiting: waiting, dbWaitingPeak: peak, dbInFlight: inFlight }),
    /** Sheds everyone still waiting (the server is closing) and stops the timer. */
    close(): void {
      clearTimeout(timer);
      timer = undefined;
      for (let waiter = dequeue(); waiter; waiter = dequeue()) {
        waiter.shed(new DbShedError("Cannot get a database connection: the server is closing", retryAfterS));
      }
    },
  };
}

export type DbGate = ReturnType<typeof createDbGate>;

/**
 * The gate a server's settings ask for; with both PG_QUEUE_MAX and PG_ACQUIRE_TIMEOUT_MS off, none: queries
 * go straight to postgres.js (which then pipelines and queues them without a bound, as it always did).
 */
export function dbGateFor(config: ServerConfig): DbGate | null {
  return config.pgQueueMax > 0 || config.pgAcquireTimeoutMs > 0
    ? createDbGate({
        slots: config.pgPoolMax * QUERIES_PER_CONNECTION,
        queueMax: config.pgQueueMax,
        timeoutMs: config.pgAcquireTimeoutMs,
      })
    : null;
}

/** Sends one handler query, through the gate when there is one (count the query inside `send`). */
export function queryThrough(gate: DbGate | null): <T>(send: () => Promise<T>) => Promise<T> {
  return gate === null ? (send) => send() : (send) => gate.run(send);
}

/** The 503 for a request whose query was shed: the message and when to retry. */
export function shedResponse(error: DbShedError): Response {
  return new Response(JSON.stringify({ error: error.message, retryAfterS: error.retryAfterS }), {
    status: 503,
    headers: { "content-type": "application/json", "retry-after": String(error.retryAfterS) },
  });
}
