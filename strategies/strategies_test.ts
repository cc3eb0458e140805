/**
 * The strategy contract (strategies/_contract.ts) against this repo's strategies, and against each documented
 * file set copied alone into an empty project that holds only the npm dependencies its headers name: a user
 * who copies `redis.ts` and `redis_ioredis.ts` into a service gets files that type-check and keep the
 * contract there, faults included (one Toxiproxy server of this file's own, in front of the real Redis, for
 * every run). The Redis strategies run on each client: ioredis and Bun's RedisClient in the repo; in the
 * copies, each on the adapter its set holds (the Bun sets install no ioredis at all).
 */
import { describe, expect, test } from "bun:test";
import { copyFileSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createClient, createCluster } from "redis";
import { REPO_ROOT } from "../lab/shared/repo.ts";
import { ownFaults, repoStrategies } from "../lab/shared/strategy_testing.ts";
import { testTmpdir } from "../lab/shared/test_tmpdir.ts";
import { testRedisClusterUrl, testServices } from "../lab/shared/testing.ts";
import { type StrategyModules, strategyContract } from "./_contract.ts";
import { counted, countedLocal } from "./_counted.ts";
import * as local from "./local.ts";
import * as redis from "./redis.ts";
import * as ioredis from "./redis_ioredis.ts";
import * as node from "./redis_node.ts";
import * as nodeCluster from "./redis_node_cluster.ts";
import * as twoTier from "./two_tier.ts";

const redisUrl = async () => (await testServices()).redisUrl;
const faults = ownFaults();
const repo = repoStrategies;
strategyContract("repo", repo, redisUrl, faults);
strategyContract("repo on Bun's RedisClient", repo, redisUrl, faults, "bun");
strategyContract("repo on node-redis", repo, redisUrl, faults, "node-redis");
strategyContract("repo on an ioredis Cluster", repo, testRedisClusterUrl, faults, "ioredis-cluster");
strategyContract("repo on a node-redis cluster", repo, testRedisClusterUrl, faults, "node-redis-cluster");

/** What a user copies for each strategy, as the headers say: a strategy file, then the files it needs. */
const FILE_SETS = {
  none: ["none.ts"],
  local: ["local.ts"],
  redis: ["redis.ts", "redis_ioredis.ts"],
  redis_bun: ["redis.ts", "redis_bun.ts"],
  two_tier: ["two_tier.ts", "redis.ts", "redis_ioredis.ts"],
  two_tier_bun: ["two_tier.ts", "redis.ts", "redis_bun.ts"],
  tracking: ["tracking.ts", "redis.ts", "redis_ioredis_tracking.ts", "redis_ioredis.ts"],
  tracking_node: ["tracking.ts", "redis.ts", "redis_node.ts"],
  redis_node_cluster: ["redis.ts", "redis_node_cluster.ts"],
  two_tier_node_cluster: ["two_tier.ts", "redis.ts", "redis_node_cluster.ts"],
} as const;
type SetName = keyof typeof FILE_SETS;
const FILES = [...new Set(Object.values(FILE_SETS).flat())];
const sourceOf = (file: string) => readFileSync(join(REPO_ROOT, "strategies", file), "utf8");

const manifest = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The npm packages a file's header says a copy needs ("Copying this file? Needs ioredis@^6 …"). */
export function copyNeeds(source: string): Record<string, string> {
  const line = /Copying this file\? (.*)/.exec(source)?.[1] ?? "";
  return Object.fromEntries(
    [...line.matchAll(/([a-z@][\w./-]*)@(\^?\d+(?:\.\d+)*)/g)].map((m) => [m[1], m[2]]),
  );
}

/** The sibling files a file's header says a copy needs beside it ("… and redis.ts beside it"). */
export function copySiblings(source: string): string[] {
  const line = /Copying this file\? (.*)/.exec(source)?.[1] ?? "";
  return [...line.matchAll(/\b(\w+\.ts)\b/g)].map((m) => m[1] as string);
}

/** What a file imports: packages (the runtime's own, `node:*` and `bun`, aside) and sibling files. */
function imported(source: string): { packages: string[]; siblings: string[] } {
  const specs = [...source.matchAll(/^(?:import|export) [^;]* from "([^"]+)";/gm)].map((m) => m[1] as string);
  const unique = [...new Set(specs)];
  return {
    packages: unique.filter((spec) => !spec.startsWith("node:") && spec !== "bun" && !spec.startsWith("./")),
    siblings: unique.filter((spec) => spec.startsWith("./")).map((spec) => spec.slice(2)),
  };
}

