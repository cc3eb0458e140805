/** The server as the lab runs it: server.ts's createServer, served as a process (server/process.ts). */
import { createServer } from "../server.ts";
import { serve } from "./process.ts";

/** Listens, logs and drains as `bun server.ts` does, with `options` (a test server's wrapped cache). */
export function runServer(options: Parameters<typeof createServer>[1] = {}): Promise<number> {
  return serve(createServer, options);
}
