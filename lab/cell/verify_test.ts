import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import type { ServerStats } from "../../server/meter.ts";
import { testDatabaseUrl } from "../shared/testing.ts";
import { type ServerProcess, startServer } from "./server_process.ts";
import { verifyServer } from "./verify.ts";

const PLAN = { rows: 2_000, seed: 7, descriptionBytes: 64 };
let server: ServerProcess;
let sql: postgres.Sql;

beforeAll(async () => {
  const databaseUrl = await testDatabaseUrl(PLAN);
  sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  server = await startServer({ env: { CACHE_STRATEGY: "local", DATABASE_URL: databaseUrl } });
});

afterAll(async () => {
  await server?.stop();
  await sql?.end();
});

/** The local cache's reads since the server started or was last reset. */
async function cacheReads(): Promise<number> {
  const stats = (await (await fetch(`${server.url}/stats`)).json()) as ServerStats;
  const local = stats.tiers.local ?? { hits: 0, misses: 0 };
  return local.hits + local.misses;
}

test("verification reads ids outside the attack's keyspace and keeps them: its reads stay counted", async () => {
  const before = await cacheReads();
  expect(await verifyServer(server, sql, { rows: PLAN.rows, avoidKeyspace: 1_000 })).toBeNull();
  // Its 10 rows, and the list page's and the absent id's reads through the cache.
  expect((await cacheReads()) - before).toBeGreaterThanOrEqual(10);
});

test("when the keyspace holds every row, verification's reads are forgotten: the cache starts empty", async () => {
  expect(await verifyServer(server, sql, { rows: PLAN.rows, avoidKeyspace: PLAN.rows })).toBeNull();
  expect(await cacheReads()).toBe(0);
});
