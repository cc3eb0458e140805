/**
 * Postgres's and Redis's CPU as the rows report it, on the real services: it is read, it grows with work the
 * services do, a backend that exits keeps its CPU in the sum, and an unknown or restarted reading is no figure.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import type { Redis } from "ioredis";
import type postgres from "postgres";
import { eventually, testRedis, testSql } from "../shared/testing.ts";
import { cpuDelta, serviceCpu } from "./service_cpu.ts";

let sql: postgres.Sql;
let redis: Redis;
beforeAll(async () => {
  [sql, redis] = await Promise.all([testSql(), testRedis()]);
});
afterAll(async () => {
  await sql?.end();
  redis?.disconnect();
});

test("each service's CPU is read, and grows with the work it is given", async () => {
  const before = await serviceCpu(sql, redis);
  expect(before.postgresS).toBeGreaterThan(0);
  expect(before.redisS).toBeGreaterThan(0);
  // Work for each: a CPU-bound query, and a Lua loop in Redis.
  await sql`select count(*) from generate_series(1, 3000000)`;
  await redis.eval("local n = 0 for i = 1, 20000000 do n = n + i end return 1", 0);
  const after = await serviceCpu(sql, redis);
  expect(cpuDelta(before.postgresS, after.postgresS)).toBeGreaterThan(0.05);
  expect(cpuDelta(before.redisS, after.redisS)).toBeGreaterThan(0.05);
});

test("a backend that does its work and exits leaves its CPU in Postgres's sum", async () => {
  const before = await serviceCpu(sql, redis);
  const other = await testSql(1);
  const [{ pid }] = (await other`select pg_backend_pid() as pid`) as [{ pid: number }];
  await other`select count(*) from generate_series(1, 3000000)`;
  await other.end();
  // Its CPU joins the sum once the postmaster has reaped it: wait for the process to be gone, not a time.
  expect(await eventually(() => !existsSync(`/proc/${pid}`), 10_000)).toBe(true);
  const after = await serviceCpu(sql, redis);
  expect(cpuDelta(before.postgresS, after.postgresS)).toBeGreaterThan(0.05);
});

test("an unknown reading, or one that went down (a restart), is no figure, never 0", () => {
  expect(cpuDelta(null, 3)).toBeNull();
  expect(cpuDelta(3, null)).toBeNull();
  expect(cpuDelta(5, 2)).toBeNull();
  expect(cpuDelta(2, 2.5)).toBe(0.5);
});
