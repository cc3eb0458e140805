/**
 * `bun run attack`: one plan against any URL through one real load tool; a readable summary, or with
 * `--json` the normalized result as one JSON object on stdout. Raw tool output is kept under results/raw/.
 *
 *   bun run attack --url 'http://127.0.0.1:3000/products/{id}' --tool oha --rate 500 --duration 10s \
 *     --keys zipf:1.1 --keyspace 100000 [--json]
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { envAdminToken, postAdmin } from "../cell/admin.ts";
import { type ServerStatsSnapshot, serverStats, startStatsWindow } from "../cell/counters.ts";
import { readInfo } from "../cell/remote.ts";
import { exportK6Operator, importK6Json, K6_OPERATOR_VERSION, SAMPLES_PATH } from "../load/k6_operator.ts";
import { findTool, runAttack } from "../load/run_attack.ts";
import {
  type AttackPlan,
  type HttpMethod,
  type KeyDistribution,
  type LoadModel,
  type NormalizedResult,
  TOOL_NAMES,
  type ToolName,
} from "../plan/attack_plan.ts";
import { reusedPositions, sentCount } from "../plan/segments.ts";
import { generateTargets } from "../plan/targets.ts";
import { attackRow, checkStream } from "../results/attack_row.ts";
import { appendRow, type CsvRow, newRunId, resolveCsvPath } from "../results/csv.ts";
import { machine } from "../results/machine.ts";
import { REPO_ROOT } from "../shared/repo.ts";
import { abortOnSignals, parsePositiveInt, UsageError } from "./args.ts";
import { checkCsvPath } from "./csv_path.ts";

const USAGE = `usage: bun run attack --url URL [options]

  --url URL               target; {id} is replaced by a key (e.g. http://127.0.0.1:3000/products/{id})
  --tool NAME             ${TOOL_NAMES.join(", ")} (default: the first installed, in that order)
  --rate N                open model: N requests per second (default 100 unless --connections or --ramp)
  --connections N         closed model: N connections, each waiting for its answer
  --ramp A:Ds,B:Ds,...    ramping arrival rate from --rate to A over D seconds, then to B, ... (k6 only)
  --duration D            measured duration, e.g. 10s, 2m, 1500ms (default 10s)
  --warmup D              warm-up before it, same plan, thrown away (default 0s)
  --timeout D             per-request timeout (default 5s)
  --method M              GET, PUT, POST or DELETE (default GET)
  --body JSON             request body template ({id} allowed); sent as application/json
  --header 'K: V'         extra header (repeatable)
  --keys DIST             uniform | zipf:EXPONENT | hotspot:HOT_FRACTION:HOT_SHARE | sequential (default uniform)
  --keyspace N            keys are 1..N (default 100000)
  --seed N                seed of the key sequence (default 42)
  --targets N             targets per run from the stream: the warm-up and the measured run each get
                          their own N, never the same ones (default 100000)
  --max-connections N     open model: most connections/VUs the tool may open (default 256)
  --json                  print the normalized result as one JSON object
  --out DIR               where raw output goes (default results/raw/attack-<time>)
  --csv FILE              also append the run as one row of the experiments' CSV schema (experiment
                          "attack"); against a cachelab server its settings and counters fill the server's
                          columns and check the tool's counts
  --reset                 first reset the cachelab server at --url (POST /admin/reset: an empty cache), so
                          the row's hit ratio is checked against a simulation of the stream sent; without
                          it a cache of unknown history gives no hit ratio to record; sends
                          CACHELAB_ADMIN_TOKEN from this environment as the server's admin token

  --export k6-operator    instead of running: write the plan for the k6 operator (script.js, targets.json,
                          configmap.yaml, testrun.yaml) to --out; with --parallelism N (runner pods) and
                          --name NAME (TestRun and ConfigMap, default cachelab); --targets sizes the list
  --import k6-json FILE…  instead of running: merge the runners' --out json files of such a TestRun into
                          one result, for the same plan flags (with --csv, one row); --tool-version V names
                          the runners' k6 (default: this machine's, the version the export pins)`;

/** "10s", "2m", "1500ms" → seconds. */
export function parseDurationS(flag: string, raw: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(raw);
  if (!match)
    throw new UsageError(
      `Cannot parse --${flag}: expected a duration like 10s, 2m or 500ms: received ${raw}`,
    );
  const value = Number(match[1]);
  return match[2] === "ms" ? value / 1_000 : match[2] === "m" ? value * 60 : value;
}

