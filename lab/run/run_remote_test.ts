/**
 * A server the lab did not start (`--server-url`), run for real: identified by its /info, reset by its own
 * endpoint before each cell, verified and judged like one the lab started. And the checks firing: a server
 * whose reset does nothing (a warm cache the simulation does not have), a reset in the middle of a run, a
 * server on other settings or another database.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { adminHeaders } from "../cell/admin.ts";
import { type ServerProcess, startServer } from "../cell/server_process.ts";
import type { DuringResult, Experiment } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { freePort } from "../shared/ports.ts";
import { uniquePrefix } from "../shared/testing.ts";
import { detailReads, num, type Row, runRows, seededServices, testExperiment } from "./run_testing.ts";

let services: Services;
const started: ServerProcess[] = [];
// The owner starts the server with a token and hands it to the lab through the lab's environment.
const OWNER_TOKEN = `owner-${crypto.randomUUID()}`;

beforeAll(async () => {
  services = await seededServices();
  process.env.CACHELAB_ADMIN_TOKEN = OWNER_TOKEN;
});
afterAll(async () => {
  delete process.env.CACHELAB_ADMIN_TOKEN;
  await Promise.all(started.map((server) => server.stop()));
});

/** A server as its owner would start it (`bun run server`), not by the run. */
async function ownServer(env: Record<string, string> = {}): Promise<ServerProcess> {
  const server = await startServer({
    env: {
      CACHE_STRATEGY: "local",
      DATABASE_URL: services.databaseUrl,
      REDIS_URL: services.redisUrl,
      REDIS_KEY_PREFIX: uniquePrefix("remote"),
      NODE_ENV: "production",
      CACHELAB_ADMIN_TOKEN: OWNER_TOKEN,
      PG_ACQUIRE_TIMEOUT_MS: "0", // the lab's cells run without the gate (LAB_ACQUIRE_TIMEOUT_MS)
      MAX_EVENT_LOOP_DELAY_MS: "0", // nor shedding on event-loop delay (LAB_MAX_EVENT_LOOP_DELAY_MS)
      ...env,
    },
  });
  started.push(server);
  return server;
}

// Uniform over 300 keys (detailReads): a cache that starts empty hits ≈ 0.84 in the measured run, a warm
// one ≈ 1.
function experiment(overrides: Partial<Experiment> = {}): Experiment {
  return testExperiment([detailReads()], {
    strategies: ["none", "local", "redis", "two_tier"],
    ...overrides,
  });
}

function run(exp: Experiment, serverUrls: string[]): Promise<Row[] | string> {
  return runRows(exp, { name: "remote", services, serverUrls });
}

describe("a server the lab did not start", () => {
  test("its strategy's cells run on it, reset before each, verified and judged; the rows say where it ran", async () => {
    for (const strategy of ["local", "two_tier"] as const) {
      const server = await ownServer({ CACHE_STRATEGY: strategy });
      const rows = await run(experiment({ repeats: 2 }), [server.url]);
      if (typeof rows === "string") throw new Error(rows);
      // Only the cells of the strategy it runs; both repeats start from an empty cache.
      expect(rows.map((row) => row.strategy)).toEqual([strategy, strategy]);
      for (const row of rows) {
        expect(row.invalid_reason).toBe("");
        expect(row.topology).toStartWith(`remote server the lab did not start: ${server.url} on `);
        expect(row.server_cpu_limit).toBe("");
        // Its CPU as it reports it (its pid is not this machine's to read).
        expect(num(row, "server_cpu_s")).toBeGreaterThan(0);
        expect(num(row, "hit_ratio")).toBeLessThan(0.95);
        expect(Math.abs(num(row, "hit_ratio") - num(row, "hit_ratio_expected"))).toBeLessThanOrEqual(0.02);
      }
      // The same process served both cells: it was reset, not restarted.
      const stats = (await (await fetch(`${server.url}/stats`)).json()) as { resets: number };
      expect(stats.resets).toBe(2);
    }
  });

  test("a server whose reset does nothing: the second cell's warm cache is caught by the simulation", async () => {
    const server = await ownServer();
    // In front of the real server, answering POST /admin/reset itself: a reset that lies.
    const port = await freePort();
    const liar = Bun.serve({
      port,
      hostname: "127.0.0.1",
      fetch: async (request) => {
        const url = new URL(request.url);
        if (url.pathname === "/admin/reset") return Response.json({ redisKeysRemoved: 0 });
        return fetch(`${server.url}${url.pathname}${url.search}`, {
          method: request.method,
          headers: request.headers,
          body: request.method === "GET" ? undefined : await request.arrayBuffer(),
        });
      },
    });
    try {
      const rows = await run(experiment({ repeats: 2 }), [`http://127.0.0.1:${port}`]);
      if (typeof rows === "string") throw new Error(rows);
      const [first, second] = rows;
      expect(first?.invalid_reason).toBe("");
      expect(second?.valid).toBe("false");
      expect(second?.invalid_reason).toContain("deviates from the simulation");
      expect(num(second, "hit_ratio")).toBeGreaterThan(num(second, "hit_ratio_expected") + 0.1);
    } finally {
      liar.stop(true);
    }
  });

  test("a reset in the middle of a measured run makes the row invalid", async () => {
    const server = await ownServer();
    const rows = await run(
      experiment({
        during: async ({ serverUrl, signal }): Promise<DuringResult> => {
          await Bun.sleep(800);
          if (!signal.aborted) {
            await fetch(`${serverUrl}/admin/reset`, {
              method: "POST",
              headers: adminHeaders({ adminToken: OWNER_TOKEN }),
            });
          }
          return { staleReads: 0, checks: 0, failed: 0, probes: [] };
        },
      }),
      [server.url],
    );
    if (typeof rows === "string") throw new Error(rows);
    expect(rows[0]?.valid).toBe("false");
    expect(rows[0]?.invalid_reason).toContain("the server was reset during the run");
  });

  test("a server on other settings is refused, naming the differences and the environment the cells need", async () => {
    const server = await ownServer({ CACHE_TTL_MS: "1000" });
    const refusal = await run(experiment(), [server.url]);
    expect(refusal).toBeString();
    expect(refusal).toContain("no cell matches the server");
    expect(refusal).toContain("CACHE_TTL_MS=1000, not 60000");
    expect(refusal).toContain("a server for them: CACHE_STRATEGY=local");
  });

  test("a server reading another database than the lab's is refused", async () => {
    const other = new URL(services.databaseUrl);
    other.pathname = "/postgres";
    const server = await ownServer({ DATABASE_URL: other.toString() });
    const refusal = await run(experiment(), [server.url]);
    expect(refusal).toBeString();
    expect(refusal).toMatch(/reads database postgres.*set DATABASE_URL to the server's database/);
  });

  test("a server whose admin token the lab lacks is refused, naming CACHELAB_ADMIN_TOKEN", async () => {
    const server = await ownServer({ CACHELAB_ADMIN_TOKEN: "the-owners-other-token" });
    const outcome = await run(experiment(), [server.url]).then(
      (rows) => (typeof rows === "string" ? rows : JSON.stringify(rows)),
      (error: Error) => error.message,
    );
    expect(outcome).toContain("401");
    expect(outcome).toContain("set CACHELAB_ADMIN_TOKEN");
  });

  test("a URL that is not a cachelab server, or not a server root, is refused", async () => {
    expect(await run(experiment(), ["http://127.0.0.1:1"])).toStartWith("Cannot reach the server at");
    const server = await ownServer();
    expect(await run(experiment(), [`${server.url}/products`])).toContain("expected http://HOST:PORT");
  });
});
