/**
 * `bun run services up|down|status`: find or start Postgres and Redis for cachelab.
 * `up` prints `#` comment lines then `DATABASE_URL=…` / `REDIS_URL=…` (with their passwords), so its stdout
 * is valid both as a .env file and for `set -a; eval "$(bun lab/cli/services.ts up)"`. Progress goes to
 * stderr. `status` masks passwords unless given --show-secrets.
 */

import {
  ServicesUnavailableError,
  servicesDown,
  servicesStatus,
  servicesUp,
  valkeyUp,
} from "../services/lifecycle.ts";
import { redactUrl } from "../services/probe.ts";
import type { ServiceInfo } from "../services/state.ts";
import { asksForHelp, refuseUsage } from "./args.ts";

const USAGE = `usage: bun run services up [--valkey] | down | status [--show-secrets]

  up      find or start Postgres and Redis (and Toxiproxy when installed), then print DATABASE_URL=,
          REDIS_URL= (and TOXIPROXY_URL=) lines, passwords included
  up --valkey
          also find or start the lab's valkey-server beside Redis (as \`--redis-server valkey\` runs do),
          and print its VALKEY_URL=
  down    stop the servers cachelab started (never ones it merely found), Valkey and the Redis Cluster
          included
  status [--show-secrets]
          show which servers are used, how (external / native / docker), their versions and URLs,
          passwords masked as *** unless --show-secrets
  -h, --help
          this text

DATABASE_URL / REDIS_URL / TOXIPROXY_URL / VALKEY_URL in the environment are used as-is. The passwords of the servers
cachelab starts are generated once, in .cachelab/secrets/credentials.json (mode 0600).`;

/** Runs one subcommand and returns the process exit code. */
export async function main(args: string[]): Promise<number> {
  if (asksForHelp(args)) {
    console.log(USAGE);
    return 0;
  }
  const [command, ...rest] = args;
  const options = command === "status" ? ["--show-secrets"] : command === "up" ? ["--valkey"] : [];
  const unknown = rest.filter((arg) => !options.includes(arg));
  if (unknown.length > 0 || (command !== "up" && command !== "down" && command !== "status")) {
    const problem =
      command === undefined
        ? "Cannot run services: expected a command, one of up, down, status"
        : unknown.length > 0 && (command === "up" || command === "down" || command === "status")
          ? `Cannot run services ${command}: unknown option (valid: ${options.join(", ") || "none"}): received ${unknown.join(" ")}`
          : `Cannot run services: unknown command (valid: up, down, status): received ${args.join(" ")}`;
    return refuseUsage("services", problem);
  }
  const showSecrets = rest.includes("--show-secrets");
  try {
    if (command === "up") {
      const services = await servicesUp();
      const valkey = rest.includes("--valkey") ? await valkeyUp() : null;
      console.log(`# ${describe("postgres", services.postgres)}`);
      console.log(`# ${describe("redis", services.redis)}`);
      console.log(
        `# ${services.toxiproxy ? describe("toxiproxy", services.toxiproxy) : "toxiproxy: not installed"}`,
      );
      if (valkey) console.log(`# ${describe("valkey", valkey)}`);
      console.log(`DATABASE_URL=${services.databaseUrl}`);
      console.log(`REDIS_URL=${services.redisUrl}`);
      if (services.toxiproxy) console.log(`TOXIPROXY_URL=${services.toxiproxy.url}`);
      if (valkey) console.log(`VALKEY_URL=${valkey.url}`);
    } else if (command === "down") {
      for (const line of await servicesDown()) console.log(line);
    } else {
      const status = await servicesStatus();
      const show = (name: string, info: ServiceInfo | null) =>
        info ? describe(name, info, showSecrets) : `${name}: not running`;
      console.log(show("postgres", status.postgres));
      console.log(show("redis", status.redis));
      console.log(show("toxiproxy", status.toxiproxy));
      const cluster = status.redisCluster;
      console.log(
        cluster
          ? `redis cluster: native (started by cachelab), version ${cluster.version ?? "unknown"}, nodes ${cluster.nodes.join(",")}, password ${showSecrets ? cluster.password : "***"}`
          : "redis cluster: not running (the tests and --redis-cluster start it)",
      );
      console.log(
        status.valkey
          ? describe("valkey", status.valkey, showSecrets)
          : "valkey: not running (--redis-server valkey, `services up --valkey` and the tests start it)",
      );
    }
    return 0;
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return error instanceof ServicesUnavailableError ? 2 : 1;
  }
}

/** One line per server; the URL's password masked unless `showSecrets` (the `#` lines of `up` mask it too). */
function describe(name: string, info: ServiceInfo, showSecrets = false): string {
  const owner = info.startedByCachelab ? "started by cachelab" : "found, not managed by cachelab";
  const url = showSecrets ? info.url : redactUrl(info.url);
  return `${name}: ${info.mode} (${owner}), version ${info.version ?? "unknown"}, ${url}`;
}

if (import.meta.main) {
  process.exitCode = await main(Bun.argv.slice(2));
}
