/**
 * A Redis GET's round trip split at the socket calls, for `bench:redis-behind-l1 --split`: `perf record` of
 * the server's and Redis's reads and writes (syscall tracepoints), read back from `perf script`. Each GET is
 * followed from the server's send to Redis's read of it (out), to Redis's write of the reply (Redis), to the
 * server's read of that reply (back), counting the HTTP requests the server read while the reply waited.
 */

/** The tracepoints to record: the server's socket calls (Bun: sendto, recvfrom) and Redis's (read, write). */
export const SPLIT_EVENTS = [
  "syscalls:sys_enter_sendto",
  "syscalls:sys_enter_recvfrom",
  "syscalls:sys_exit_recvfrom",
  "syscalls:sys_enter_read",
  "syscalls:sys_exit_read",
  "syscalls:sys_enter_write",
];

export interface SyscallEvent {
  timeS: number;
  tid: number;
  /** The tracepoint without its `syscalls:` prefix, e.g. `sys_enter_sendto`. */
  name: string;
  /** The fd an enter event names. */
  fd?: number;
  /** The bytes an enter event asks to send or write (`len`, `count`). */
  size?: number;
  /** What an exit event returned (negative: an error). */
  ret?: number;
}

// `perf script`'s default line: comm, tid, [cpu], time, event, then the tracepoint's fields.
const LINE = /^\s*.+?\s+(\d+)\s+\[\d+\]\s+(\d+\.\d+):\s+syscalls:(\w+):\s*(.*)$/;

/** The syscall events of `perf script` text; other lines (headers, other events) are skipped. */
export function parsePerfScript(text: string): SyscallEvent[] {
  const events: SyscallEvent[] = [];
  for (const line of text.split("\n")) {
    const match = LINE.exec(line);
    if (match === null) continue;
    const [, tid, time, name, fields] = match as unknown as [string, string, string, string, string];
    const event: SyscallEvent = { timeS: Number(time), tid: Number(tid), name };
    if (name.startsWith("sys_exit_")) {
      const ret = BigInt.asIntN(64, BigInt(fields.trim()));
      event.ret = Number(ret);
    } else {
      const fd = /\bfd: (0x[0-9a-f]+)/.exec(fields)?.[1];
      const size = /\b(?:len|count): (0x[0-9a-f]+)/.exec(fields)?.[1];
      if (fd !== undefined) event.fd = Number(fd);
      if (size !== undefined) event.size = Number(size);
    }
    events.push(event);
  }
  return events.sort((a, b) => a.timeS - b.timeS);
}

/** Means in µs over the GETs followed whole; `backAloneUs` is the back leg of the GETs no request delayed. */
export interface GetSplit {
  sent: number;
  followed: number;
  outUs: number;
  redisUs: number;
  backUs: number;
  backP50Us: number;
  /** Of the GETs followed, those whose reply waited while the server read at least one HTTP request. */
  waitedShare: number;
  backAloneUs: number | null;
  /** Each GET followed, in order: its legs in µs, and whether its reply waited behind a request read. */
  legs: { outUs: number; redisUs: number; backUs: number; waited: boolean }[];
}

/** The GET of a command is small; an HTTP response carries the whole value. */
const MAX_COMMAND_BYTES = 200;

/**
 * Follows each GET through the events of the server's main thread (`serverTid`) and Redis's (`redisTid`): the
 * server's Redis socket is the fd it sends small writes to most, Redis's end of it the fd Redis writes to
 * most. A GET sent while the previous one is still being followed is counted in `sent`, not followed.
 */
