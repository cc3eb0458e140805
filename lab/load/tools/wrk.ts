/**
 * wrk 4.1.0 (wg/wrk, Debian build): closed model only (`-t T -c N -d Ds --timeout Ts`, whole seconds).
 *
 * Targets: a generated Lua script reads wrk-targets.tsv (method, path, hex body) in init() and pre-builds
 * its thread's stripe with wrk.format(method, path, headers, body); request() cycles over it. Each of the T
 * threads has its own Lua state, so thread k (0-based) sends targets k, k+T, k+2T, … (wrapping within its
 * stripe): together the threads walk the list in plan order instead of T threads sending the same keys in
 * lockstep, and the per-thread `issued` counts say exactly which positions were sent. T is the
 * largest divisor of N not above the CPU count (wrk opens N / T connections per thread, rounding down).
 *
 * Counting: response() counts statuses per thread (wrk itself only counts status > 399); done() gathers
 * them with thread:get and writes wrk.json (the text report goes to stdout first, so done() writes a file).
 * The script also reports how many requests each thread started (`issued`), which tells exactly which
 * targets were sent. wrk 4.1.0 calls request() once on the first thread before the run to check that the
 * request parses (script_verify_request); that call sends nothing and does not advance the sequence.
 *
 * wrk's semantics, passed through (FACTS 1.5 pitfall 15): a response slower than --timeout still counts
 * as completed with its status, but is left out of the latency histogram and counted as `timeout`; a
 * request never answered is never counted. After the run wrk adds synthetic samples to the histogram
 * (stats_correct). A refused connection surfaces as a `write` error (the non-blocking connect "succeeds"),
 * and wrk reconnects in a busy loop, calling request() each time: against a dead server `requests` and
 * `write` run to tens of thousands a second. Units: µs → ms; bytesIn is wrk's wire byte count (headers
 * included).
 */
import { availableParallelism } from "node:os";
import type { AttackPlan, LatencyMs, NormalizedResult, Target } from "../../plan/attack_plan.ts";
import type { Capabilities, Detection, PreparedRun, RawOutput, RunContext, Tool } from "../tool.ts";
import { detectByVersionFlag } from "./_detect.ts";
import { okCount, outputReader, sum } from "./_parse.ts";

const INSTALL = "apt-get install -y wrk";
const SCRIPT = "wrk.lua";
const TARGETS = "wrk-targets.tsv";
const OUTPUT = "wrk.json";
const WRK_ERRORS = ["connect", "read", "write", "timeout"] as const;

const capabilities: Capabilities = {
  models: ["closed"],
  mixedMethods: true,
  percentiles: ["min", "mean", "p50", "p90", "p95", "p99", "p99_9", "max"],
  statusCounts: true,
  sends: "stripes",
  latencyResolutionMs: 0.001, // microseconds
  timeline: false,
  notes:
    "closed model only, whole seconds; targets in plan order (thread k sends k, k+T, …); statuses from a " +
    "Lua response() hook; latency histogram capped at --timeout (slower responses count as completed and " +
    "as `timeout`) and padded with synthetic samples by stats_correct; bytesIn is wire bytes; no " +
    "timeline: wrk has no per-request output and its Lua hooks get no request timings (use the server's " +
    "per-second counters).",
};

async function detect(): Promise<Detection> {
  // `wrk -v` prints its version, then the usage, and exits 1.
  return detectByVersionFlag("wrk", {
    extraDirs: ["/usr/local/bin", "/usr/bin"],
    flag: "-v",
    version: /^wrk (?:debian\/)?(\d+\.\d+\.\d+)/m,
    install: INSTALL,
  });
}

function refusal(plan: AttackPlan): string | null {
  const model = plan.model;
  if (model.kind !== "closed") return "wrk has no open model; use wrk2/oha/vegeta/k6";
  if ((plan.instanceUrls?.length ?? 1) > 1) {
    return `wrk sends to one host (its URL argument), not to ${plan.instanceUrls?.length} instances; use vegeta, k6 or oha`;
  }
  if (!(Number.isInteger(model.connections) && model.connections > 0)) {
    return `wrk's -c needs a positive integer connections: received ${model.connections}`;
  }
  for (const [name, value] of [
    ["durationS", plan.durationS],
    ["warmupS", plan.warmupS],
    ["timeoutS", plan.timeoutS],
  ] as const) {
    const min = name === "warmupS" ? 0 : 1;
    if (!(Number.isInteger(value) && value >= min)) {
      return `wrk takes whole seconds (-d, --timeout): ${name} must be an integer >= ${min}: received ${value}`;
    }
  }
  return null;
}

