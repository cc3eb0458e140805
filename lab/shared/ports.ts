/** Loopback ports: finding a free one, and asking whether something listens on one. */
import { connect, createServer } from "node:net";

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

/** `preferredPort` when it can be bound on 127.0.0.1 (a moment ago), else one the kernel picks. */
export async function freePort(preferredPort = 0): Promise<number> {
  const port = (preferredPort !== 0 ? await tryBind(preferredPort) : null) ?? (await tryBind(0));
  if (port === null)
    throw new Error(`Cannot find a free port on 127.0.0.1: received preferred ${preferredPort}`);
  return port;
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
