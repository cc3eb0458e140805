/**
 * A run on a freshly seeded database: settled before its first cell (lab/cell/settle.ts), its rows saying so,
 * and its cells finding the database as the next run's do (in counts Postgres keeps, not in latencies).
 */
import { expect, test } from "bun:test";
import postgres from "postgres";
import { experiment as quickstart } from "../../experiments/quickstart.ts";
import { type SeedPlan, seed } from "../../seed/seed.ts";
import type { Experiment } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { testDatabaseUrl, testServices } from "../shared/testing.ts";
import { detailReads, num, type Row, runRows, testExperiment } from "./run_testing.ts";

/** The services on a database of the test's own, seeded afresh: rows newer than any VACUUM of them. */
async function freshlySeeded(plan: SeedPlan, suffix: string): Promise<Services> {
  const url = await testDatabaseUrl(plan, suffix);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await seed(sql, plan);
  } finally {
    await sql.end();
  }
  return { ...(await testServices()), databaseUrl: url };
}

async function vacuumCount(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ count: number }[]>`
      select vacuum_count::int as count from pg_stat_user_tables where relid = 'products'::regclass`;
    return row?.count ?? Number.NaN;
  } finally {
    await sql.end();
  }
}

test("a freshly seeded database is settled once, before the first cell, and every row says what it took", async () => {
  const plan: SeedPlan = { rows: 2_000, seed: 13, descriptionBytes: 64 };
  const services = await freshlySeeded(plan, "settle_run");
  const vacuumsBefore = await vacuumCount(services.databaseUrl);
  const rows = await runRows(testExperiment([detailReads()], { strategies: ["none", "local"], seed: plan }), {
    name: "settle_run",
    services,
  });
  if (typeof rows === "string") throw new Error(rows);
  expect(rows.map((row) => [row.strategy, row.valid, row.db_settled])).toEqual([
    ["none", "true", "true"],
    ["local", "true", "true"],
  ]);
  const [first, second] = rows as [Row, Row];
  expect(num(first, "db_settle_s")).toBeGreaterThan(0);
  expect(num(first, "vacuum_wait_s")).toBeGreaterThanOrEqual(0);
  expect(num(first, "vacuum_wait_s")).toBeLessThanOrEqual(num(first, "db_settle_s"));
  // The second cell found the database settled: no second VACUUM.
  expect([num(second, "db_settle_s"), num(second, "vacuum_wait_s")]).toEqual([0, 0]);
  expect(await vacuumCount(services.databaseUrl)).toBe(vacuumsBefore + 1);
}, 60_000);

/**
 * quickstart's shape in short cells: its seed of 100 000 rows, its stream and rate, and none (every read a
 * query); three repeats of 1 s + 1 s instead of three of 1 s + 4 s and all four strategies.
 */
function shortQuickstart(): Experiment {
  const [attack] = quickstart.attacks;
  if (attack === undefined) throw new Error("quickstart has no attack");
  return { ...quickstart, strategies: ["none"], attacks: [{ ...attack, warmupS: 1, durationS: 1 }] };
}

/**
 * What Postgres still owes `products` and what the server's reads cost it, in counts: its pages, those the
 * visibility map has all-visible (a VACUUM's work; autovacuum owes it to a fresh seed), its pages dirty in
 * shared buffers (a CHECKPOINT's), and the server's product reads so far with the blocks they dirtied
 * (pg_stat_statements; hint bits a read sets). Counts, not latencies: a cell measured on an unsettled
 * database paid for these, and comparing two runs' p50s judged this machine's speed between them instead.
 */
async function productsState(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    for (const extension of ["pg_visibility", "pg_buffercache", "pg_stat_statements"]) {
      await sql.unsafe(`create extension if not exists ${extension}`);
    }
    const [row] = await sql<
      { pages: number; allVisible: number; dirty: number; reads: number; dirtied: number }[]
    >`
      select (select count(*)::int from pg_visibility_map('products')) as "pages",
        (select all_visible::int from pg_visibility_map_summary('products')) as "allVisible",
        (select count(*)::int from pg_buffercache
          where isdirty and relfilenode = pg_relation_filenode('products')
            and reldatabase = (select oid from pg_database where datname = current_database())) as "dirty",
        coalesce(sum(calls), 0)::int as "reads", coalesce(sum(shared_blks_dirtied), 0)::int as "dirtied"
      from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query like '%row_to_json%' and query like '%"products"."id" = $1%'`;
    if (row === undefined) throw new Error("Cannot read products' state");
    return row;
  } finally {
    await sql.end();
  }
}

test("the state check fires on what a seed leaves: pages not all-visible, and reads that dirty pages", async () => {
  const plan: SeedPlan = { rows: 2_000, seed: 17, descriptionBytes: 64 };
  const url = await testDatabaseUrl(plan, "settle_state");
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await seed(sql, plan);
    // No autovacuum of it while the test reads: the state the check reads stays the seed's.
    await sql`alter table products set (autovacuum_enabled = off)`;
    const before = await productsState(url);
    expect(before.pages).toBeGreaterThan(0);
    expect(before.allVisible).toBeLessThan(before.pages);
    // New row versions, written out unread: the first read of each sets its hint bits, dirtying its page again.
    await sql`update products set stock = stock where id <= 500`;
    await sql`checkpoint`;
    // A read of the shape the check counts (the server's renders each row with row_to_json, by its id).
    for (let id = 1; id <= 500; id++) {
      await sql`select row_to_json(products)::text as body from products where "products"."id" = ${id}`;
    }
    const after = await productsState(url);
    expect(after.reads - before.reads).toBe(500);
    expect(after.dirtied - before.dirtied).toBeGreaterThan(0);
    expect(after.dirty).toBeGreaterThan(0);
  } finally {
    await sql.end();
  }
}, 60_000);

test("on a freshly seeded database the first quickstart's cells find it as the second's do", async () => {
  const services = await freshlySeeded(quickstart.seed, "quickstart_fresh");
  const runs = [];
  for (const _ of [1, 2]) {
    const before = await productsState(services.databaseUrl);
    const rows = await runRows(shortQuickstart(), { name: "quickstart_fresh", services });
    if (typeof rows === "string") throw new Error(rows);
    const after = await productsState(services.databaseUrl);
    runs.push({
      settled: rows.map((row) => [row.valid, row.db_settled, num(row, "db_settle_s") > 0]),
      allVisible: after.allVisible === after.pages,
      dirtyPages: after.dirty,
      readsDirtied: after.dirtied - before.dirtied,
      read: after.reads > before.reads,
    });
  }
  // Only the first run settled the database (VACUUM ANALYZE, CHECKPOINT); its reads then cost what the second's do.
  const clean = { allVisible: true, dirtyPages: 0, readsDirtied: 0, read: true };
  expect(runs).toEqual([
    { settled: [["true", "true", true], ...Array(2).fill(["true", "true", false])], ...clean },
    { settled: Array(3).fill(["true", "true", false]), ...clean },
  ]);
}, 180_000);