/** The largest divisor of `connections` not above the CPU count, so every thread gets its share. */
export function wrkThreads(connections: number, cpus = availableParallelism()): number {
  for (let threads = Math.min(connections, Math.max(1, cpus)); threads > 1; threads--) {
    if (connections % threads === 0) return threads;
  }
  return 1;
}

/** A Lua string literal for `value` (bytes outside printable ASCII as decimal escapes). */
function luaString(value: string): string {
  let literal = '"';
  for (const byte of new TextEncoder().encode(value)) {
    literal +=
      byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c
        ? String.fromCharCode(byte)
        : `\\${String(byte).padStart(3, "0")}`;
  }
  return `${literal}"`;
}

function luaScript(headers: Record<string, string>, threads: number, addContentType: boolean): string {
  const headerTable = Object.entries(headers)
    .map(([name, value]) => `[${luaString(name)}] = ${luaString(value)}`)
    .join(", ");
  return `-- Generated by cachelab lab/load/tools/wrk.ts: replays ${TARGETS} in plan order and writes ${OUTPUT}.
local THREADS = ${threads}
local HEADERS = { ${headerTable} }
local ADD_CONTENT_TYPE = ${addContentType}

local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("id", #threads)
end

local prepared = {}
local position = 0
local verifying = false
issued = 0
statuses = {}

function init(args)
  local index = 0
  for line in io.lines(${luaString(TARGETS)}) do
    local method, path, hex = line:match("^(%u+)\\t(%S+)\\t(%x*)$")
    if method == nil then error("cannot parse ${TARGETS} line: " .. line) end
    index = index + 1
    -- This thread's stripe only: targets id, id+T, id+2T, … (1-based)
    if (index - 1) % THREADS == id - 1 then
      local headers = {}
      for name, value in pairs(HEADERS) do headers[name] = value end
      local body = nil
      if hex ~= "" then
        body = (hex:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
        if ADD_CONTENT_TYPE then headers["content-type"] = "application/json" end
      end
      prepared[#prepared + 1] = wrk.format(method, path, headers, body)
    end
  end
  if #prepared == 0 then error("thread " .. id .. " has no targets: fewer targets than threads") end
  -- wrk calls request() once on the first thread to check the request parses; that call sends nothing.
  verifying = id == 1
end

function request()
  local r = prepared[position % #prepared + 1]
  if verifying then
    verifying = false
    return r
  end
  position = position + 1
  issued = issued + 1
  return r
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

local function number(x)
  if x ~= x or x == math.huge or x == -math.huge then return "null" end
  if x == math.floor(x) and math.abs(x) < 2^53 then return string.format("%.0f", x) end
  return string.format("%.17g", x)
end

local function counts(t)
  local parts = {}
  for key, n in pairs(t) do parts[#parts + 1] = string.format('"%s":%s', tostring(key), number(n)) end
  return "{" .. table.concat(parts, ",") .. "}"
end

function done(summary, latency, requests)
  local total, perThread = {}, {}
  for _, thread in ipairs(threads) do
    local s = thread:get("statuses")
    for code, n in pairs(s) do total[code] = (total[code] or 0) + n end
    perThread[#perThread + 1] = string.format('{"issued":%s,"statuses":%s}', number(thread:get("issued")), counts(s))
  end
  local empty = #latency == 0
  local function stat(x) if empty then return "null" end return number(x) end
  local e = summary.errors
  local out = assert(io.open(${luaString(OUTPUT)}, "w"))
  out:write(string.format(
    '{"summary":{"duration":%s,"requests":%s,"bytes":%s,"errors":{"connect":%s,"read":%s,"write":%s,"status":%s,"timeout":%s}},' ..
    '"latency":{"min":%s,"mean":%s,"max":%s,"stdev":%s,"p50":%s,"p90":%s,"p95":%s,"p99":%s,"p99.9":%s},' ..
    '"statuses":%s,"threads":[%s]}\\n',
    number(summary.duration), number(summary.requests), number(summary.bytes),
    number(e.connect), number(e.read), number(e.write), number(e.status), number(e.timeout),
    stat(latency.min), stat(latency.mean), stat(latency.max), stat(latency.stdev),
    stat(latency:percentile(50)), stat(latency:percentile(90)), stat(latency:percentile(95)),
    stat(latency:percentile(99)), stat(latency:percentile(99.9)),
    counts(total), table.concat(perThread, ",")))
  out:close()
end
`;
}

