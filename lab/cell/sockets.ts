/**
 * The sockets a cell leaves behind. A load tool that opened tens of thousands of connections (an open-model
 * generator facing a slow server opens one per late request) leaves them in TIME_WAIT for 60 s, holding
 * local ports to the server's port; the next cell's tool then fails to connect ("bind: address already in
 * use") and its row measures the previous cell, not its own. So before a cell's load starts, the lab waits
 * for those sockets to drain (`settleSockets`), and says so. It waits only past 10 000 of them, a third of
 * the ephemeral range (32768–60999): a busy cell leaves a few thousand, which do not get in the way, and
 * waiting them out (up to 60 s each) would double a long experiment.
 */
import { readFileSync } from "node:fs";

const TIME_WAIT = "06";

/** TIME_WAIT sockets in a /proc/net/tcp{,6} text whose remote port is `port`. */
export function countTimeWait(procNetTcp: string, port: number): number {
  let count = 0;
  for (const line of procNetTcp.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const remote = fields[2];
    if (fields[3] !== TIME_WAIT || remote === undefined) continue;
    if (Number.parseInt(remote.slice(remote.lastIndexOf(":") + 1), 16) === port) count++;
  }
  return count;
}

/** TIME_WAIT sockets to `port` on this host now (IPv4 and IPv6). */
export function timeWaitTo(port: number): number {
  let count = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    try {
      count += countTimeWait(readFileSync(file, "utf8"), port);
    } catch {
      // no such table (no IPv6): nothing there
    }
  }
  return count;
}

/**
 * Waits until fewer than `max` sockets to `port` are in TIME_WAIT, or `timeoutMs` passes (TIME_WAIT lasts
 * 60 s on Linux). Returns how many there were, how long it waited, and how many are left.
 */
export async function settleSockets(
  port: number,
  options: { max?: number; timeoutMs?: number } = {},
): Promise<{ before: number; waitedMs: number; left: number }> {
  const max = options.max ?? 10_000;
  const started = performance.now();
  const before = timeWaitTo(port);
  let left = before;
  while (left >= max && performance.now() - started < (options.timeoutMs ?? 75_000)) {
    await Bun.sleep(500);
    left = timeWaitTo(port);
  }
  return { before, waitedMs: Math.round(performance.now() - started), left };
}
