/**
 * Load generators on hosts of their own, run for real: the server on this machine's namespace, vegeta and k6
 * split over network-namespace hosts and merged exactly, every row checked as usual (the server's count,
 * the stream, the simulation), and nothing left behind after a run or an interrupted one. And the server
 * itself on a host of its own, reaching Postgres and Redis across the bridge.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { ownNamespaces } from "../isolation/netns.ts";
import type { Experiment, ExperimentAttack } from "../plan/experiment_plan.ts";
import type { Services } from "../services/lifecycle.ts";
import { detailReads, type Row, runRows, seededServices, testExperiment } from "./run_testing.ts";

let services: Services;

beforeAll(async () => {
  services = await seededServices();
});

function reads(loadgenHosts: number, overrides: Partial<ExperimentAttack> = {}): ExperimentAttack {
  return detailReads({
    name: `hosts_${loadgenHosts}`,
    keys: { distribution: { kind: "zipf", exponent: 1.1 }, seed: 3, keyspace: 2_000 },
    maxConnections: 50,
    loadgenHosts,
    ...overrides,
  });
}

function experiment(overrides: Partial<Experiment> = {}): Experiment {
  return testExperiment([reads(2)], overrides);
}

function run(exp: Experiment, signal?: AbortSignal): Promise<Row[] | string> {
  return runRows(exp, { name: "topology", services, signal });
}

/**
 * The generators' requests reached the server across the bridge: the server counted them all, and the rate
 * held as the lab itself judges it (95% of 300 rps × 2 s, lab/cell/judge.ts). One object, so that a failure
 * prints every figure it depends on.
 */
function acrossTheBridge(row: Row): void {
  const completed = Number(row.completed);
  const counted = Number(row.server_requests);
  expect({
    heldTheRate: completed >= 0.95 * 600,
    serverCountedThem: Math.abs(counted - completed) <= 50,
    completed,
    counted,
    achieved: row.achieved_rps,
    errors: row.error_counts,
  }).toMatchObject({ heldTheRate: true, serverCountedThem: true });
}

describe("load generators on hosts of their own", () => {
  for (const [tool, hosts] of [
    ["vegeta", 2],
    ["k6", 2],
    ["vegeta", 1],
  ] as const) {
    test(`${tool} from ${hosts} host${hosts === 1 ? "" : "s"}: a valid row that says where the load ran, nothing left behind`, async () => {
      const rows = await run(experiment({ tools: [tool], attacks: [reads(hosts)] }));
      if (typeof rows === "string") throw new Error(rows);
      const [row] = rows;
      expect(row?.invalid_reason).toBe("");
      expect(row?.loadgen_hosts).toBe(String(hosts));
      expect(row?.topology).toContain(`${hosts} load-generator host`);
      expect(row?.topology).toMatch(/namespace \(198\.18\.\d+\.1\)/);
      acrossTheBridge(row as Row);
      expect(ownNamespaces()).toEqual([]);
    });
  }

  for (const hosts of [0, 1]) {
    test(`the server on a host of its own, the load from ${hosts === 0 ? "this machine's namespace" : "1 host"}: none and two_tier valid across the bridge`, async () => {
      const rows = await run(
        experiment({
          strategies: ["none", "two_tier"],
          attacks: [reads(hosts, { server: { apart: true } })],
        }),
      );
      if (typeof rows === "string") throw new Error(rows);
      expect(rows.map((row) => row.strategy)).toEqual(["none", "two_tier"]);
      for (const row of rows) {
        expect(row.invalid_reason).toBe("");
        // It listened on its host's address, which exists only inside that namespace.
        expect(row.topology).toMatch(
          /^server on a host of its own \(198\.18\.\d+\.10\), reaching Postgres and Redis/,
        );
        expect(row.topology).toContain(
          hosts === 0 ? "load tool on this machine's namespace" : "1 load-generator host",
        );
        expect(row.loadgen_hosts).toBe(String(hosts));
        expect({ postgres: row.postgres_path, redis: row.redis_path }).toEqual({
          postgres: "toxiproxy",
          redis: "toxiproxy",
        });
        acrossTheBridge(row);
      }
      expect(ownNamespaces()).toEqual([]);
    });
  }

  test("a tool that cannot split a plan over hosts is refused, naming the ones that can", async () => {
    const refusal = await run(
      experiment({ tools: ["wrk"], attacks: [reads(2, { model: { kind: "closed", connections: 4 } })] }),
    );
    expect(typeof refusal).toBe("string");
    expect(refusal as string).toContain("wrk cannot split one plan over 2 load-generator hosts");
    expect(ownNamespaces()).toEqual([]);
  });

  test("an interrupted run removes its hosts", async () => {
    const abort = new AbortController();
    let during: string[] = [];
    setTimeout(() => {
      during = ownNamespaces();
    }, 1_000);
    setTimeout(() => abort.abort(), 1_500);
    const rows = await run(experiment({ attacks: [reads(2, { durationS: 5 })] }), abort.signal);
    expect(rows).toEqual([]); // a cell cut short is not a row
    expect(during).toHaveLength(2); // the hosts were there while it ran
    expect(ownNamespaces()).toEqual([]);
  });
});
