/** Loopback ports: finding a free one, and asking whether something listens on one. */
import { readFileSync } from "node:fs";
import { connect, createServer } from "node:net";

/** Where the lab's own ports start: above Toxiproxy's proxies (18 474 up), below the usual ephemeral range. */
const FIRST_LAB_PORT = 24_000;

function tryBind(port: number): Promise<number | null> {
  return new Promise((resolveBind) => {
    const server = createServer();
    server.once("error", () => resolveBind(null));
    server.listen({ host: "127.0.0.1", port, exclusive: true }, () => {
      const address = server.address();
      const bound = typeof address === "object" && address ? address.port : null;
      server.close(() => resolveBind(bound));
    });
  });
}

/**
 * `preferredPort` when it can be bound on 127.0.0.1 (a moment ago), else a free port outside the kernel's
 * ephemeral range (ip_local_port_range): a port picked from inside it can be taken by any outgoing connection
 * between the pick and the server's bind.
 */
export async function freePort(preferredPort = 0): Promise<number> {
  if (preferredPort !== 0) {
    const preferred = await tryBind(preferredPort);
    if (preferred !== null) return preferred;
  }
  const [low, high] = ephemeralRange();
  const candidates: [number, number][] = [
    [FIRST_LAB_PORT, Math.min(low, 32_768)],
    [high + 1, 65_536],
  ];
  const ranges = candidates.filter(([from, to]) => to - from >= 100);
  for (const [from, to] of ranges) {
    // A random start, so two processes picking at once rarely try the same ports in the same order.
    const offset = Math.floor(Math.random() * (to - from));
    for (let i = 0; i < to - from; i++) {
      const port = from + ((offset + i) % (to - from));
      if ((await tryBind(port)) !== null) return port;
    }
  }
  throw new Error(
    `Cannot find a free port on 127.0.0.1 outside the ephemeral range ${low}–${high}: received preferred ${preferredPort}`,
  );
}

/** The kernel's ephemeral port range (Linux: /proc/sys/net/ipv4/ip_local_port_range); IANA's elsewhere. */
export function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low as number, high as number];
  } catch {
    // not Linux
  }
  return [49_152, 65_535];
}

/** Whether something accepts a TCP connection at host:port within a second. */
export function portAnswers(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolveAnswer) => {
    const socket = connect({ host, port });
    const finish = (answered: boolean) => {
      socket.destroy();
      resolveAnswer(answered);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.once("connect", () => finish(true));
    socket.once("error", () => finish(false));
  });
}
