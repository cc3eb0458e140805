/** The round trips the lab measures beside the load, on the real services (reached directly here). */
import { expect, test } from "bun:test";
import { testServices } from "../shared/testing.ts";
import { pingPaths } from "./path_rtt.ts";

test("a ping of each named service until the run ends; its median, or nothing from too few samples", async () => {
  const services = await testServices();
  const both = await pingPaths(services, ["postgres", "redis"], AbortSignal.timeout(500));
  expect(both.postgresMs).toBeGreaterThan(0);
  expect(both.redisMs).toBeGreaterThan(0);
  // On loopback a round trip is well under the 20 ms between pings.
  expect(both.redisMs as number).toBeLessThan(20);
  expect(await pingPaths(services, ["redis"], AbortSignal.timeout(500))).toMatchObject({ postgresMs: null });
  // A run too short for five samples gives no figure, never a guess.
  expect(await pingPaths(services, ["redis"], AbortSignal.timeout(30))).toEqual({
    postgresMs: null,
    redisMs: null,
  });
});
