/**
 * `bun run experiment <name>`: one command answers one question and appends one CSV row per cell.
 *
 *   bun run experiment quickstart
 *   bun run experiment read_heavy --strategies none,local --tool vegeta --repeats 3 --duration-s 30 --dry-run
 *   bun run experiment read_heavy --miss-cost-ms 5 --redis-rtt-ms 0.5 --payload-bytes 2000 --pool 20
 *   bun run experiment --list
 */

import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { handedOverByEnv } from "../../seed/ownership.ts";
import { STRATEGY_NAMES, type StrategyName } from "../../server_config.ts";
import { checkPrometheus, DEFAULT_TARGETS_FILE } from "../cell/prometheus_targets.ts";
import { TOOL_NAMES, type ToolName } from "../plan/attack_plan.ts";
import type { Experiment } from "../plan/experiment_plan.ts";
import { skippedWarning } from "../results/csv_read.ts";
import { curvesPath, readCurves } from "../results/curves_csv.ts";
import { reportHtml } from "../results/report_html.ts";
import { reportMarkdown } from "../results/report_markdown.ts";
import { runReportPath } from "../results/report_path.ts";
import type { ResultRow } from "../results/summary.ts";
import { readTimeline, timelinePath } from "../results/timeline.ts";
import { type RunOptions, runExperiment } from "../run/run_experiment.ts";
import { REDIS_SERVERS, type RedisServer } from "../run/run_services.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import {
  abortOnSignals,
  asksForHelp,
  exitWith,
  parseFlags,
  parsePositiveInt,
  refuseUsage,
  UsageError,
} from "./args.ts";
import { checkCsvPath } from "./csv_path.ts";
import { DEPLOYMENT_OPTIONS, DEPLOYMENT_USAGE, deploymentFrom } from "./deployment_args.ts";
import { TRACE_OPTIONS, traceKeysFrom, traceUsage } from "./trace_args.ts";

const EXPERIMENTS_DIR = join(REPO_ROOT, "experiments");

/** Experiment names: the file names in experiments/ (file name = CLI name = CSV value). */
export function experimentNames(): string[] {
  return readdirSync(EXPERIMENTS_DIR)
    .filter((file) => /^[a-z0-9_]+\.ts$/.test(file) && !file.startsWith("_") && !file.endsWith("_test.ts"))
    .map((file) => file.slice(0, -3))
    .sort();
}

/** Experiments run as scripts, already loaded (importing the running entry module again would wait on itself). */
const loaded = new Map<string, Experiment>();

export async function loadExperiment(name: string): Promise<Experiment> {
  const preloaded = loaded.get(name);
  if (preloaded) return preloaded;
  const module = (await import(join(EXPERIMENTS_DIR, `${name}.ts`))) as { experiment?: Experiment };
  if (!module.experiment)
    throw new Error(`Cannot load experiment ${name}: experiments/${name}.ts exports no \`experiment\``);
  return module.experiment;
}

const USAGE = `usage: bun run experiment <name> [options]
       bun run experiment --list

  --strategies a,b      subset of ${STRATEGY_NAMES.join(", ")}
  --tool NAME           ${TOOL_NAMES.join(", ")} (default: the experiment's preference, first installed that fits)
  --repeats N           repeats per cell
  --duration-s N        measured seconds per attack
  --rate-rps N          arrival rate of open-model attacks

${DEPLOYMENT_USAGE}

  --out PATH            CSV file (default results/<name>.csv)
  --server-apart        run each cell's server in a network-namespace host of its own (root; Postgres and
                        Redis stay on this machine's namespace, reached through Toxiproxy on the bridge)
  --redis-cluster       run redis and two_tier on the lab's local Redis Cluster of three masters (started
                        once, stopped by \`bun run services down\`) instead of its Redis; refused for cells
                        that set maxmemory, route Redis through Toxiproxy or use Bun's RedisClient
  --redis-server NAME   the server every Redis tier (redis, two_tier, tracking) runs on: ${REDIS_SERVERS.join(", ")}
                        (default redis); valkey is the lab's valkey-server beside its Redis (started once,
                        stopped by \`bun run services down\`; VALKEY_URL names another), and each row
                        records it (redis_server) and its version; not with --redis-cluster or --server-url
  --server-url URL[,…]  drive cachelab servers someone else started (bun run server, on any host) instead
                        of starting one per cell: identified by GET /info, reset by POST /admin/reset
                        before each cell, verified against DATABASE_URL (which, like REDIS_URL, must name
                        the database and Redis the servers use); only the cells they match run; the
                        servers' admin token comes from CACHELAB_ADMIN_TOKEN in this environment
${traceUsage()}
  --prometheus URL      run every server with METRICS=1 and announce it to the Prometheus at URL through a
                        file_sd targets file, labelled run_id, experiment, strategy, repeat, cell
                        (docs/metrics.md); the lab waits for a scrape before and after each cell
  --prometheus-targets FILE  the targets file (default ${DEFAULT_TARGETS_FILE})
  --i-own-this-database let the run reseed a database without cachelab's marker table (its products rows
                        are replaced); also CACHELAB_I_OWN_THIS_DATABASE=1
  --dry-run             print the plan, cells, exact tool command lines and ETA on stdout, then stop;
                        nothing is written
  --commands-dir DIR    write each printed command's files (its inputs, a sample of its targets) into
                        DIR/<attack>/, so that the command pastes into bash as it is
  --list                each experiment with its question
  -h, --help            this text`;

