/** `bun run attack`'s command line: its usage, and the flags read into one attack plan and the options beside it. */
import { PROMETHEUS_TRENDS, type PrometheusTrends } from "../load/tools/k6_prometheus.ts";
import {
  type AttackPlan,
  type HttpMethod,
  type KeyDistribution,
  type LoadModel,
  TOOL_NAMES,
  type ToolName,
} from "../plan/attack_plan.ts";
import { replayListSize, requestsBound } from "../plan/segments.ts";
import { parseFlags, parsePositiveInt, UsageError } from "./args.ts";
import { checkCsvPath } from "./csv_path.ts";
import { TRACE_OPTIONS, traceKeysFrom, traceUsage } from "./trace_args.ts";

/** `bun run attack --help`, and what a usage error prints under its message. */
export const USAGE = `usage: bun run attack --url URL [options]

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
                          their own N, never the same ones (default: what the longer run can send at its
                          rate, plus 1%, or for oha the list that keeps its draws fresh; always so with
                          --trace)
  --max-connections N     open model: most connections/VUs the tool may open (default 256)
  --json                  print the normalized result as one JSON object
  --prometheus-rw URL     k6 (the tool it picks when --tool is not given): also send k6's own metrics of the
                          measured run to this Prometheus remote-write endpoint, e.g.
                          http://HOST:9090/api/v1/write (Prometheus needs --web.enable-remote-write-receiver),
                          tagged testid=<the --out directory's name>; an empty write checks it first
  --prometheus-trends M   how k6 writes its trends there: stats (default: p50, p95, p99 and max gauges;
                          Grafana dashboard 19665) or native-histogram (dashboard 18030; Prometheus needs
                          --enable-feature=native-histograms); docs/metrics.md#k6-into-prometheus
  --out DIR               where raw output goes (default results/raw/attack-<time>)
  --csv FILE              also append the run as one row of the experiments' CSV schema (experiment
                          "attack"); against a cachelab server its settings and counters fill the server's
                          columns and check the tool's counts
  --reset                 first reset the cachelab server at --url (POST /admin/reset: an empty cache), so
                          the row's hit ratio is checked against a simulation of the stream sent; without
                          it a cache of unknown history gives no hit ratio to record; sends
                          CACHELAB_ADMIN_TOKEN from this environment as the server's admin token

  --export k6-operator    instead of running: write the plan for the k6 operator (script.js, configmap.yaml,
                          testrun.yaml; a trace's targets.json) to --out; with --parallelism N (runner pods) and
                          --name NAME (TestRun and ConfigMap, default cachelab); the script generates
                          the key stream from --seed, so the ConfigMap holds it alone at any rate; a trace
                          goes beside it as targets.json, or with --volume-claim CLAIM on that claim
  --import k6-json FILE…  instead of running: merge the runners' --out json files of such a TestRun into
                          one result, for the same plan flags (with --csv, one row); --tool-version V names
                          the runners' k6 (default: this machine's, the version the export pins)
  -h, --help              this text

  a trace instead of --keys, replayed in its order: a GET of --url takes its reads, and a PUT to the same
  path (body {"stock":1}) its writes and deletes
${traceUsage(26)}`;

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
  exportTo: { parallelism: number; name: string; volumeClaim?: string } | null;
  /** Whether --targets was given (else `plan.targetCount` is the plan's own bound, which a caller may refine). */
  targetsGiven: boolean;
  importFiles: string[] | null;
  /** `--prometheus-rw`: k6 also writes its metrics there (the testid is the caller's, from its --out). */
  prometheusRw: { url: string; trends: PrometheusTrends } | null;
} {
  let values: ReturnType<typeof parse>["values"];
  let positionals: string[];
  function parse() {
    return parseFlags({
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
        targets: { type: "string" },
        "max-connections": { type: "string", default: "256" },
        json: { type: "boolean", default: false },
        out: { type: "string" },
        export: { type: "string" },
        parallelism: { type: "string", default: "1" },
        name: { type: "string", default: "cachelab" },
        "volume-claim": { type: "string" },
        import: { type: "string" },
        csv: { type: "string" },
        reset: { type: "boolean", default: false },
        "tool-version": { type: "string" },
        "prometheus-rw": { type: "string" },
        "prometheus-trends": { type: "string" },
        ...TRACE_OPTIONS,
      },
      strict: true,
      allowPositionals: true,
    });
  }
  ({ values, positionals } = parse()); // parseFlags: a UsageError on a bad flag
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
  const trace = traceKeysFrom(values);
  if (trace && method !== "GET") {
    throw new UsageError(`Cannot replay a trace with --method ${method}: its reads are GETs of --url`);
  }
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
      // A trace's writes and deletes: a PUT of the same row, which invalidates it as a write would.
      ...(trace ? [{ name: "write", weight: 1, method: "PUT" as const, path, body: '{"stock":1}' }] : []),
    ],
    keys: {
      distribution: trace ?? parseKeys(values.keys),
      keyspace: parsePositiveInt("keyspace", values.keyspace),
      seed: Number(values.seed),
    },
    targetCount: 0,
    maxConnections: parsePositiveInt("max-connections", values["max-connections"]),
  };
  // The plan sends at most requestsBound: a list that long plus a margin is fresh throughout. An export's
  // script generates its stream (no list to hold), so no cap; a trace is sized on its trace (attack.ts).
  const cluster = values.export !== undefined || values.import !== undefined;
  plan.targetCount =
    values.targets !== undefined
      ? parsePositiveInt("targets", values.targets)
      : cluster
        ? replayListSize(requestsBound(plan, plan.durationS), Number.POSITIVE_INFINITY)
        : replayListSize(requestsBound(plan, Math.max(plan.warmupS, plan.durationS)));
  if (values["volume-claim"] !== undefined && values.export === undefined) {
    throw new UsageError(
      "Cannot use --volume-claim without --export k6-operator: it is where the TestRun reads the files",
    );
  }
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
  const prometheusRw = prometheusRwFrom(values, cluster);
  return {
    plan,
    // The remote-write output is k6's: with it, k6 is the tool when none is named.
    tool: (values.tool ?? (prometheusRw ? "k6" : undefined)) as ToolName | undefined,
    json: values.json,
    out: values.out,
    csv: values.csv === undefined ? undefined : checkCsvPath("csv", values.csv),
    reset: values.reset,
    toolVersion: values["tool-version"],
    exportTo:
      values.export === undefined
        ? null
        : {
            parallelism: parsePositiveInt("parallelism", values.parallelism),
            name: values.name,
            ...(values["volume-claim"] === undefined ? {} : { volumeClaim: values["volume-claim"] }),
          },
    targetsGiven: values.targets !== undefined,
    importFiles: values.import === undefined ? null : positionals,
    prometheusRw,
  };
}