/** The repo's pinned version of `name`, checked against the header's range (^major). */
function pinned(name: string, range: string): string {
  const version = manifest.dependencies[name];
  if (version === undefined) throw new RangeError(`Cannot copy: ${name} is not a dependency of this repo`);
  if (range.startsWith("^") && version.split(".")[0] !== range.slice(1).split(".")[0]) {
    throw new RangeError(
      `Cannot copy: the header asks for ${name}@${range}: received ${version} in package.json`,
    );
  }
  return version;
}

interface Copy {
  name: SetName;
  dir: string;
  install: { exitCode: number | null; output: string };
}

/** A file set alone in an empty project with its headers' dependencies installed (real `bun install`). */
async function copyAlone(name: SetName): Promise<Copy> {
  const dir = mkdtempSync(join(testTmpdir(), `cachelab-copy-${name}-`));
  const needs: Record<string, string> = {};
  for (const file of FILE_SETS[name]) {
    copyFileSync(join(REPO_ROOT, "strategies", file), join(dir, file));
    Object.assign(needs, copyNeeds(sourceOf(file)));
  }
  const dependencies = Object.fromEntries(
    Object.entries(needs).map(([dep, range]) => [dep, pinned(dep, range)]),
  );
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({
      name: `copy-of-${name.replaceAll("_", "-")}`,
      private: true,
      type: "module",
      dependencies,
      devDependencies: { "@types/bun": manifest.devDependencies["@types/bun"] },
    }),
  );
  const tsconfig = JSON.parse(readFileSync(join(REPO_ROOT, "tsconfig.json"), "utf8")) as object;
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ ...tsconfig, include: ["*.ts"] }));
  const proc = Bun.spawn(["bun", "install", "--no-save"], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  const output = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
  return { name, dir, install: { exitCode: await proc.exited, output } };
}

const copies: Copy[] = await Promise.all(Object.keys(FILE_SETS).map((name) => copyAlone(name as SetName)));
const copyOf = (name: SetName) => copies.find((copy) => copy.name === name) as Copy;