function prepare(targets: Target[], context: RunContext & { workDir: string; binary: string }): PreparedRun {
  const { plan, durationS } = context;
  const model = plan.model;
  if (model.kind !== "closed") throw new RangeError(`Cannot prepare wrk: ${refusal(plan)}`);
  if (!(Number.isInteger(durationS) && durationS >= 1)) {
    throw new RangeError(`Cannot prepare wrk: -d takes whole seconds: received ${durationS}`);
  }
  if (targets.length === 0) throw new RangeError("Cannot prepare wrk: no targets: received 0");
  const origin = new URL(plan.baseUrl).origin;
  const lines = targets.map((target) => {
    const url = new URL(target.url);
    const path = `${url.pathname}${url.search}`;
    if (url.origin !== origin || !/^[\x21-\x7e]+$/.test(path) || !/^[A-Z]+$/.test(target.method)) {
      throw new RangeError(
        `Cannot prepare wrk: every target must be a ${origin} URL with a plain path: received ${target.method} ${target.url}`,
      );
    }
    return `${target.method}\t${path}\t${target.body === null ? "" : Buffer.from(target.body, "utf8").toString("hex")}`;
  });
  const threads = wrkThreads(model.connections);
  const addContentType = !Object.keys(plan.headers).some((name) => name.toLowerCase() === "content-type");
  return {
    argv: [
      context.binary,
      "-t",
      String(threads),
      "-c",
      String(model.connections),
      "-d",
      `${durationS}s`,
      "--timeout",
      `${plan.timeoutS}s`,
      "-s",
      SCRIPT,
      origin,
    ],
    files: {
      [SCRIPT]: luaScript(plan.headers, threads, addContentType),
      [TARGETS]: `${lines.join("\n")}\n`,
    },
    outputs: [OUTPUT],
  };
}

/** The per-thread detail of wrk.json: how many requests each thread started and their statuses. */
export interface WrkThreadCounts {
  issued: number;
  statuses: Record<string, number>;
}

function parse(raw: RawOutput, context: RunContext): NormalizedResult {
  const read = outputReader("wrk", raw);
  const text = raw.outputs[OUTPUT];
  if (text === undefined || text.trim() === "") {
    throw read.failure(`${OUTPUT} (written by the script's done()) is missing`);
  }
  if (raw.exitCode !== 0) throw read.failure("wrk did not exit with 0");
  const json = read.record(read.json(text, OUTPUT), OUTPUT);
  const summary = read.record(json.summary, "summary");
  const wrkErrors = read.record(summary.errors, "summary.errors");
  const latency = read.record(json.latency, "latency");
  const statusCounts = read.counts(json.statuses, "statuses");
  if (!Array.isArray(json.threads) || json.threads.length === 0) throw read.failure("threads is missing");
  const issued = json.threads.map((thread, index) =>
    read.count(read.record(thread, `threads[${index}]`).issued, `threads[${index}].issued`),
  );
  const requests = sum(issued);
  const completed = read.count(summary.requests, "summary.requests");
  const counted = sum(Object.values(statusCounts));
  if (counted !== completed) {
    throw read.failure(
      `the response() hook counted ${counted} statuses but wrk counts ${completed} requests`,
    );
  }
  const ok = okCount(statusCounts);
  const errorCounts: Record<string, number> = {};
  for (const kind of WRK_ERRORS) {
    const n = read.count(wrkErrors[kind], `summary.errors.${kind}`);
    if (n > 0) errorCounts[kind] = n;
  }
  const durationS = read.count(summary.duration, "summary.duration") / 1e6;
  if (!(durationS > 0)) throw read.failure("summary.duration is 0");
  const ms = (key: string): number | null => {
    const us = read.numberOrNull(latency[key], `latency.${key}`, { unit: "µs" });
    return us === null ? null : us / 1_000;
  };
  const latencyMs: LatencyMs = {
    min: ms("min"),
    mean: ms("mean"),
    p50: ms("p50"),
    p90: ms("p90"),
    p95: ms("p95"),
    p99: ms("p99"),
    p99_9: ms("p99.9"),
    max: ms("max"),
  };
  return {
    tool: "wrk",
    toolVersion: context.toolVersion,
    model: context.plan.model.kind,
    offeredRps: null,
    requests,
    completed,
    ok,
    statusCounts,
    errorCounts,
    // Closed model: wrk drops nothing; requests in flight at the end are simply not counted.
    droppedOrAborted: null,
    achievedRps: completed / durationS,
    okRps: ok / durationS,
    latencyMs,
    bytesIn: read.count(summary.bytes, "summary.bytes"),
    durationS,
    // wrk stops at -d without waiting for requests in flight: there is no drain.
    drainS: 0,
    sent: { kind: "stripes", counts: issued },
    // wrk records latencies only into its histogram; no hook sees a request's start or duration.
    timeline: null,
  };
}

export const tool: Tool = { name: "wrk", capabilities, detect, refusal, prepare, parse };