/** `--prometheus-rw URL [--prometheus-trends M]` → where and how k6 writes its metrics, or null. */
function prometheusRwFrom(
  values: { tool?: string; "prometheus-rw"?: string; "prometheus-trends"?: string },
  cluster: boolean,
): { url: string; trends: PrometheusTrends } | null {
  const raw = values["prometheus-rw"];
  const trends = values["prometheus-trends"];
  if (raw === undefined) {
    if (trends !== undefined) {
      throw new UsageError(
        "Cannot use --prometheus-trends without --prometheus-rw URL: it says how k6 writes there",
      );
    }
    return null;
  }
  if (values.tool !== undefined && values.tool !== "k6") {
    throw new UsageError(
      `Cannot use --prometheus-rw with --tool ${values.tool}: only k6 writes its own metrics to Prometheus (its experimental-prometheus-rw output)`,
    );
  }
  if (cluster) {
    throw new UsageError(
      "Cannot use --prometheus-rw with --export or --import: it is for a run on this machine",
    );
  }
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    // refused below
  }
  // A bare host:port is Prometheus' UI, never its receiver: k6 would POST to / and be refused at every flush.
  if (url === null || !["http:", "https:"].includes(url.protocol) || url.pathname === "/") {
    throw new UsageError(
      `Cannot parse --prometheus-rw: expected a remote-write endpoint such as http://HOST:9090/api/v1/write: received ${raw}`,
    );
  }
  if (trends !== undefined && !(PROMETHEUS_TRENDS as readonly string[]).includes(trends)) {
    throw new UsageError(
      `Cannot parse --prometheus-trends: expected ${PROMETHEUS_TRENDS.join(" or ")}: received ${trends}`,
    );
  }
  return { url: raw, trends: (trends ?? "stats") as PrometheusTrends };
}