function positiveInt(flag: string, raw: string | undefined, max: number): number | undefined {
  return raw === undefined ? undefined : parsePositiveInt(flag, raw, max);
}

export async function parseCommand(
  args: string[],
): Promise<
  { kind: "help" } | { kind: "list" } | { kind: "run"; experiment: Experiment; options: RunOptions }
> {
  if (asksForHelp(args)) return { kind: "help" };
  const parsed = parseFlags({
    args,
    options: {
      strategies: { type: "string" },
      tool: { type: "string" },
      repeats: { type: "string" },
      "duration-s": { type: "string" },
      "rate-rps": { type: "string" },
      out: { type: "string" },
      "server-url": { type: "string" },
      "server-apart": { type: "boolean", default: false },
      "redis-cluster": { type: "boolean", default: false },
      "redis-server": { type: "string" },
      prometheus: { type: "string" },
      "prometheus-targets": { type: "string" },
      ...TRACE_OPTIONS,
      ...DEPLOYMENT_OPTIONS,
      "i-own-this-database": { type: "boolean", default: false },
      "dry-run": { type: "boolean", default: false },
      "commands-dir": { type: "string" },
      list: { type: "boolean", default: false },
    },
    strict: true,
    allowPositionals: true,
  });
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.list) return { kind: "list" };
  const names = experimentNames();
  const [name, ...extra] = parsed.positionals;
  if (name === undefined) throw new UsageError(`Cannot run: name an experiment: one of ${names.join(", ")}`);
  if (extra.length > 0)
    throw new UsageError(`Cannot run: one experiment at a time: received ${parsed.positionals.join(" ")}`);
  if (!names.includes(name))
    throw new UsageError(`Cannot run experiment ${name}: expected one of ${names.join(", ")}`);
  let strategies: StrategyName[] | undefined;
  if (typeof values.strategies === "string") {
    strategies = values.strategies.split(",").map((strategy) => {
      if (!(STRATEGY_NAMES as readonly string[]).includes(strategy)) {
        throw new UsageError(`Cannot use strategy ${strategy}: expected one of ${STRATEGY_NAMES.join(", ")}`);
      }
      return strategy as StrategyName;
    });
  }
  if (values["redis-cluster"] === true && typeof values["server-url"] === "string") {
    throw new UsageError(
      "Cannot combine --redis-cluster with --server-url: the lab puts on its cluster only servers it starts",
    );
  }
  const redisServer = redisServerFrom(values);
  if (values["server-apart"] === true && typeof values["server-url"] === "string") {
    throw new UsageError(
      "Cannot combine --server-apart with --server-url: the lab places only servers it starts",
    );
  }
  const trace = traceKeysFrom(values);
  const tool = values.tool as string | undefined;
  if (tool !== undefined && !(TOOL_NAMES as readonly string[]).includes(tool)) {
    throw new UsageError(`Cannot use tool ${tool}: expected one of ${TOOL_NAMES.join(", ")}`);
  }
  const serverUrls =
    typeof values["server-url"] === "string"
      ? values["server-url"].split(",").filter((url) => url !== "")
      : undefined;
  const experiment = await loadExperiment(name);
  const deployment = deploymentFrom(values, {
    experiment,
    trace: trace !== undefined,
    ...(serverUrls ? { serverUrls } : {}),
  });
  const prometheus = await prometheusFrom(values);
  return {
    kind: "run",
    experiment,
    options: {
      name,
      ...deployment,
      strategies,
      tool: tool as ToolName | undefined,
      repeats: positiveInt("repeats", values.repeats as string | undefined, 100),
      durationS: positiveInt("duration-s", values["duration-s"] as string | undefined, 86_400),
      // Beyond what one machine's load tools send: a typo, not a plan.
      rateRps: positiveInt("rate-rps", values["rate-rps"] as string | undefined, 1_000_000),
      // Checked now: a bad path refused before any service starts or any row is written.
      out: typeof values.out === "string" ? checkCsvPath("out", values.out) : undefined,
      ...(values["server-apart"] === true ? { serverApart: true } : {}),
      ...(values["redis-cluster"] === true ? { redisCluster: true } : {}),
      ...(redisServer === "valkey" ? { redisServer } : {}),
      ...(serverUrls ? { serverUrls } : {}),
      ...(trace ? { trace } : {}),
      ...(prometheus ? { prometheus } : {}),
      dryRun: values["dry-run"] === true,
      ...(typeof values["commands-dir"] === "string" ? { commandsDir: values["commands-dir"] } : {}),
      ...(values["i-own-this-database"] === true || handedOverByEnv() ? { handedOver: true } : {}),
    },
  };
}

