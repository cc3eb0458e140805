/**
 * What the server's always-on tier timing costs a local hit, without HTTP or a load tool in the way: two
 * servers built in this process (createServer, the real app on the real Postgres), one with TIER_TIMING on
 * (the default) and one with it off, each answering the same warmed local hits through `app.handle`,
 * alternated batch by batch so drift in the machine falls on both alike.
 *   T (in process) = local hits per second with the timing ÷ without, per round; goal ≥ 0.98.
 * In process the handler is the whole cost, so this is the ratio at its strictest: over HTTP the same
 * nanoseconds are a smaller share (bench/hot_path.ts's T, whose run-to-run spread on a 2-core VM is wider).
 *
 *   bun run bench:tier-timing [--rounds 30] [--batch 20000] [--keys 1000]
 */
import { parseArgs } from "node:util";
import { createServer } from "../server.ts";
import { readConfig } from "../server_config.ts";
import { seededServices } from "./_seeded.ts";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "30" },
    batch: { type: "string", default: "20000" },
    keys: { type: "string", default: "1000" },
    help: { type: "boolean", default: false },
  },
  strict: true,
});
if (values.help) {
  console.log("usage: bun run bench:tier-timing [--rounds 30] [--batch 20000] [--keys 1000]");
  process.exit(0);
}
function positiveInt(name: string, raw: string | undefined): number {
  const value = Number(raw);
  if (!(Number.isInteger(value) && value >= 1)) {
    console.error(`--${name} must be a positive integer: received ${raw}`);
    process.exit(2);
  }
  return value;
}
const rounds = positiveInt("rounds", values.rounds);
const batch = positiveInt("batch", values.batch);
const keys = positiveInt("keys", values.keys);

const services = await seededServices();

const env = { CACHE_STRATEGY: "local", DATABASE_URL: services.databaseUrl, REDIS_URL: services.redisUrl };
const timed = createServer(readConfig({ ...env, TIER_TIMING: "1" }));
const untimed = createServer(readConfig({ ...env, TIER_TIMING: "0" }));
const requests = Array.from({ length: keys }, (_, i) => new Request(`http://localhost/products/${i + 1}`));

/** Answers `count` warmed local hits through the app; hits per second. */
async function hits(server: ReturnType<typeof createServer>, count: number): Promise<number> {
  const startedMs = performance.now();
  for (let i = 0; i < count; i++) {
    const answer = server.app.handle(requests[i % keys] as Request);
    // A local hit is answered synchronously; anything else (a miss) is awaited.
    if (answer instanceof Promise) await answer;
  }
  return count / ((performance.now() - startedMs) / 1_000);
}

try {
  for (const server of [timed, untimed]) await hits(server, keys * 3); // loads, then warm the JIT
  const ratios: number[] = [];
  const rates = { timed: [] as number[], untimed: [] as number[] };
  for (let round = 0; round < rounds; round++) {
    // Alternate which goes first, so neither always runs right after a GC of the other's garbage.
    const order = round % 2 === 0 ? ([timed, untimed] as const) : ([untimed, timed] as const);
    const [a, b] = [await hits(order[0], batch), await hits(order[1], batch)];
    const [on, off] = order[0] === timed ? [a, b] : [b, a];
    rates.timed.push(on);
    rates.untimed.push(off);
    ratios.push(on / off);
  }
  const sorted = (list: number[]) => [...list].sort((x, y) => x - y);
  const median = (list: number[]) => sorted(list)[Math.floor(list.length / 2)] as number;
  const spread = (list: number[], digits: number) =>
    `${median(list).toFixed(digits)} (${sorted(list)[0]?.toFixed(digits)}–${sorted(list).at(-1)?.toFixed(digits)})`;
  console.log(`in process: ${rounds} interleaved rounds of ${batch} local hits over ${keys} warmed ids`);
  console.log("\n| figure | median (min–max) |\n| --- | --- |");
  console.log(`| local hits/s, tier timing on (default) | ${spread(rates.timed, 0)} |`);
  console.log(`| local hits/s, TIER_TIMING=0 | ${spread(rates.untimed, 0)} |`);
  console.log(
    `| ns per hit added by the timing | ${(1e9 / median(rates.timed) - 1e9 / median(rates.untimed)).toFixed(0)} |`,
  );
  console.log(`| T (in process) = on ÷ off, per round (goal ≥ 0.98) | ${spread(ratios, 3)} |`);
} finally {
  await Promise.all([timed.close(), untimed.close()]);
}
