/**
 * The server as a process: read the environment, listen, log, and drain on SIGINT or SIGTERM, or when the
 * lab that started it is gone (the parent-pid watchdog). It is handed server.ts's createServer (it does not
 * import it: `bun server.ts` runs through here).
 */
import type { Server } from "bun";
import { readConfig, type ServerConfig } from "../server_config.ts";

/** What serve runs: a server built from its configuration, as server.ts's createServer builds one. */
export type CreateServer<Options> = (
  config: ServerConfig,
  options: Options,
) => {
  app: { listen(options: { port: number; hostname: string }): unknown; server: Server<unknown> | null };
  close(): Promise<void>;
};

/** Whether `pid` is alive (EPERM: alive, someone else's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Runs a lab as a process: listen, log, drain on SIGINT/SIGTERM (or its parent gone). Exit code as the result. */
export async function serve<Options>(createServer: CreateServer<Options>, options: Options): Promise<number> {
  let config: ServerConfig;
  try {
    config = readConfig(process.env);
  } catch (error) {
    console.error((error as Error).message);
    return 2;
  }
  process.on("unhandledRejection", (reason) => {
    console.error("unhandled rejection:", reason);
    process.exit(1);
  });
  const lab = createServer(config, options);
  try {
    lab.app.listen({ port: config.port, hostname: config.host });
  } catch (error) {
    console.error(`Cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`);
    await lab.close();
    return 1;
  }
  const bound = lab.app.server?.hostname ?? config.host;
  console.log(
    `cachelab server: strategy=${config.strategy} http://${bound.includes(":") ? `[${bound}]` : bound}:${lab.app.server?.port} pid=${process.pid}`,
  );
  const { promise: stopped, resolve } = Promise.withResolvers<string>();
  process.once("SIGINT", () => resolve("SIGINT"));
  process.once("SIGTERM", () => resolve("SIGTERM"));
  // Started by the lab: leave with it, even when it was killed too hard to stop us.
  const { parentPid } = config;
  if (parentPid !== null) {
    setInterval(() => {
      if (!processAlive(parentPid)) resolve(`its parent ${parentPid} is gone`);
    }, 500).unref();
  }
  const signal = await stopped;
  console.log(`cachelab server: ${signal}, draining`);
  const server = lab.app.server;
  // Stop accepting, let in-flight requests finish (bounded), then close the clients.
  await Promise.race([server?.stop(false), Bun.sleep(5_000)]);
  server?.stop(true);
  await lab.close();
  return 0;
}
