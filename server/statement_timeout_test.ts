/**
 * PG_STATEMENT_TIMEOUT_MS on both drivers, for real: a PUT of a row another connection holds locked runs
 * into the statement timeout, and the server answers 503 with Retry-After instead of 500 or hanging.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type postgres from "postgres";
import { testDatabaseUrl, testServices, uniquePrefix } from "../lab/shared/testing.ts";
import { createServer } from "../server.ts";
import { DEFAULT_CONFIG, PG_DRIVERS, readConfig } from "../server_config.ts";

let databaseUrl: string;
let redisUrl: string;
let sql: postgres.Sql;

beforeAll(async () => {
  redisUrl = (await testServices()).redisUrl;
  databaseUrl = await testDatabaseUrl({ rows: 2_000, seed: 7, descriptionBytes: 64 });
  const { default: pg } = await import("postgres");
  sql = pg(databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql.end();
});

test("readConfig defaults PG_STATEMENT_TIMEOUT_MS to 5000 and takes 0 for none", () => {
  expect(readConfig({}).pgStatementTimeoutMs).toBe(5_000);
  expect(readConfig({ PG_STATEMENT_TIMEOUT_MS: "0" }).pgStatementTimeoutMs).toBe(0);
  expect(() => readConfig({ PG_STATEMENT_TIMEOUT_MS: "soon" })).toThrow(
    "Cannot read PG_STATEMENT_TIMEOUT_MS: expected an integer in 0..2147483647: received soon",
  );
});

for (const pgDriver of PG_DRIVERS) {
  test(`${pgDriver}: a PUT blocked on a row lock past PG_STATEMENT_TIMEOUT_MS=300 is 503 with Retry-After; the server keeps answering`, async () => {
    const lab = createServer({
      ...DEFAULT_CONFIG,
      strategy: "local",
      pgDriver,
      databaseUrl,
      redisUrl,
      redisKeyPrefix: uniquePrefix("statement-timeout"),
      pgStatementTimeoutMs: 300,
    });
    const id = 17;
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    const { promise: locked, resolve: onLocked } = Promise.withResolvers<void>();
    const holder = sql.begin(async (tx) => {
      await tx`select id from products where id = ${id} for update`;
      onLocked();
      await released;
    });
    try {
      await locked;
      const startedMs = performance.now();
      const response = await lab.app.handle(
        new Request(`http://localhost/products/${id}`, {
          method: "PUT",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ stock: 9 }),
        }),
      );
      const elapsedMs = performance.now() - startedMs;
      const body = (await response.json()) as { error: string; retryAfterS: number };
      expect({ status: response.status, retryAfter: response.headers.get("retry-after") }).toEqual({
        status: 503,
        retryAfter: "1",
      });
      expect(body.error).toContain("PG_STATEMENT_TIMEOUT_MS=300");
      expect(elapsedMs).toBeGreaterThanOrEqual(250);
      release();
      await holder;
      expect((await lab.app.handle(new Request(`http://localhost/products/${id}`))).status).toBe(200);
      // The cancelled update changed nothing.
      const [row] = await sql<{ stock: number }[]>`select stock from products where id = ${id}`;
      expect(row?.stock).not.toBe(9);
    } finally {
      release();
      await holder.catch(() => {});
      await lab.close();
    }
  });
}