/** uniform | zipf:1.1 | hotspot:0.1:0.9 | sequential */
export function parseKeys(raw: string): KeyDistribution {
  const [kind, ...params] = raw.split(":");
  const numbers = params.map(Number);
  if (kind === "uniform" && params.length === 0) return { kind };
  if (kind === "sequential" && params.length === 0) return { kind };
  if (kind === "zipf" && numbers.length === 1 && (numbers[0] as number) > 0) {
    return { kind, exponent: numbers[0] as number };
  }
  if (kind === "hotspot" && numbers.length === 2 && numbers.every((n) => n > 0 && n < 1)) {
    return { kind, hotFraction: numbers[0] as number, hotShare: numbers[1] as number };
  }
  throw new UsageError(
    `Cannot parse --keys: expected uniform, zipf:EXPONENT, hotspot:HOT_FRACTION:HOT_SHARE or sequential: received ${raw}`,
  );
}

/** The command line → a plan (and the options that are not part of it). */
export function planFromArgs(args: string[]): {
  plan: AttackPlan;
  tool: ToolName | undefined;
  json: boolean;
  out: string | undefined;
  csv: string | undefined;
  reset: boolean;
  toolVersion: string | undefined;
  exportTo: { parallelism: number; name: string } | null;
  importFiles: string[] | null;
} {
  let values: ReturnType<typeof parse>["values"];
  let positionals: string[];
  function parse() {
    return parseArgs({
      args,
      options: {
        url: { type: "string" },
        tool: { type: "string" },
        rate: { type: "string" },
        connections: { type: "string" },
        ramp: { type: "string" },
        duration: { type: "string", default: "10s" },
        warmup: { type: "string", default: "0s" },
        timeout: { type: "string", default: "5s" },
        method: { type: "string", default: "GET" },
        body: { type: "string" },
        header: { type: "string", multiple: true, default: [] },
        keys: { type: "string", default: "uniform" },
        keyspace: { type: "string", default: "100000" },
        seed: { type: "string", default: "42" },
        targets: { type: "string", default: "100000" },
        "max-connections": { type: "string", default: "256" },
        json: { type: "boolean", default: false },
        out: { type: "string" },
        export: { type: "string" },
        parallelism: { type: "string", default: "1" },
        name: { type: "string", default: "cachelab" },
        import: { type: "string" },
        csv: { type: "string" },
        reset: { type: "boolean", default: false },
        "tool-version": { type: "string" },
      },
      strict: true,
      allowPositionals: true,
    });
  }
  try {
    ({ values, positionals } = parse());
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (!values.url) throw new UsageError("Cannot attack: --url is required");
  let url: URL;
  try {
    url = new URL(values.url.replaceAll("{", "%7B").replaceAll("}", "%7D"));
  } catch {
    throw new UsageError(`Cannot parse --url: not a URL: received ${values.url}`);
  }
  if (values.tool !== undefined && !(TOOL_NAMES as readonly string[]).includes(values.tool)) {
    throw new UsageError(`Cannot use --tool ${values.tool}: expected one of ${TOOL_NAMES.join(", ")}`);
  }
  const method = values.method.toUpperCase();
  if (!["GET", "PUT", "POST", "DELETE"].includes(method)) {
    throw new UsageError(`Cannot use --method ${values.method}: expected GET, PUT, POST or DELETE`);
  }
  if (values.connections !== undefined && (values.rate !== undefined || values.ramp !== undefined)) {
    throw new UsageError("Cannot combine --connections (closed model) with --rate/--ramp (open models)");
  }
  const durationS = parseDurationS("duration", values.duration);
  let model: LoadModel;
  let measuredS = durationS;
  if (values.connections !== undefined) {
    model = { kind: "closed", connections: parsePositiveInt("connections", values.connections) };
  } else if (values.ramp !== undefined) {
    const stages = values.ramp.split(",").map((stage) => {
      const [target, duration] = stage.split(":");
      if (target === undefined || duration === undefined) {
        throw new UsageError(`Cannot parse --ramp: expected RATE:DURATION[,…]: received ${values.ramp}`);
      }
      return { targetRps: parsePositiveInt("ramp", target), durationS: parseDurationS("ramp", duration) };
    });
    model = { kind: "ramping", startRps: parsePositiveInt("rate", values.rate ?? "1"), stages };
    measuredS = stages.reduce((sum, stage) => sum + stage.durationS, 0);
  } else {
    model = { kind: "open", rateRps: parsePositiveInt("rate", values.rate ?? "100") };
  }
  const headers: Record<string, string> = {};
  for (const header of values.header) {
    const colon = header.indexOf(":");
    if (colon < 1) throw new UsageError(`Cannot parse --header: expected 'Name: value': received ${header}`);
    headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
  }
  const path = decodeURI(url.pathname + url.search)
    .replaceAll("%7B", "{")
    .replaceAll("%7D", "}");
  const plan: AttackPlan = {
    name: "attack",
    baseUrl: url.origin,
    model,
    durationS: measuredS,
    warmupS: parseDurationS("warmup", values.warmup),
    timeoutS: parseDurationS("timeout", values.timeout),
    headers,
    requests: [
      {
        name: "request",
        weight: 1,
        method: method as HttpMethod,
        path,
        ...(values.body === undefined ? {} : { body: values.body }),
      },
    ],
    keys: {
      distribution: parseKeys(values.keys),
      keyspace: parsePositiveInt("keyspace", values.keyspace),
      seed: Number(values.seed),
    },
    targetCount: parsePositiveInt("targets", values.targets),
    maxConnections: parsePositiveInt("max-connections", values["max-connections"]),
  };
  if (!Number.isInteger(plan.keys.seed) || plan.keys.seed < 0) {
    throw new UsageError(`Cannot parse --seed: expected a non-negative integer: received ${values.seed}`);
  }
  if (values.export !== undefined && values.export !== "k6-operator") {
    throw new UsageError(`Cannot parse --export: expected k6-operator: received ${values.export}`);
  }
  if (values.import !== undefined && values.import !== "k6-json") {
    throw new UsageError(`Cannot parse --import: expected k6-json: received ${values.import}`);
  }
  if (values.import === undefined && positionals.length > 0) {
    throw new UsageError(`Unexpected argument ${positionals[0]}: files follow --import k6-json only`);
  }
  if (values.import !== undefined && positionals.length === 0) {
    throw new UsageError("Cannot import: --import k6-json needs the runners' JSON files");
  }
  return {
    plan,
    tool: values.tool as ToolName | undefined,
    json: values.json,
    out: values.out,
    csv: values.csv === undefined ? undefined : checkCsvPath("csv", values.csv),
    reset: values.reset,
    toolVersion: values["tool-version"],
    exportTo:
      values.export === undefined
        ? null
        : { parallelism: parsePositiveInt("parallelism", values.parallelism), name: values.name },
    importFiles: values.import === undefined ? null : positionals,
  };
}

/** The k6 on this machine's version, or null when it is not installed. */
async function localK6Version(): Promise<string | null> {
  try {
    return (await (await findTool("k6")).detect()).version;
  } catch {
    return null;
  }
}

/** A row's run id, start time (`startedAt`, default now) and machine. */
function rowBase(now = new Date()) {
  return { runId: newRunId(now), startedAt: now.toISOString(), machine: machine() };
}

/** The targets the tool had and sent, as the row's list_targets, targets_sent and target_reuse_ratio read them. */
function targetColumns(result: NormalizedResult, list: number) {
  const sent = result.sent;
  return {
    list,
    sent: sent === null ? null : sentCount(sent),
    reused: sent === null ? null : reusedPositions(sent, list),
  };
}

/** Appends the row to `path` (or to its next version when that file has an older schema), and says where. */
function writeRow(path: string, row: CsvRow): void {
  const { path: target, notice } = resolveCsvPath(resolve(path));
  if (notice) console.error(notice);
  appendRow(target, row);
  console.error(`row (${row.valid ? "valid" : `INVALID: ${row.invalid_reason}`}) appended to ${target}`);
}

function fmt(value: number | null, digits = 2): string {
  return value === null ? "n/a" : value.toFixed(digits);
}

/** A readable summary of one result. */
export function summarize(result: NormalizedResult, argv: string[]): string {
  const l = result.latencyMs;
  const lines = [
    `${result.tool} ${result.toolVersion} · ${result.model} model · ${fmt(result.durationS)} s`,
    `command: ${argv.join(" ")}`,
    `offered ${fmt(result.offeredRps, 1)} rps · achieved ${fmt(result.achievedRps, 1)} rps · ok ${fmt(result.okRps, 1)} rps`,
    `requests ${result.requests ?? "n/a"} · completed ${result.completed ?? "n/a"} · ok ${result.ok ?? "n/a"} · dropped/aborted ${result.droppedOrAborted ?? "n/a"}`,
    `status: ${
      result.statusCounts
        ? Object.entries(result.statusCounts)
            .map(([code, n]) => `${code}×${n}`)
            .join(" ")
        : "n/a"
    }`,
    `errors: ${
      result.errorCounts === null
        ? "n/a"
        : Object.entries(result.errorCounts)
            .map(([message, n]) => `${message} ×${n}`)
            .join("; ") || "none"
    }`,
    `latency ms: min ${fmt(l.min, 3)} · mean ${fmt(l.mean, 3)} · p50 ${fmt(l.p50, 3)} · p90 ${fmt(l.p90, 3)} · p95 ${fmt(l.p95, 3)} · p99 ${fmt(l.p99, 3)} · p99.9 ${fmt(l.p99_9, 3)} · max ${fmt(l.max, 3)}`,
    `bytes in: ${result.bytesIn ?? "n/a"}`,
  ];
  return lines.join("\n");
}

export async function main(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof planFromArgs>;
  try {
    parsed = planFromArgs(args);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  if (parsed.exportTo) {
    const dir = resolve(parsed.out ?? join(REPO_ROOT, "results", `k6-operator-${parsed.exportTo.name}`));
    try {
      const exported = exportK6Operator(parsed.plan, generateTargets(parsed.plan), {
        ...parsed.exportTo,
        k6Version: await localK6Version(),
      });
      mkdirSync(dir, { recursive: true });
      for (const [name, content] of Object.entries(exported.files)) writeFileSync(join(dir, name), content);
    } catch (error) {
      console.error((error as Error).message);
      return 2;
    }
    console.log(
      `k6 operator ${K6_OPERATOR_VERSION} TestRun "${parsed.exportTo.name}" (${parsed.exportTo.parallelism} runners) in ${dir}\n` +
        `  kubectl apply -f ${join(dir, "configmap.yaml")} -f ${join(dir, "testrun.yaml")}\n` +
        `  then copy each runner's ${SAMPLES_PATH} out (kubectl cp) and merge them:\n` +
        `  bun run attack --import k6-json run-*.json <the same plan flags>`,
    );
    return 0;
  }
  if (parsed.importFiles) {
    try {
      const files = parsed.importFiles;
      const outputs = files.map((file) => readFileSync(file, "utf8"));
      const version = parsed.toolVersion ?? (await localK6Version()) ?? "";
      const result = importK6Json(outputs, parsed.plan, version);
      console.log(parsed.json ? JSON.stringify(result) : summarize(result, ["k6 operator", ...files]));
      if (parsed.csv) {
        const k6 = await findTool("k6");
        const row = attackRow({
          ...rowBase(),
          source: "k6-operator import",
          plan: parsed.plan,
          result,
          latencyResolutionMs: k6.capabilities.latencyResolutionMs,
          topology: `k6 operator: ${files.length} runner pod${files.length === 1 ? "" : "s"} (execution segments), merged from every request of their --out json files`,
          loadgenHosts: files.length,
          targets: targetColumns(result, parsed.plan.targetCount),
          server: null,
          rawPath: resolve(dirname(files[0] as string)),
        });
        writeRow(parsed.csv, row);
      }
      return 0;
    } catch (error) {
      console.error((error as Error).message);
      return 2;
    }
  }
  // Ctrl-C stops the tool (its whole group, waited for) and exits 130; a second one leaves at once.
  const interrupt = abortOnSignals("stopping the tool and waiting for its processes to exit");
  const workDir = resolve(
    parsed.out ??
      join(REPO_ROOT, "results", "raw", `attack-${new Date().toISOString().replace(/[:.]/g, "-")}`),
  );
  mkdirSync(workDir, { recursive: true });
  try {
    // Against a cachelab server, its counters over the measured run go into the row.
    const base = parsed.plan.baseUrl;
    // A server this command did not start: its admin token comes from CACHELAB_ADMIN_TOKEN here.
    const remote = { url: base, adminToken: envAdminToken() };
    const found = parsed.csv || parsed.reset ? await readInfo(base, 2_000) : null;
    const info = typeof found === "string" ? null : found;
    if (parsed.reset) {
      if (info === null) {
        console.error(`Cannot --reset ${base}: it does not answer GET /info as a cachelab server`);
        return 2;
      }
      await postAdmin(remote, "/admin/reset", {
        timeoutMs: 30_000,
        what: `reset ${base} (POST /admin/reset)`,
      });
    }
    let before: ServerStatsSnapshot | null = null;
    const startedAt = new Date();
    const run = await runAttack(parsed.plan, {
      tool: parsed.tool,
      workDir,
      signal: interrupt.signal,
      ...(info
        ? {
            beforeMeasured: async () => {
              before = await startStatsWindow(remote);
            },
          }
        : {}),
    });
    if (parsed.csv) {
      const after = info ? await serverStats({ url: base }) : null;
      const result = run.measured.result;
      const server = info && before && after ? { info, before, after } : null;
      const seed = info?.seed;
      const row = attackRow({
        ...rowBase(startedAt),
        source: "run",
        plan: parsed.plan,
        result,
        latencyResolutionMs: run.tool.capabilities.latencyResolutionMs,
        topology: `one ${run.tool.name} process on this machine against ${parsed.plan.baseUrl}`,
        loadgenHosts: 0,
        targets: targetColumns(result, run.targets.length),
        server,
        stream:
          parsed.reset && server && seed
            ? checkStream(run, parsed.plan, { ...server, info: { ...server.info, seed } })
            : null,
        rawPath: workDir,
      });
      writeRow(parsed.csv, row);
    }
    if (parsed.json) {
      console.log(JSON.stringify(run.measured.result));
    } else {
      console.log(summarize(run.measured.result, run.measured.argv));
      const sent = run.measured.result.sent;
      if (sent !== null) {
        const reused = reusedPositions(sent, run.targets.length);
        console.log(
          `targets: ${sentCount(sent)} sent from a list of ${run.targets.length}; ${reused} re-sent a position` +
            (sent.kind === "sampled" ? " (expected: the tool samples its list with replacement)" : ""),
        );
      }
      console.log(`raw output: ${workDir}`);
    }
    return 0;
  } catch (error) {
    console.error(`${(error as Error).message}`);
    if (interrupt.signal.aborted) return 130;
    return error instanceof RangeError ? 2 : 1;
  } finally {
    interrupt.dispose();
  }
}

if (import.meta.main) process.exit(await main(process.argv.slice(2)));