export function splitGets(events: SyscallEvent[], serverTid: number, redisTid: number): GetSplit {
  const serverFd = mostCommon(
    events.filter(
      (e) => e.tid === serverTid && e.name === "sys_enter_sendto" && (e.size ?? 0) < MAX_COMMAND_BYTES,
    ),
  );
  const redisFd = mostCommon(events.filter((e) => e.tid === redisTid && e.name === "sys_enter_write"));
  if (serverFd === undefined)
    throw new Error("Cannot split the GETs: the capture holds no command the server sent");
  if (redisFd === undefined) throw new Error("Cannot split the GETs: the capture holds no reply Redis wrote");

  const requestsRead: number[] = []; // when the server read an HTTP request (any other socket)
  type Step = "send" | "redisRead" | "redisWrite" | "replyRead";
  const steps: { timeS: number; step: Step }[] = [];
  const reading = new Map<number, number>(); // tid → the fd its read in progress names
  for (const event of events) {
    const ours = event.tid === serverTid || event.tid === redisTid;
    if (!ours) continue;
    if (event.name === "sys_enter_recvfrom" || event.name === "sys_enter_read") {
      reading.set(event.tid, event.fd as number);
    } else if (event.name === "sys_exit_recvfrom" || event.name === "sys_exit_read") {
      const fd = reading.get(event.tid);
      reading.delete(event.tid);
      if ((event.ret ?? 0) <= 0) continue;
      if (event.tid === serverTid && fd === serverFd) steps.push({ timeS: event.timeS, step: "replyRead" });
      else if (event.tid === serverTid) requestsRead.push(event.timeS);
      else if (fd === redisFd) steps.push({ timeS: event.timeS, step: "redisRead" });
    } else if (event.name === "sys_enter_sendto" && event.tid === serverTid && event.fd === serverFd) {
      steps.push({ timeS: event.timeS, step: "send" });
    } else if (event.name === "sys_enter_write" && event.tid === redisTid && event.fd === redisFd) {
      steps.push({ timeS: event.timeS, step: "redisWrite" });
    }
  }

  const order: Step[] = ["send", "redisRead", "redisWrite", "replyRead"];
  const legs: { out: number; redis: number; back: number; waited: boolean }[] = [];
  let at: number[] = [];
  for (const { timeS, step } of steps) {
    if (step === order[at.length]) at.push(timeS);
    if (at.length < order.length) continue;
    const [send, redisRead, redisWrite, replyRead] = at as [number, number, number, number];
    const waited = firstAfter(requestsRead, redisWrite) < firstAfter(requestsRead, replyRead);
    legs.push({ out: redisRead - send, redis: redisWrite - redisRead, back: replyRead - redisWrite, waited });
    at = [];
  }
  if (legs.length === 0)
    throw new Error("Cannot split the GETs: no GET was followed from its send to its reply");
  const us = (values: number[]) => (values.reduce((a, b) => a + b, 0) / values.length) * 1e6;
  const backs = legs.map((leg) => leg.back).sort((a, b) => a - b);
  const alone = legs.filter((leg) => !leg.waited).map((leg) => leg.back);
  return {
    sent: steps.filter((s) => s.step === "send").length,
    followed: legs.length,
    outUs: us(legs.map((leg) => leg.out)),
    redisUs: us(legs.map((leg) => leg.redis)),
    backUs: us(backs),
    backP50Us: (backs[Math.floor(backs.length / 2)] as number) * 1e6,
    waitedShare: legs.filter((leg) => leg.waited).length / legs.length,
    backAloneUs: alone.length === 0 ? null : us(alone),
    legs: legs.map(({ out, redis, back, waited }) => ({
      outUs: out * 1e6,
      redisUs: redis * 1e6,
      backUs: back * 1e6,
      waited,
    })),
  };
}

/** The index of the first time in `sorted` after `timeS`. */
function firstAfter(sorted: number[], timeS: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if ((sorted[mid] as number) <= timeS) low = mid + 1;
    else high = mid;
  }
  return low;
}

function mostCommon(events: SyscallEvent[]): number | undefined {
  const counts = new Map<number, number>();
  for (const { fd } of events) if (fd !== undefined) counts.set(fd, (counts.get(fd) ?? 0) + 1);
  let best: number | undefined;
  for (const [fd, count] of counts) if (best === undefined || count > (counts.get(best) as number)) best = fd;
  return best;
}
