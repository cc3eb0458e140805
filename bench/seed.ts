/**
 * How fast is the seeder? Times `seed()` (generation + COPY + index builds + meta) against `psql \copy` of
 * the same rows from a file into the same table, in the same run, and prints the ratio.
 * Goals (issue 2): 100k rows in ≤ 1 s, and ≤ 1.5 × psql \copy.
 *
 *   bun run bench:seed [--rows 100000] [--repeats 5]
 */
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { spread } from "../lab/results/summary.ts";
import { servicesUp } from "../lab/services/lifecycle.ts";
import { assertOwnedDatabase, ForeignDatabaseError, handedOverByEnv } from "../seed/ownership.ts";
import { copyText, DEFAULT_SEED_PLAN, seed } from "../seed/seed.ts";
import { benchArgs } from "./_args.ts";

const values = benchArgs("bun run bench:seed [--rows 100000] [--repeats 5]", {
  rows: { type: "string", default: String(DEFAULT_SEED_PLAN.rows) },
  repeats: { type: "string", default: "5" },
});
const plan = { ...DEFAULT_SEED_PLAN, rows: Number(values.rows) };
const repeats = Number(values.repeats);

function median(samples: number[]): number {
  const middle = spread(samples);
  if (middle === null) throw new RangeError("Cannot take a median: no samples");
  return middle.median;
}

const services = await servicesUp({ log: () => {} });
const sql = postgres(services.databaseUrl, { max: 1, onnotice: () => {} });
// Each round truncates products: only in a database that is cachelab's (seed/ownership.ts).
try {
  await assertOwnedDatabase(sql, "benchmark the seeder", { handedOver: handedOverByEnv() });
} catch (error) {
  if (!(error instanceof ForeignDatabaseError)) throw error;
  console.error(error.message);
  await sql.end();
  process.exit(2);
}
await seed(sql, plan); // creates the tables and warms the server's caches
const file = join(tmpdir(), `cachelab-bench-seed-${process.pid}.tsv`);
writeFileSync(file, copyText(plan, 1, plan.rows));
const columns = "id, name, category_id, price_cents, stock, description, version, updated_at";

const psqlMs: number[] = [];
const seedMs: number[] = [];
for (let i = 0; i < repeats; i++) {
  // Interleaved, so drift in the machine's load affects both the same way.
  const startedMs = performance.now();
  const psql = Bun.spawnSync(
    [
      "psql",
      services.databaseUrl,
      "-v",
      "ON_ERROR_STOP=1",
      "-q",
      "-c",
      "truncate products",
      "-c",
      `\\copy products (${columns}) from '${file}'`,
    ],
    { stderr: "pipe" },
  );
  psqlMs.push(performance.now() - startedMs);
  if (psql.exitCode !== 0) throw new Error(`Cannot run psql \\copy: ${psql.stderr.toString()}`);
  seedMs.push((await seed(sql, plan)).durationMs);
}
await sql.end();
rmSync(file);

const seedMedian = median(seedMs);
const psqlMedian = median(psqlMs);
const ratio = seedMedian / psqlMedian;
console.log(`rows: ${plan.rows}, description bytes: ${plan.descriptionBytes}, repeats: ${repeats} (medians)`);
console.log(`seed():        ${seedMedian.toFixed(0)} ms   [${seedMs.map((ms) => ms.toFixed(0)).join(", ")}]`);
console.log(
  `psql \\copy:    ${psqlMedian.toFixed(0)} ms   [${psqlMs.map((ms) => ms.toFixed(0)).join(", ")}]`,
);
console.log(
  `ratio seed ÷ \\copy: ${ratio.toFixed(2)} (goal ≤ 1.50)   seed ≤ 1000 ms: ${seedMedian <= 1_000 ? "yes" : "no"}`,
);
