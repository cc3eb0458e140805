/**
 * Whether a Postgres pool costs more per query the longer it has served: ratio A = a fresh pool's CPU per
 * query ÷ the same for a pool that has already served `--age` queries, the server's product query from
 * `--concurrency` loops over the server's pool size, in this process, rounds interleaved (old, then a fresh
 * pool warmed with 1 000 queries), per driver. Goal ≥ 0.95. postgres.js 3.4.9's pool slowed with every query
 * it served (docs/benchmarks.md): patches/postgres@3.4.9.patch is what this ratio watches.
 *
 *   bun run bench:pg-pool-age [--age 200000] [--queries 20000] [--rounds 5] [--concurrency 32]
 */
import postgres from "postgres";
import { seededRandom } from "../lab/plan/targets.ts";
import { servicesUp } from "../lab/services/lifecycle.ts";
import { DEFAULT_CONFIG } from "../server_config.ts";
import { benchArgs, positiveInt } from "./_args.ts";
import { productQuery } from "./_ceilings.ts";
import { median } from "./_tier_timing_cost.ts";

const usage = "bun run bench:pg-pool-age [--age 200000] [--queries 20000] [--rounds 5] [--concurrency 32]";
const values = benchArgs(usage, {
  age: { type: "string", default: "200000" },
  queries: { type: "string", default: "20000" },
  rounds: { type: "string", default: "5" },
  concurrency: { type: "string", default: "32" },
});
const age = positiveInt("age", values.age);
const queries = positiveInt("queries", values.queries);
const rounds = positiveInt("rounds", values.rounds);
const concurrency = positiveInt("concurrency", values.concurrency);

const { databaseUrl } = await servicesUp({ log: () => {} });
const pool = DEFAULT_CONFIG.pgPoolMax;
const query = productQuery();

type Run = (id: number) => Promise<unknown>;
interface Pool {
  run: Run;
  end(): Promise<void>;
}
const DRIVERS: Record<string, () => Pool> = {
  "postgres.js": () => {
    const sql = postgres(databaseUrl, { max: pool, onnotice: () => {} });
    return { run: (id) => sql.unsafe(query, [id], { prepare: true }), end: () => sql.end() };
  },
  "Bun.SQL": () => {
    const sql = new Bun.SQL(databaseUrl, { max: pool, prepare: true });
    return { run: (id) => sql.unsafe(query, [id]), end: () => sql.close() };
  },
};

/** `count` queries of the first 1 000 ids from `concurrency` loops; the process's CPU per query, µs. */
async function cpuPerQuery(run: Run, count: number, seed: number): Promise<number> {
  const random = seededRandom(seed);
  let sent = 0;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent++ < count) {
        const [row] = (await run(1 + Math.floor(random() * 1000))) as unknown[];
        if (row === undefined) throw new Error("Cannot measure: a product of the first 1 000 ids is missing");
      }
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

const range = (list: number[]) => `${Math.min(...list).toFixed(2)}–${Math.max(...list).toFixed(2)}`;

console.log(
  `pool of ${pool}, ${concurrency} loops; the old pool aged by ${age} queries; ${rounds} rounds of ${queries} queries`,
);
for (const [driver, open] of Object.entries(DRIVERS)) {
  const old = open();
  const firstUs = await cpuPerQuery(old.run, queries, 1);
  await cpuPerQuery(old.run, age, 2);
  const oldUs: number[] = [];
  const freshUs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    oldUs.push(await cpuPerQuery(old.run, queries, 10 + round));
    const fresh = open();
    await cpuPerQuery(fresh.run, 1_000, 100 + round);
    freshUs.push(await cpuPerQuery(fresh.run, queries, 10 + round));
    await fresh.end();
  }
  await old.end();
  const ratios = oldUs.map((us, round) => (freshUs[round] as number) / us);
  console.log(
    `${driver.padEnd(12)} CPU µs/query: first ${firstUs.toFixed(2)}, aged ${median(oldUs).toFixed(2)} (${range(oldUs)}), ` +
      `fresh ${median(freshUs).toFixed(2)} (${range(freshUs)}); A = fresh ÷ aged ${median(ratios).toFixed(2)} ` +
      `(${range(ratios)}), goal ≥ 0.95`,
  );
}
