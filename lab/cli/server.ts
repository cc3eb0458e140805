/**
 * `bun run server`: server.ts with the services `bun run services up` found or started. DATABASE_URL and
 * REDIS_URL win when set; server.ts itself reads only its environment and imports nothing from the lab.
 *
 *   CACHE_STRATEGY=two_tier bun run server
 */

import { runServer } from "../../server/run.ts";
import { DEFAULT_CONFIG, readConfig, STRATEGY_NAMES } from "../../server_config.ts";
import { servicesStatus } from "../services/lifecycle.ts";
import { asksForHelp, exitWith, refuseUsage } from "./args.ts";

const USAGE = `usage: [CACHE_STRATEGY=${STRATEGY_NAMES.join("|")}] [NAME=value …] bun run server

  Runs the cachelab server (server.ts) until SIGINT or SIGTERM, which drain it. Its settings are
  environment variables, never options: CACHE_STRATEGY (default none), PORT (${DEFAULT_CONFIG.port}), HOST (${DEFAULT_CONFIG.host}),
  DATABASE_URL and REDIS_URL (default: the services \`bun run services up\` found or started), PG_POOL_MAX,
  CACHE_TTL_MS, L1_MAX_ENTRIES, METRICS and the others in docs/server.md; a bad value exits 2 before
  anything starts.

  -h, --help  this text`;

/** `bun run server [--help]`; resolves to the exit code once the server has drained. */
async function main(args: string[]): Promise<number> {
  if (asksForHelp(args)) {
    console.log(USAGE);
    return 0;
  }
  if (args.length > 0) {
    return refuseUsage(
      "server",
      `Cannot run bun run server: it takes no arguments (its settings are environment variables): received ${args.join(" ")}`,
    );
  }
  // A bad setting is refused before the services are looked for (runServer() reads them again, the same way).
  try {
    readConfig(process.env);
  } catch (error) {
    return refuseUsage("server", (error as Error).message);
  }
  if (!process.env.DATABASE_URL || !process.env.REDIS_URL) {
    const status = await servicesStatus({ log: () => {} });
    process.env.DATABASE_URL ||= status.postgres?.url;
    process.env.REDIS_URL ||= status.redis?.url;
  }
  return runServer();
}

if (import.meta.main) await exitWith(() => main(process.argv.slice(2)));