/** `--redis-server NAME`: one of REDIS_SERVERS, and Valkey only where the lab starts the servers on one server. */
function redisServerFrom(values: Record<string, string | boolean | undefined>): RedisServer {
  const name = values["redis-server"] ?? "redis";
  if (!(REDIS_SERVERS as readonly unknown[]).includes(name)) {
    throw new UsageError(`Cannot use Redis server ${name}: expected one of ${REDIS_SERVERS.join(", ")}`);
  }
  if (name === "valkey" && values["redis-cluster"] === true) {
    throw new UsageError(
      "Cannot combine --redis-server valkey with --redis-cluster: the lab's cluster is of redis-server nodes",
    );
  }
  if (name === "valkey" && typeof values["server-url"] === "string") {
    throw new UsageError(
      "Cannot combine --redis-server valkey with --server-url: the lab puts on Valkey only servers it starts",
    );
  }
  return name as RedisServer;
}

/** `--prometheus URL [--prometheus-targets FILE]`, checked to answer as a Prometheus before anything runs. */
async function prometheusFrom(values: Record<string, string | boolean | undefined>) {
  const url = values.prometheus;
  if (typeof values["prometheus-targets"] === "string" && typeof url !== "string") {
    throw new UsageError("Cannot use --prometheus-targets without --prometheus URL");
  }
  if (typeof url !== "string") return undefined;
  const base = url.replace(/\/+$/, "");
  const problem = await checkPrometheus(base);
  if (problem !== null) throw new UsageError(problem);
  const targets = values["prometheus-targets"];
  return { url: base, targetsFile: typeof targets === "string" ? targets : DEFAULT_TARGETS_FILE };
}

export async function main(args: string[]): Promise<number> {
  let command: Awaited<ReturnType<typeof parseCommand>>;
  try {
    command = await parseCommand(args);
  } catch (error) {
    if (error instanceof UsageError) {
      return refuseUsage("experiment", error.message);
    }
    throw error;
  }
  if (command.kind === "help") {
    console.log(USAGE);
    return 0;
  }
  if (command.kind === "list") {
    const names = experimentNames();
    const width = Math.max(...names.map((name) => name.length));
    for (const name of names) console.log(`${name.padEnd(width)}  ${(await loadExperiment(name)).question}`);
    return 0;
  }
  const interrupt = abortOnSignals(
    "stopping the tool and the server; finished rows stay, no partial row is written",
  );
  const tty = process.stderr.isTTY;
  let lastStatusMs = 0;
  const summary = await runExperiment(command.experiment, {
    ...command.options,
    signal: interrupt.signal,
    status: (line) => {
      if (tty) process.stderr.write(`\r\x1b[K${line}`);
      else if (line !== "" && performance.now() - lastStatusMs > 5_000) {
        lastStatusMs = performance.now();
        console.error(line);
      }
    },
  });
  if (typeof summary === "string") {
    return refuseUsage("experiment", summary);
  }
  if (command.options.dryRun) return 0;
  if (summary.rows.length > 0) {
    const rows = summary.rows as ResultRow[];
    // This run's seconds only: the timeline file holds every run of the experiment.
    const seconds = timelinePath(summary.csvPath);
    const runIds = new Set(rows.map((row) => row.run_id));
    const timeline = existsSync(seconds)
      ? readTimeline(seconds, { onSkip: (skipped) => console.error(skippedWarning(skipped)) }).filter(
          (second) => runIds.has(second.run_id),
        )
      : [];
    // This run's replayed curves (trace attacks only), read back as `bun run report` reads them.
    const curvesFile = curvesPath(summary.csvPath);
    const curves = existsSync(curvesFile)
      ? readCurves(curvesFile, { onSkip: (skipped) => console.error(skippedWarning(skipped)) }).filter(
          (curve) => runIds.has(curve.run_id),
        )
      : [];
    console.log(`\n${reportMarkdown(rows, { timeline, curves })}`);
    // Never over another experiment's report: runs of several experiments may share one --out CSV.
    const { path: html, notice } = runReportPath(summary.csvPath, command.options.name);
    if (notice) console.log(notice);
    writeFileSync(
      html,
      await reportHtml(rows, {
        title: `cachelab ${command.options.name}: run ${String(rows[0]?.run_id)}`,
        timeline,
        curves,
      }),
    );
    console.log(`report: ${html}`);
  }
  console.log(`${summary.rows.length} rows appended to ${summary.csvPath}`);
  console.log(
    `wall time ${summary.wallS.toFixed(1)} s for ${summary.plannedS} s of planned load (${(summary.wallS / Math.max(summary.plannedS, 1)).toFixed(2)}×)`,
  );
  if (summary.interrupted) return 130;
  return 0;
}

/**
 * `bun experiments/<name>.ts [options]`, each experiment file's own entry point: exactly
 * `bun run experiment <name> [options]`.
 */
export async function runExperimentFile(path: string, experiment: Experiment): Promise<never> {
  const name = basename(path, ".ts");
  loaded.set(name, experiment);
  return exitWith(() => main([name, ...process.argv.slice(2)]));
}

if (import.meta.main) await exitWith(() => main(process.argv.slice(2)));
