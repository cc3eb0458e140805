/**
 * The settle before a cell, on the real Postgres: a freshly seeded database is vacuumed, analyzed and
 * checkpointed, once; a VACUUM running in another session is waited for, and past the bound the cell is said
 * not to be settled.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { type SeedPlan, seed } from "../../seed/seed.ts";
import { eventually, testDatabaseUrl } from "../shared/testing.ts";
import { settleColumns, settleDatabase, vacuumRunning } from "./settle.ts";

const PLAN: SeedPlan = { rows: 2_000, seed: 11, descriptionBytes: 64 };
let url: string;
let sql: postgres.Sql;

beforeAll(async () => {
  url = await testDatabaseUrl(PLAN, "settle");
  sql = postgres(url, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end();
});

interface Marks {
  lastVacuum: Date | null;
  lastAnalyze: Date | null;
  /** Where the last checkpoint's redo starts: it moves on with every checkpoint after a write. */
  redoLsn: string;
  seededAt: Date;
}

async function marks(): Promise<Marks> {
  const [row] = await sql<Marks[]>`
    select s.last_vacuum as "lastVacuum", s.last_analyze as "lastAnalyze",
      (select redo_lsn::text from pg_control_checkpoint()) as "redoLsn",
      (select seeded_at from cachelab_seed_meta where id = 1) as "seededAt"
    from pg_stat_user_tables s where s.relid = 'products'::regclass`;
  if (row === undefined) throw new Error("Cannot read products' statistics: no row");
  return row;
}

test("a freshly seeded database is vacuumed, analyzed and checkpointed before the cell, and only once", async () => {
  await seed(sql, PLAN); // rows newer than any VACUUM, as after `bun run seed` or a reseed
  const before = await marks();
  const first = await settleDatabase(sql);
  const after = await marks();
  expect(first).toMatchObject({ settled: true, note: "VACUUM ANALYZE + CHECKPOINT" });
  expect(after.lastVacuum?.getTime()).toBeGreaterThan(before.seededAt.getTime());
  expect(after.lastAnalyze?.getTime()).toBeGreaterThan(before.seededAt.getTime());
  const [moved] = await sql<{ moved: boolean }[]>`
    select pg_wal_lsn_diff(${after.redoLsn}::pg_lsn, ${before.redoLsn}::pg_lsn) > 0 as moved`;
  expect(moved?.moved).toBe(true);
  expect(first.settleS).toBeGreaterThan(0);
  // Settled since the seed: the next cell finds nothing to do, and its row says 0.
  const second = await settleDatabase(sql);
  expect(second).toEqual({ settleS: 0, vacuumWaitS: 0, settled: true, note: null });
  expect((await marks()).lastVacuum).toEqual(after.lastVacuum);
  expect(settleColumns(second)).toEqual({ db_settle_s: 0, vacuum_wait_s: 0, db_settled: true });
  expect(settleColumns(null)).toEqual({ db_settle_s: null, vacuum_wait_s: null, db_settled: null });
});

test("a VACUUM under way in another session is waited for; past the bound the cell starts unsettled", async () => {
  await settleDatabase(sql);
  const other = postgres(url, { max: 1, onnotice: () => {} });
  try {
    // A manual VACUUM held back by its cost delay (40 ms after every page it touches): seconds long.
    await other`set vacuum_cost_delay = 40`;
    await other`set vacuum_cost_limit = 1`;
    const slow = other`vacuum (disable_page_skipping) products`.execute();
    expect(await eventually(() => vacuumRunning(sql), 5_000)).toBe(true);
    const bounded = await settleDatabase(sql, { maxWaitMs: 300 });
    expect(bounded.settled).toBe(false);
    expect(bounded.vacuumWaitS).toBeGreaterThanOrEqual(0.3);
    expect(bounded.note).toContain("a VACUUM still ran on the database after");
    const waited = await settleDatabase(sql);
    expect(waited.settled).toBe(true);
    expect(waited.vacuumWaitS).toBeGreaterThan(0);
    expect(waited.note).toStartWith("waited ");
    await slow;
    expect(await vacuumRunning(sql)).toBe(false);
  } finally {
    await other.end();
  }
}, 60_000);
