/**
 * What a Redis GET costs a server when most of its requests never reach Redis, as behind an L1 (two_tier,
 * tracking), against the same GET when every request sends one (redis). No cachelab code: a bare Bun.serve
 * route over ioredis (or Bun's client) and a Map, at a fixed arrival rate (vegeta), each GET's round trip timed
 * in the server as the lab's tier timing does. Three servers per round, interleaved: every request a GET at
 * `--rate`; a `--share` of the requests a GET at the same rate, the rest answered from the Map ("behind an L1");
 * and every request a GET at `--share` × `--rate` (the same rate of GETs, nothing else). `--work-us` spends that
 * much CPU in every request before it answers or sends its GET, as a real server's own work does. The tier
 * table's Redis hits of two_tier and tracking are read against the first ratio (docs/strategies.md).
 * `--split` also records each server's and Redis's socket calls with `perf` (root) and splits a GET's round
 * trip at them: out to Redis, in Redis, and back until the server reads the reply (bench/_syscall_split.ts).
 *
 *   bun run bench:redis-behind-l1 [--rate 3000] [--share 0.27] [--duration-s 10] [--rounds 3] [--work-us 0]
 *                                 [--client ioredis|bun] [--pin] [--split]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seededRandom } from "../lab/plan/targets.ts";
import { servicesUp } from "../lab/services/lifecycle.ts";
import { freePort } from "../lab/shared/ports.ts";
import { benchArgs, pinning, positiveInt } from "./_args.ts";
import { KEYS_TTL_MS } from "./_ceilings.ts";
import { type GetSplit, parsePerfScript, SPLIT_EVENTS, splitGets } from "./_syscall_split.ts";
import { median, spread } from "./_tier_timing_cost.ts";

const USAGE =
  "bun run bench:redis-behind-l1 [--rate 3000] [--share 0.27] [--duration-s 10] [--rounds 3] [--work-us 0] [--client ioredis|bun] [--pin] [--split]";
const values = benchArgs(USAGE, {
  rate: { type: "string", default: "3000" },
  share: { type: "string", default: "0.27" },
  "duration-s": { type: "string", default: "10" },
  rounds: { type: "string", default: "3" },
  "work-us": { type: "string", default: "0" },
  client: { type: "string", default: "ioredis" },
  pin: { type: "boolean", default: false },
  split: { type: "boolean", default: false },
});
const rate = positiveInt("rate", values.rate);
const share = Number(values.share);
if (!(share > 0 && share < 1)) {
  console.error(`--share must be a fraction between 0 and 1: received ${values.share}`);
  process.exit(2);
}
const durationS = positiveInt("duration-s", values["duration-s"]);
const rounds = positiveInt("rounds", values.rounds);
const workUs = Number(values["work-us"]);
if (!(Number.isInteger(workUs) && workUs >= 0)) {
  console.error(`--work-us must be a whole number of microseconds, 0 or more: received ${values["work-us"]}`);
  process.exit(2);
}
const CLIENTS = ["ioredis", "bun"];
if (!CLIENTS.includes(values.client)) {
  console.error(`Unknown --client ${values.client}: choose one of ${CLIENTS.join(", ")}`);
  process.exit(2);
}
const { server: serverCpu, tool: toolCpu } = pinning(values.pin); // --pin: vegeta on CPU 1
const vegeta = Bun.which("vegeta");
if (vegeta === null) {
  console.error(
    "Cannot run bench:redis-behind-l1: vegeta is needed: received none on PATH (bash scripts/install-deps.sh)",
  );
  process.exit(1);
}

const perf = values.split ? Bun.which("perf") : null;
if (values.split && perf === null) {
  console.error("Cannot split the GETs: --split needs perf (Debian's linux-perf): received none on PATH");
  process.exit(1);
}

const KEYS = 100;
const fromMemory = Math.round(KEYS * (1 - share)); // ids 1..fromMemory never reach Redis "behind an L1"
const services = await servicesUp({ log: () => {} });
const work = mkdtempSync(join(tmpdir(), "cachelab-behind-l1-"));
const redisPid = values.split ? await redisProcessId(services.redisUrl) : 0;

/** Redis's own pid (`INFO server`), whose socket calls --split records. */
async function redisProcessId(url: string): Promise<number> {
  const { Redis } = await import("ioredis");
  const redis = new Redis(url);
  try {
    const pid = /process_id:(\d+)/.exec(await redis.info("server"))?.[1];
    if (pid === undefined) throw new Error("Cannot split the GETs: Redis's INFO names no process_id");
    return Number(pid);
  } finally {
    redis.disconnect();
  }
}

