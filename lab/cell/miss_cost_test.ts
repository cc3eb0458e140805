import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { testDatabaseUrl } from "../shared/testing.ts";
import { serverStats } from "./counters.ts";
import { type MissCost, missCost, missCostProblem, pgReadExecTimes } from "./miss_cost.ts";
import { type ServerProcess, startServer } from "./server_process.ts";

function cost(serverMeanMs: number | null, pgExecMeanMs: number | null, count = 100): MissCost {
  return {
    load:
      serverMeanMs === null
        ? null
        : { count, sumMs: serverMeanMs * count, meanMs: serverMeanMs, p50Ms: null, p99Ms: null, buckets: [] },
    pgExecMeanMs,
    pgCalls: 100,
  };
}

test("missCostProblem fires when the server's mean load is below Postgres's mean execution, beyond 5% + 10 µs", () => {
  expect(missCostProblem(cost(0.1, 0.5))).toBe(
    "the server's mean database load 0.1000 ms (100 loads) is below Postgres's mean execution time of the same statements 0.5000 ms (100 calls): the load timer or the statements matched are wrong",
  );
  // The round trip makes the server's mean larger; within the tolerance below is timer noise.
  expect(missCostProblem(cost(0.6, 0.5))).toBeNull();
  expect(missCostProblem(cost(0.47, 0.5))).toBeNull();
  expect(missCostProblem(cost(0.45, 0.5))).toContain("is below");
  // Many times larger is queueing under load, not a wrong figure.
  expect(missCostProblem(cost(40, 0.5))).toBeNull();
  // Nothing to compare: no check, never a made-up 0.
  expect(missCostProblem(cost(null, 0.5))).toBeNull();
  expect(missCostProblem(cost(0.1, null))).toBeNull();
  expect(missCostProblem(cost(0, 0.5, 0))).toBeNull();
});

describe("miss cost on a real server and Postgres", () => {
  // 10 000 reviews a product: a summary executes in milliseconds (~5 ms), a detail in tens of microseconds,
  // so a detail load as the server times it (a round trip: 0.5–1.5 ms on a busy machine) stays well below.
  const PLAN = { rows: 100, seed: 42, descriptionBytes: 50, reviewsPerProduct: 10_000 };
  let server: ServerProcess;
  let sql: postgres.Sql;
  beforeAll(async () => {
    const databaseUrl = await testDatabaseUrl(PLAN, "miss_cost_test");
    sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    // The view answers in a database with the extension (the lab's own has it: lab/services/probe.ts).
    await sql`create extension if not exists pg_stat_statements`;
    server = await startServer({ env: { CACHE_STRATEGY: "none", DATABASE_URL: databaseUrl } });
  });
  afterAll(async () => {
    await server?.stop();
    await sql.end();
  });

  async function snapshot() {
    const stats = await serverStats(server);
    return { sum: stats, each: [stats] };
  }

  async function load(path: string, times: number): Promise<void> {
    for (let i = 0; i < times; i++) {
      const response = await fetch(`${server.url}${path.replace("N", String(1 + (i % 100)))}`);
      await response.arrayBuffer();
      expect(response.status).toBe(200);
    }
  }

  test("the server's summary loads time at or above Postgres's execution of them: the check passes", async () => {
    await load("/products/N/summary", 5); // prepared on the connection before the window
    const [before, pgBefore] = [await snapshot(), await pgReadExecTimes(sql)];
    await load("/products/N/summary", 40);
    const [after, pgAfter] = [await snapshot(), await pgReadExecTimes(sql)];
    const measured = missCost(before, after, pgBefore, pgAfter);
    expect(measured.load?.count).toBe(40);
    expect(measured.pgCalls).toBeGreaterThanOrEqual(40);
    expect(measured.pgExecMeanMs).toBeGreaterThan(0.3);
    expect(measured.load?.meanMs).toBeGreaterThanOrEqual(measured.pgExecMeanMs as number);
    expect(missCostProblem(measured)).toBeNull();
  });

  test("a server window that does not hold the loads Postgres executed fires the check", async () => {
    // The server's snapshots bracket cheap detail loads; Postgres's bracket the expensive summaries: what a
    // timer on the wrong statement, or a statement match taking in the wrong queries, would report.
    // Postgres's window holds only summaries, the server's only details, on a connection that prepared both.
    await load("/products/N", 10);
    const pgBefore = await pgReadExecTimes(sql);
    await load("/products/N/summary", 40);
    const pgAfter = await pgReadExecTimes(sql);
    const before = await snapshot();
    await load("/products/N", 20);
    const after = await snapshot();
    const measured = missCost(before, after, pgBefore, pgAfter);
    expect(measured.load?.count).toBe(20);
    expect(measured.pgExecMeanMs).toBeGreaterThan(measured.load?.meanMs as number);
    expect(missCostProblem(measured)).toContain("is below Postgres's mean execution time");
  });
});