describe("a strategy copied alone", () => {
  test("each header names the packages and sibling files its file imports, and nothing of this repo", () => {
    expect(copyNeeds(sourceOf("two_tier.ts"))).toEqual({ "quick-lru": "^7" });
    for (const file of FILES) {
      const source = sourceOf(file);
      const { packages, siblings } = imported(source);
      expect({ file, packages: packages.sort() }).toEqual({
        file,
        packages: Object.keys(copyNeeds(source)).sort(),
      });
      for (const sibling of siblings)
        expect({ file, named: copySiblings(source) }).toMatchObject({
          file,
          named: expect.arrayContaining([sibling]),
        });
    }
    // ioredis only where a set holds redis_ioredis.ts: a service on Bun's client does without it.
    const needs = (name: SetName) => [
      ...new Set(FILE_SETS[name].flatMap((file) => Object.keys(copyNeeds(sourceOf(file)))).sort()),
    ];
    expect(Object.fromEntries(Object.keys(FILE_SETS).map((name) => [name, needs(name as SetName)]))).toEqual({
      none: [],
      local: ["quick-lru"],
      redis: ["ioredis"],
      redis_bun: [],
      two_tier: ["ioredis", "quick-lru"],
      two_tier_bun: ["quick-lru"],
      tracking: ["ioredis", "quick-lru"],
      tracking_node: ["quick-lru", "redis"],
      redis_node_cluster: ["redis"],
      two_tier_node_cluster: ["quick-lru", "redis"],
    });
  });

  test("each Redis file's header says what it needs on a Redis Cluster, naming adapters that exist", () => {
    const header = (file: string) => sourceOf(file).slice(0, sourceOf(file).indexOf("*/"));
    expect(header("redis.ts")).toMatch(/On a Redis Cluster: a value and its generation share a hash slot/);
    expect(header("redis.ts")).toMatch(/ioredisClusterCommands \(redis_ioredis\.ts\) or nodeClusterCommands/);
    expect(header("redis.ts")).toMatch(/a\s+\* prefix without braces/);
    expect(header("two_tier.ts")).toMatch(/On a Redis Cluster: as redis\.ts .* classic PUBLISH/s);
    expect(header("redis_ioredis.ts")).toContain("ioredisClusterCommands");
    expect(header("redis_node_cluster.ts")).toContain("nodeClusterCommands");
    expect(header("redis_bun.ts")).toContain("Not for a Redis Cluster: Bun's client has no cluster support");
    expect([typeof ioredis.ioredisClusterCommands, typeof nodeCluster.nodeClusterCommands]).toEqual([
      "function",
      "function",
    ]);
  });

  test("each set holds every sibling its files import", () => {
    for (const [name, files] of Object.entries(FILE_SETS)) {
      const missing = files
        .flatMap((file) => imported(sourceOf(file)).siblings)
        .filter((sibling) => !(files as readonly string[]).includes(sibling));
      expect({ name, missing }).toEqual({ name, missing: [] });
    }
  });

  for (const copy of copies) {
    test(`${FILE_SETS[copy.name].join(" + ")}: installs only what its headers name and type-checks there, strict`, async () => {
      expect({ install: copy.install.exitCode, output: copy.install.output }).toMatchObject({ install: 0 });
      const tsc = Bun.spawn([join(REPO_ROOT, "node_modules", ".bin", "tsc"), "--noEmit", "-p", copy.dir], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const output = await new Response(tsc.stdout).text();
      expect({ exitCode: await tsc.exited, output }).toEqual({ exitCode: 0, output: "" });
    });
  }
});

describe("the lab's counters", () => {
  test("counted local reports the /stats fields local always had; a pasted copy's stats() has tiers, loads, errors", async () => {
    const plain = local.createCache({ maxSize: 10, ttlMs: 1_000 });
    const cache = countedLocal((onEvent) => local.createCache({ maxSize: 10, ttlMs: 1_000, onEvent }));
    for (const c of [plain, cache]) {
      expect(await c.getOrLoad("k", async () => "v")).toBe("v");
      expect(await c.getOrLoad("k", async () => "w")).toBe("v");
    }
    expect(plain.stats()).toEqual({ tiers: { local: { hits: 1, misses: 1 } }, loads: 1, errors: 0 });
    expect(Object.keys(cache.stats())).toEqual([
      "tiers",
      "loads",
      "errors",
      "invalidationsPublished",
      "invalidationsReceived",
      "loadWaits",
      "earlyRefreshes",
      "refreshLoads",
      "refreshFailures",
    ]);
    expect(cache.stats()).toMatchObject({ loads: 1, loadWaits: 1, earlyRefreshes: 0 });
  });

  // What /stats has always reported for the Redis strategies, in this order: the lab reads these names.
  const STATS_FIELDS = [
    "tiers",
    "loads",
    "errors",
    "invalidationsPublished",
    "invalidationsReceived",
    "breakerOpens",
    "breakerCloses",
    "breakerOpen",
    "breakerSkipped",
    "invalidationsPending",
    "invalidationsDropped",
    "loadWaits",
    "earlyRefreshes",
    "refreshLoads",
    "refreshFailures",
    "staleFillsRefused",
  ];
  test("counted redis and two_tier report every /stats field, from their own stats() and their events", async () => {
    const down = "redis://127.0.0.1:1";
    const caches = [
      counted((onEvent) =>
        redis.createCache({
          redis: ioredis.ioredisCommands(down),
          ttlMs: 1_000,
          maxPendingInvalidations: 1,
          onEvent,
        }),
      ),
      counted((onEvent) =>
        twoTier.createCache({
          redis: ioredis.ioredisCommands(down),
          ttlMs: 1_000,
          l1MaxSize: 10,
          l1TtlMs: 1_000,
          maxPendingInvalidations: 1,
          onEvent,
        }),
      ),
    ];
    try {
      for (const cache of caches) {
        expect(await cache.getOrLoad("k", async () => "v")).toBe("v");
        await cache.delete("a");
        await cache.delete("b");
        expect(Object.keys(cache.stats())).toEqual(STATS_FIELDS);
        expect(cache.stats()).toMatchObject({
          loads: 1,
          loadWaits: 1,
          invalidationsPending: 1,
          invalidationsDropped: 1,
        });
      }
    } finally {
      await Promise.all(caches.map((cache) => cache.close()));
    }
  });
});

describe("tracking's adapter refuses what cannot carry Redis's pushes", () => {
  test("a node-redis client without RESP3 and emitInvalidate, and a cluster, each with the reason", () => {
    const resp2 = createClient({ RESP: 2 });
    const untracked = createClient({ RESP: 3 });
    const cluster = createCluster({ rootNodes: [{ url: "redis://127.0.0.1:1" }] });
    const refusal = (client: unknown) => {
      try {
        node.nodeRedisCommands(client as node.TrackingClient);
        return "accepted";
      } catch (error) {
        return error instanceof TypeError ? error.message : `not a TypeError: ${error}`;
      }
    };
    expect([resp2, untracked, cluster].map(refusal)).toEqual([
      "Cannot track: the client needs RESP: 3 and emitInvalidate: true: received RESP 2, emitInvalidate undefined",
      "Cannot track: the client needs RESP: 3 and emitInvalidate: true: received RESP 3, emitInvalidate undefined",
      "Cannot track: a node-redis cluster carries no invalidate events (createCluster takes no emitInvalidate): received a cluster client",
    ]);
  });
});

describe("on a Redis Cluster", () => {
  test("cacheKeyOf reads a value's Redis key back into its cache key, and nothing else", () => {
    const cases: [string, string | null][] = [
      ["cache:{product:7}", "product:7"],
      ["cache:{product:7}:gen", null], // its generation
      ["cache:{a}:gen}", "a}:gen"], // the value of the key "a}:gen", not a generation
      ["cache:{}", ""],
      ["other:{product:7}", null],
      ["cache:product:7", null],
    ];
    expect(cases.map(([key]) => [key, redis.cacheKeyOf("cache:", key)])).toEqual(cases);
  });

  test("a prefix with a brace is refused: it would move or empty the hash tag a key and its generation share", () => {
    const commands = ioredis.ioredisCommands("redis://127.0.0.1:1");
    try {
      for (const prefix of ["app{1}:", "app}:", "{"]) {
        expect(() => redis.createCache({ redis: commands, ttlMs: 1_000, prefix })).toThrow(
          `Cannot create cache: a prefix must not hold a brace (a hash tag's): received ${prefix}`,
        );
      }
    } finally {
      commands.end();
    }
  });
});

describe("the copy check", () => {
  test("a strategy that imports a file of this repo does not type-check alone", async () => {
    const local = copyOf("local");
    const dir = mkdtempSync(join(testTmpdir(), "cachelab-copy-leaky-"));
    const source = readFileSync(join(REPO_ROOT, "strategies", "local.ts"), "utf8");
    writeFileSync(
      join(dir, "local.ts"),
      `import type { CacheStrategy } from "./_strategy.ts";\n${source}\nexport type Checked = CacheStrategy;\n`,
    );
    writeFileSync(join(dir, "tsconfig.json"), readFileSync(join(local.dir, "tsconfig.json")));
    symlinkSync(join(local.dir, "node_modules"), join(dir, "node_modules"));
    const tsc = Bun.spawn([join(REPO_ROOT, "node_modules", ".bin", "tsc"), "--noEmit", "-p", dir], {
      stdout: "pipe",
    });
    const output = await new Response(tsc.stdout).text();
    expect(await tsc.exited).not.toBe(0);
    expect(output).toContain("./_strategy.ts");
  });
});

/** The copied sets as modules: each Redis strategy with the adapters its own set holds. */
async function copiedModules(client: "ioredis" | "bun" | "nodeCluster"): Promise<StrategyModules> {
  const suffix = { ioredis: "", bun: "_bun", nodeCluster: "_node_cluster" }[client];
  const from = async (name: SetName, file: string) => import(join(copyOf(name).dir, file));
  const adapter = client;
  const adapterFile = {
    ioredis: "redis_ioredis.ts",
    bun: "redis_bun.ts",
    nodeCluster: "redis_node_cluster.ts",
  }[client];
  const redisSet = `redis${suffix}` as SetName;
  const twoTierSet = `two_tier${suffix}` as SetName;
  return {
    none: await from("none", "none.ts"),
    local: await from("local", "local.ts"),
    redis: await from(redisSet, "redis.ts"),
    two_tier: await from(twoTierSet, "two_tier.ts"),
    tracking: await from("tracking", "tracking.ts"),
    adapters: {
      redis: { [adapter]: await from(redisSet, adapterFile) },
      two_tier: { [adapter]: await from(twoTierSet, adapterFile) },
      tracking: {
        ioredis: await from("tracking", "redis_ioredis_tracking.ts"),
        node: await from("tracking_node", "redis_node.ts"),
      },
    },
  };
}
strategyContract("copied alone", await copiedModules("ioredis"), redisUrl, faults);
strategyContract(
  "copied alone without ioredis, on Bun's RedisClient",
  await copiedModules("bun"),
  redisUrl,
  faults,
  "bun",
);
strategyContract(
  "copied alone, on node-redis",
  await copiedModules("ioredis"),
  redisUrl,
  faults,
  "node-redis",
);
// The same copies on the lab's three-master cluster: what the headers name is all a cluster needs.
strategyContract(
  "copied alone, on an ioredis Cluster",
  await copiedModules("ioredis"),
  testRedisClusterUrl,
  faults,
  "ioredis-cluster",
);
strategyContract(
  "copied alone with node-redis, on its cluster",
  await copiedModules("nodeCluster"),
  testRedisClusterUrl,
  faults,
  "node-redis-cluster",
);