function serverScript(port: number, behind: boolean): string {
  const url = JSON.stringify(services.redisUrl);
  const client =
    values.client === "bun"
      ? `const redis = new Bun.RedisClient(${url}); await redis.connect();
const put = (key, value) => redis.send("SET", [key, value, "PX", "${KEYS_TTL_MS}"]);`
      : `import { Redis } from ${JSON.stringify(import.meta.resolve("ioredis"))};
const redis = new Redis(${url});
const put = (key, value) => redis.set(key, value, "PX", ${KEYS_TTL_MS});`;
  return `${client}
const value = "x".repeat(350);
for (let id = 1; id <= ${KEYS}; id++) await put("cachelab:bench:behind:" + id, value);
const memory = new Map();
if (${behind}) for (let id = 1; id <= ${fromMemory}; id++) memory.set(id, value);
const headers = new Headers({ "content-type": "application/json" });
let times = [];
Bun.serve({ port: ${port}, hostname: "127.0.0.1", routes: {
  "/p/:id": (request) => {
    const id = Number(request.params.id);
    const workUntilMs = performance.now() + ${workUs / 1000}; // the server's own work, before either answer
    while (performance.now() < workUntilMs) {}
    const found = memory.get(id);
    if (found !== undefined) return new Response(found, { headers });
    const startedMs = performance.now();
    return redis.get("cachelab:bench:behind:" + id).then((stored) => {
      times.push(performance.now() - startedMs);
      return new Response(stored, { headers });
    });
  },
  "/times": () => { const taken = times; times = []; return Response.json(taken); },
} });
console.log("ready");`;
}

/**
 * The GET round trips (ms) of one server under `rps` for `durationS`, after a 2 s warm-up; with --split, also
 * its GETs split at the socket calls (perf over the measured attack but its last second).
 */
async function measure(behind: boolean, rps: number): Promise<{ times: number[]; split?: GetSplit }> {
  const port = await freePort();
  const script = join(work, `server_${port}.ts`);
  writeFileSync(script, serverScript(port, behind));
  const targets = join(work, "targets.txt");
  const random = seededRandom(42); // a fixed stream: the same ids every run
  const ids = Array.from(
    { length: 20_000 },
    () => `GET http://127.0.0.1:${port}/p/${Math.floor(random() * KEYS) + 1}`,
  );
  writeFileSync(targets, `${ids.join("\n")}\n`);
  const server = Bun.spawn([...serverCpu, "bun", script], { stdout: "pipe", stderr: "inherit" });
  try {
    await server.stdout.getReader().read(); // "ready"
    const attack = (seconds: number) => {
      const argv = [
        ...toolCpu,
        vegeta as string,
        "attack",
        `-targets=${targets}`,
        `-rate=${rps}/1s`,
        `-duration=${seconds}s`,
      ];
      const run = Bun.spawnSync(argv, { stdout: "ignore", stderr: "pipe" });
      if (run.exitCode !== 0) throw new Error(`Cannot run vegeta: exit ${run.exitCode}: ${run.stderr}`);
    };
    attack(2);
    await fetch(`http://127.0.0.1:${port}/times`);
    const capture = join(work, "perf.data");
    const recording =
      perf === null
        ? null
        : Bun.spawn(
            [perf, "record", "-q", "-o", capture, "-p", `${server.pid},${redisPid}`]
              .concat(SPLIT_EVENTS.flatMap((event) => ["-e", event]))
              .concat(["--", "sleep", String(Math.max(1, durationS - 1))]),
            { stdout: "ignore", stderr: "pipe" },
          );
    attack(durationS);
    const times = (await (await fetch(`http://127.0.0.1:${port}/times`)).json()) as number[];
    if (times.length < durationS * rps * (behind ? share : 1) * 0.5) {
      throw new Error(`Cannot trust the run: ${times.length} GETs timed, fewer than half the planned`);
    }
    if (recording === null || perf === null) return { times };
    if ((await recording.exited) !== 0) {
      throw new Error(
        `Cannot split the GETs: perf record exited ${recording.exitCode}: ${await new Response(recording.stderr).text()}`,
      );
    }
    const script = Bun.spawnSync([perf, "script", "-i", capture], { stdout: "pipe", stderr: "pipe" });
    if (script.exitCode !== 0)
      throw new Error(`Cannot split the GETs: perf script exited ${script.exitCode}: ${script.stderr}`);
    return { times, split: splitGets(parsePerfScript(script.stdout.toString()), server.pid, redisPid) };
  } finally {
    server.kill();
    await server.exited;
  }
}

