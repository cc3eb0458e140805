/**
 * `bun run attack`: one plan against any URL through one real load tool; a readable summary, or with
 * `--json` the normalized result as one JSON object on stdout. Raw tool output is kept under results/raw/.
 *
 *   bun run attack --url 'http://127.0.0.1:3000/products/{id}' --tool oha --rate 500 --duration 10s \
 *     --keys zipf:1.1 --keyspace 100000 [--json]
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { envAdminToken, postAdmin } from "../cell/admin.ts";
import { type ServerStatsSnapshot, serverStats, startStatsWindow } from "../cell/counters.ts";
import { readInfo } from "../cell/remote.ts";
import {
  exportK6Operator,
  importK6Json,
  K6_OPERATOR_VERSION,
  type K6OperatorExport,
  SAMPLES_PATH,
} from "../load/k6_operator.ts";
import { attackTool, findTool, runAttack } from "../load/run_attack.ts";
import { remoteWriteProblems, remoteWriteRefusal } from "../load/tools/k6_prometheus.ts";
import type { AttackPlan, NormalizedResult } from "../plan/attack_plan.ts";
import { listSize, replayListSize, requestsBound, reusedPositions, sentCount } from "../plan/segments.ts";
import { traceTemplatesRefusal } from "../plan/targets.ts";
import { attackRow, checkStream } from "../results/attack_row.ts";
import { appendRow, type CsvRow, newRunId, resolveCsvPath } from "../results/csv.ts";
import { machine } from "../results/machine.ts";
import { REPO_ROOT, rawRoot } from "../shared/repo.ts";
import { shellCommand } from "../shared/shell.ts";
import { holdTrace } from "../trace/loaded.ts";
import { loadTraceKeys } from "../trace/trace_plan.ts";
import { abortOnSignals, asksForHelp, exitWith, inputFileProblem, refuseUsage, UsageError } from "./args.ts";
import { planFromArgs, USAGE } from "./attack_args.ts";

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

/** A readable summary of one result; `command` says what produced it (a line to paste into bash, for a run). */
export function summarize(result: NormalizedResult, command: string): string {
  const l = result.latencyMs;
  const lines = [
    `${result.tool} ${result.toolVersion} · ${result.model} model · ${fmt(result.durationS)} s`,
    `command: ${command}`,
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

/**
 * A trace plan settled on its trace: read once, its keyspace the trace's distinct keys, each run's list
 * what the run can send at its rate (plus 1%), and refused when the trace is shorter than both lists.
 */
async function settleTrace(plan: AttackPlan): Promise<AttackPlan> {
  const keys = plan.keys.distribution;
  if (keys.kind !== "trace") return plan;
  const trace = holdTrace(keys, await loadTraceKeys(keys));
  const templates = traceTemplatesRefusal(plan, trace);
  if (templates !== null) throw new RangeError(templates);
  const targetCount = replayListSize(requestsBound(plan, Math.max(plan.warmupS, plan.durationS)));
  const needed = (plan.warmupS > 0 ? 2 : 1) * targetCount;
  if (needed > trace.keyIndex.length) {
    throw new RangeError(
      `Cannot replay trace ${keys.file}: it holds ${trace.keyIndex.length} requests, and the warm-up and the measured run need ${needed} at this rate; a trace is never replayed: lower --rate, --duration or --warmup`,
    );
  }
  return { ...plan, keys: { ...plan.keys, keyspace: trace.keys.length }, targetCount };
}

export async function main(args: string[]): Promise<number> {
  if (asksForHelp(args)) {
    console.log(USAGE);
    return 0;
  }
  let parsed: ReturnType<typeof planFromArgs>;
  try {
    parsed = planFromArgs(args);
  } catch (error) {
    if (error instanceof UsageError) {
      return refuseUsage("attack", error.message);
    }
    throw error;
  }
  try {
    parsed.plan = await settleTrace(parsed.plan);
  } catch (error) {
    return refuseUsage("attack", (error as Error).message);
  }
  if (parsed.prometheusRw) {
    // Before the run, not after it: k6 exits 0 when every write failed, and the run would be for nothing.
    const refusal = await remoteWriteRefusal(parsed.prometheusRw.url);
    if (refusal !== null) {
      return refuseUsage(
        "attack",
        `Cannot send k6's metrics to --prometheus-rw ${parsed.prometheusRw.url}: ${refusal}`,
      );
    }
  }
  if (parsed.exportTo) {
    const dir = resolve(parsed.out ?? join(REPO_ROOT, "results", `k6-operator-${parsed.exportTo.name}`));
    const { volumeClaim } = parsed.exportTo;
    let exported: K6OperatorExport;
    try {
      exported = await exportK6Operator(parsed.plan, {
        ...parsed.exportTo,
        k6Version: await localK6Version(),
      });
    } catch (error) {
      return refuseUsage("attack", (error as Error).message);
    }
    try {
      mkdirSync(dir, { recursive: true });
      for (const [name, content] of Object.entries(exported.files)) writeFileSync(join(dir, name), content);
    } catch (error) {
      return refuseUsage("attack", `Cannot write the export to --out ${dir}: ${(error as Error).message}`);
    }
    const runnerFiles = Object.keys(exported.files).filter((name) => !name.endsWith(".yaml"));
    console.log(
      `k6 operator ${K6_OPERATOR_VERSION} TestRun "${parsed.exportTo.name}" (${parsed.exportTo.parallelism} runners) in ${dir}\n` +
        (exported.generated
          ? `  the script generates the plan's ${parsed.plan.targetCount} targets from seed ${parsed.plan.keys.seed}: `
          : `  the script replays ${parsed.plan.targetCount} targets: `) +
        `${runnerFiles.join(" + ")} = ${exported.dataBytes} bytes${volumeClaim === undefined ? " in the ConfigMap" : ""}\n` +
        (volumeClaim === undefined
          ? `  kubectl apply -f ${join(dir, "configmap.yaml")} -f ${join(dir, "testrun.yaml")}\n`
          : `  copy ${runnerFiles.join(" and ")} onto the PersistentVolumeClaim ${volumeClaim}, then kubectl apply -f ${join(dir, "testrun.yaml")}\n`) +
        `  then copy each runner's ${SAMPLES_PATH} out (kubectl cp) and merge them:\n` +
        `  bun run attack --import k6-json run-*.json <the same plan flags>`,
    );
    return 0;
  }
  if (parsed.importFiles) {
    for (const file of parsed.importFiles) {
      const problem = inputFileProblem(file);
      if (problem !== null) return refuseUsage("attack", `Cannot import: ${problem}: received ${file}`);
    }
    try {
      const files = parsed.importFiles;
      const outputs = files.map((file) => readFileSync(file, "utf8"));
      const version = parsed.toolVersion ?? (await localK6Version()) ?? "";
      const result = importK6Json(outputs, parsed.plan, version);
      console.log(
        parsed.json
          ? JSON.stringify(result)
          : summarize(result, `k6 operator runners, merged from ${files.join(" ")}`),
      );
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
      return refuseUsage("attack", (error as Error).message);
    }
  }
  if (!parsed.targetsGiven && parsed.plan.keys.distribution.kind !== "trace") {
    // A tool that samples its list (oha) needs a longer one than the plan's bound to keep its draws fresh.
    const { tool } = await attackTool(parsed.plan, parsed.tool);
    const size = listSize(
      tool.capabilities.sends,
      parsed.plan,
      Math.max(parsed.plan.warmupS, parsed.plan.durationS),
    );
    if (typeof size === "string") {
      return refuseUsage(
        "attack",
        `Cannot size ${tool.name}'s target list: ${size}; pass --targets N to accept re-sent targets`,
      );
    }
    parsed.plan = { ...parsed.plan, targetCount: size };
  }
  // Ctrl-C stops the tool (its whole group, waited for) and exits 130; a second one leaves at once.
  const interrupt = abortOnSignals("stopping the tool and waiting for its processes to exit");
  const workDir = resolve(
    parsed.out ?? join(rawRoot(), `attack-${new Date().toISOString().replace(/[:.]/g, "-")}`),
  );
  mkdirSync(workDir, { recursive: true });
  // The dashboards' testid filter: the raw output's directory, so a series leads back to its files.
  const prometheusRw = parsed.prometheusRw && {
    ...parsed.prometheusRw,
    testId: basename(workDir).replace(/[^\w.-]/g, "_"),
  };
  try {
    // Against a cachelab server, its counters over the measured run go into the row.
    const base = parsed.plan.baseUrl;
    // A server this command did not start: its admin token comes from CACHELAB_ADMIN_TOKEN here.
    const remote = { url: base, adminToken: envAdminToken() };
    const found = parsed.csv || parsed.reset ? await readInfo(base, 2_000) : null;
    const info = typeof found === "string" ? null : found;
    if (parsed.reset) {
      if (info === null) {
        return refuseUsage(
          "attack",
          `Cannot --reset ${base}: it does not answer GET /info as a cachelab server`,
        );
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
      ...(prometheusRw ? { prometheusRw } : {}),
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
      const { argv, dir, env } = run.measured;
      console.log(summarize(run.measured.result, shellCommand(argv, { cwd: dir, ...(env ? { env } : {}) })));
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
    if (prometheusRw) {
      // The measured result stands (k6 exits 0 either way); what Prometheus holds of it may not.
      const problems = remoteWriteProblems(run.measured.raw.stderr);
      const where = `${prometheusRw.url} (testid=${prometheusRw.testId}, trends as ${prometheusRw.trends})`;
      if (problems.length > 0) {
        console.error(
          `k6's metrics did not all reach ${where}: k6 logged ${problems.length} failed write(s), the first: ${problems[0]}`,
        );
        return 1;
      }
      console.error(`k6's metrics of the measured run: ${where}`);
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

if (import.meta.main) await exitWith(() => main(process.argv.slice(2)));
