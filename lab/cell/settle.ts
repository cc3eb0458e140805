/**
 * The database settled before a cell measures it. Right after a seed Postgres still owes the new rows work:
 * their hint bits and visibility map, their dirty pages, and an autovacuum of the table a minute later.
 * Whichever cell runs then pays for it (a fresh quickstart once picked `none`, measured first, and the next
 * runs did not). So before a cell whose rows were seeded since the lab last vacuumed them: VACUUM ANALYZE
 * products and reviews, then a CHECKPOINT; and before every cell, a bounded wait until no VACUUM (an
 * autovacuum worker's or another session's) runs on the lab's database. The row records what it took.
 */
import type postgres from "postgres";

/** The longest a cell waits for a VACUUM on the lab's database to finish before it starts anyway. */
export const VACUUM_WAIT_MAX_MS = 30_000;

/** How often the wait looks at pg_stat_activity and pg_stat_progress_vacuum. */
const POLL_MS = 100;

export interface DbSettle {
  /** Seconds spent right before the cell: VACUUM ANALYZE and CHECKPOINT when due, and the wait. */
  settleS: number;
  /** Of those, seconds waited for a VACUUM on the lab's database to finish. */
  vacuumWaitS: number;
  /** Vacuumed and checkpointed since the last seed, and no VACUUM running when the cell started. */
  settled: boolean;
  /** What was done, or why it did not settle, for the run's log; null when there was nothing to do. */
  note: string | null;
}

/** Whether the rows were seeded after the lab's last VACUUM of products (never vacuumed: yes). */
async function seededSinceVacuum(sql: postgres.Sql): Promise<boolean> {
  const [row] = await sql<{ due: boolean }[]>`
    select coalesce(m.seeded_at > s.last_vacuum, true) as due
    from cachelab_seed_meta m
    left join pg_stat_user_tables s on s.relid = to_regclass('products')
    where m.id = 1`;
  return row?.due ?? true;
}

/** Whether a VACUUM runs on this database in another session: an autovacuum worker, or anyone's VACUUM. */
export async function vacuumRunning(sql: postgres.Sql): Promise<boolean> {
  const [row] = await sql<{ running: boolean }[]>`
    select exists (
      select 1 from pg_stat_activity
      where backend_type = 'autovacuum worker' and datname = current_database()
    ) or exists (
      select 1 from pg_stat_progress_vacuum where datname = current_database() and pid <> pg_backend_pid()
    ) as running`;
  return row?.running === true;
}

/**
 * Settles the database for the next cell: VACUUM ANALYZE and CHECKPOINT when the rows were seeded since the
 * last VACUUM, then waits up to `maxWaitMs` for any VACUUM running on the database. Never throws: what
 * Postgres refused (CHECKPOINT needs superuser or pg_checkpoint) is in `note`, and the cell is not settled.
 */
export async function settleDatabase(
  sql: postgres.Sql,
  options: { maxWaitMs?: number } = {},
): Promise<DbSettle> {
  const startedMs = performance.now();
  const done: string[] = [];
  let refused: string | null = null;
  try {
    if (await seededSinceVacuum(sql)) {
      await sql`vacuum (analyze) products, reviews`;
      done.push("VACUUM ANALYZE");
      await sql`checkpoint`;
      done.push("CHECKPOINT");
    }
  } catch (error) {
    refused = `${done.length === 0 ? "VACUUM ANALYZE" : "CHECKPOINT"} failed: ${(error as Error).message}`;
  }
  const waitStartedMs = performance.now();
  const deadlineMs = waitStartedMs + (options.maxWaitMs ?? VACUUM_WAIT_MAX_MS);
  const found = await vacuumRunning(sql).catch(() => false);
  let running = found;
  while (running && performance.now() < deadlineMs) {
    await Bun.sleep(Math.min(POLL_MS, Math.max(deadlineMs - performance.now(), 0)));
    running = await vacuumRunning(sql).catch(() => false);
  }
  const endMs = performance.now();
  // Nothing done and nothing to wait for reads 0, not the milliseconds of looking.
  const idle = done.length === 0 && refused === null && !found;
  const vacuumWaitS = found ? round3((endMs - waitStartedMs) / 1_000) : 0;
  const waited = found && !running ? `waited ${vacuumWaitS} s for a VACUUM to finish` : null;
  const problems = [
    refused,
    running ? `a VACUUM still ran on the database after ${vacuumWaitS} s: the cell starts anyway` : null,
  ].filter((part) => part !== null);
  const parts = [done.length > 0 ? done.join(" + ") : null, waited, ...problems].filter(
    (part) => part !== null,
  );
  return {
    settleS: idle ? 0 : round3((endMs - startedMs) / 1_000),
    vacuumWaitS,
    settled: problems.length === 0,
    note: parts.length === 0 ? null : parts.join("; "),
  };
}

/** The row's columns of the settle before its cell (null: not known, as in `bun run attack` rows). */
export function settleColumns(settle: DbSettle | null) {
  return {
    db_settle_s: settle?.settleS ?? null,
    vacuum_wait_s: settle?.vacuumWaitS ?? null,
    db_settled: settle?.settled ?? null,
  };
}

function round3(value: number): number {
  return Math.round(value * 1_000) / 1_000;
}