const CONFIGS = [
  { name: `every request a GET, ${rate} rps`, behind: false, rps: rate },
  { name: `${share} of requests a GET, ${rate} rps`, behind: true, rps: rate },
  {
    name: `every request a GET, ${Math.round(rate * share)} rps`,
    behind: false,
    rps: Math.round(rate * share),
  },
] as const;
const p50s: number[][] = CONFIGS.map(() => []);
const means: number[][] = CONFIGS.map(() => []);
const splits: GetSplit[][] = CONFIGS.map(() => []);
try {
  for (let round = 1; round <= rounds; round++) {
    for (const [i, config] of CONFIGS.entries()) {
      const measured = await measure(config.behind, config.rps);
      const times = measured.times.sort((a, b) => a - b);
      if (measured.split !== undefined) splits[i]?.push(measured.split);
      p50s[i]?.push(times[Math.floor(times.length / 2)] as number);
      means[i]?.push(times.reduce((a, b) => a + b, 0) / times.length);
      console.log(`round ${round}: ${config.name}: ${times.length} GETs`);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

console.log(`\nA GET's round trip in the server, ms: median over ${rounds} interleaved rounds (range)`);
console.log("| server | p50 | mean |\n|---|---|---|");
for (const [i, config] of CONFIGS.entries())
  console.log(`| ${config.name} | ${spread(p50s[i] ?? [], 3)} | ${spread(means[i] ?? [], 3)} |`);
if (values.split) {
  console.log(
    "\nThe same GETs split at the socket calls (perf), µs, means: median over the rounds (range); " +
      "waited: the share whose reply the server read only after reading an HTTP request",
  );
  console.log(
    "| server | out to Redis | in Redis | back to the server | back, p50 | waited | back, not waited |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const [i, config] of CONFIGS.entries()) {
    const of = (pick: (split: GetSplit) => number | null) =>
      spread(
        (splits[i] ?? []).map(pick).filter((value): value is number => value !== null),
        1,
      );
    console.log(
      `| ${config.name} | ${of((s) => s.outUs)} | ${of((s) => s.redisUs)} | ${of((s) => s.backUs)} | ` +
        `${of((s) => s.backP50Us)} | ${spread(
          (splits[i] ?? []).map((s) => s.waitedShare),
          2,
        )} | ${of((s) => s.backAloneUs)} |`,
    );
  }
  const followed = splits.flat().map((split) => split.followed / split.sent);
  console.log(
    `(GETs followed whole: ${spread(followed, 2)} of those sent; the rest were sent while one was out)`,
  );
}
const ratio = (a: number[], b: number[]) => median(a.map((value, i) => value / (b[i] as number))).toFixed(2);
const [all, behind, sparse] = means as [number[], number[], number[]];
console.log(
  `\nbehind an L1 ÷ every request a GET, same arrival rate (mean, run by run): ${ratio(behind, all)}`,
);
console.log(
  `behind an L1 ÷ every request a GET, same rate of GETs (mean, run by run): ${ratio(behind, sparse)}`,
);
process.exit(0);
