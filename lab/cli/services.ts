/**
 * `bun run services up|down|status`: find or start Postgres and Redis for cachelab.
 * `up` prints `#` comment lines then `DATABASE_URL=…` / `REDIS_URL=…`, so its stdout is valid both as a
 * .env file and for `set -a; eval "$(bun lab/cli/services.ts up)"`. Progress goes to stderr.
 */

import { ServicesUnavailableError, servicesDown, servicesStatus, servicesUp } from "../services/services.ts";
import type { ServiceInfo } from "../services/state.ts";

const USAGE = `Usage: bun run services <command>

Commands:
  up      find or start Postgres and Redis (and Toxiproxy when installed), then print DATABASE_URL=,
          REDIS_URL= (and TOXIPROXY_URL=) lines
  down    stop the servers cachelab started (never ones it merely found)
  status  show which servers are used, how (external / native / docker), and their versions

DATABASE_URL / REDIS_URL / TOXIPROXY_URL in the environment are used as-is.`;

/** Runs one subcommand and returns the process exit code. */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  if (rest.length > 0 || (command !== "up" && command !== "down" && command !== "status")) {
    console.error(command === undefined ? USAGE : `Unknown command: ${args.join(" ")}\n\n${USAGE}`);
    return 2;
  }
  try {
    if (command === "up") {
      const services = await servicesUp();
      console.log(`# ${describe("postgres", services.postgres)}`);
      console.log(`# ${describe("redis", services.redis)}`);
      console.log(
        `# ${services.toxiproxy ? describe("toxiproxy", services.toxiproxy) : "toxiproxy: not installed"}`,
      );
      console.log(`DATABASE_URL=${services.databaseUrl}`);
      console.log(`REDIS_URL=${services.redisUrl}`);
      if (services.toxiproxy) console.log(`TOXIPROXY_URL=${services.toxiproxy.url}`);
    } else if (command === "down") {
      for (const line of await servicesDown()) console.log(line);
    } else {
      const status = await servicesStatus();
      console.log(status.postgres ? describe("postgres", status.postgres) : "postgres: not running");
      console.log(status.redis ? describe("redis", status.redis) : "redis: not running");
      console.log(status.toxiproxy ? describe("toxiproxy", status.toxiproxy) : "toxiproxy: not running");
    }
    return 0;
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return error instanceof ServicesUnavailableError ? 2 : 1;
  }
}

function describe(name: string, info: ServiceInfo): string {
  const owner = info.startedByCachelab ? "started by cachelab" : "found, not managed by cachelab";
  return `${name}: ${info.mode} (${owner}), version ${info.version ?? "unknown"}, ${info.url}`;
}

if (import.meta.main) {
  process.exitCode = await main(Bun.argv.slice(2));
}
