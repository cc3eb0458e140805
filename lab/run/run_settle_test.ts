/**
 * A run on a freshly seeded database: settled before its first cell (lab/cell/settle.ts), and its rows say so.
 */
import { expect, test } from "bun:test";
import postgres from "postgres";
import { type SeedPlan, seed } from "../../seed/seed.ts";
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
