import { describe, expect, test } from "bun:test";
import { chooseDbQueries } from "./counters.ts";

describe("database query counts", () => {
  test("pg_stat_statements is used when it agrees with the server within the requests in flight", () => {
    expect(chooseDbQueries({ server: 1_000, probeQueries: 20, pgDelta: 1_030, inFlight: 16 })).toEqual({
      dbQueries: 1_010,
      source: "pg_stat_statements",
    });
  });

  test("another client on the database makes the server's count the one used, saying so", () => {
    const chosen = chooseDbQueries({ server: 1_000, probeQueries: 0, pgDelta: 5_000, inFlight: 16 });
    expect(chosen.dbQueries).toBe(1_000);
    expect(chosen.source).toContain("other clients");
  });

  test("a reset or empty view never reads as 0 queries", () => {
    const reset = chooseDbQueries({ server: 1_000, probeQueries: 0, pgDelta: 3, inFlight: 16 });
    expect(reset).toEqual({
      dbQueries: 1_000,
      source: "server_counter (pg_stat_statements saw 3, fewer than the server sent: reset or evicted)",
    });
    const empty = chooseDbQueries({ server: 1_000, probeQueries: 0, pgDelta: null, inFlight: 16 });
    expect(empty.dbQueries).toBe(1_000);
    expect(empty.source).toContain("unavailable or empty");
  });
});
