/**
 * The contract every strategy keeps (bentocache's driver suite), as a function: strategies_test.ts runs it
 * against the strategies in this folder and against each file set copied alone into an empty project, with real
 * Redis, and real faults between a Redis strategy and Redis (a Toxiproxy proxy per test: hung, down).
 * `none` is the baseline: it keeps the parts of the contract that do not involve caching. It imports nothing
 * from the lab, so it travels with the strategies: the fault injector is passed in. With `client: "bun"` the
 * Redis strategies run on Bun's RedisClient (injected, behind the proxies, and created from URLs) and the
 * others are left out; tracking runs on ioredis (its two connections, redis_ioredis_tracking.ts) and, with
 * `client: "node-redis"`, alone on node-redis over RESP3 (redis_node.ts). With `client: "ioredis-cluster"`
 * or `"node-redis-cluster"` redis and two_tier run on a Redis Cluster (`redisUrl` names one of its masters; the
 * clients find the others), the test's own client an ioredis Cluster; the tests that put a proxy in front of
 * one Redis are left out there (a cluster client follows the nodes' own addresses past any proxy). The test's
 * own reads and writes of Redis stay on ioredis either way. The Redis strategies report their lab counters
 * through `onEvent`, counted as the server counts them (_counted.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RedisClient } from "bun";
import { Cluster, Redis } from "ioredis";
import { createCluster } from "redis";
import { counted, countedLocal } from "./_counted.ts";
import type { CacheStrategy } from "./_strategy.ts";
import type * as localModule from "./local.ts";
import type * as noneModule from "./none.ts";
import type * as redisModule from "./redis.ts";
import type * as bunModule from "./redis_bun.ts";
import type * as ioredisModule from "./redis_ioredis.ts";
import type * as ioredisTrackingModule from "./redis_ioredis_tracking.ts";
import type * as nodeModule from "./redis_node.ts";
import type * as nodeClusterModule from "./redis_node_cluster.ts";
import type * as trackingModule from "./tracking.ts";
import type * as twoTierModule from "./two_tier.ts";

/** The client adapters beside a Redis strategy: the one of the client under test at least. */
export interface Adapters {
  ioredis?: typeof ioredisModule;
  bun?: typeof bunModule;
  nodeCluster?: typeof nodeClusterModule;
}

/** A node-redis client with tracking on, as redis_node.ts makes and takes it. */
type NodeClient = ReturnType<typeof nodeModule.trackingClient>;

/** The five strategy modules under test, this folder's or copies of them, and the adapters beside each. */
export interface StrategyModules {
  none: typeof noneModule;
  local: typeof localModule;
  redis: typeof redisModule;
  two_tier: typeof twoTierModule;
  tracking: typeof trackingModule;
  adapters: { redis: Adapters; two_tier: Adapters; tracking: TrackingAdapters };
}

/** tracking's adapters: the one of the client under test at least. */
export interface TrackingAdapters {
  ioredis?: typeof ioredisTrackingModule;
  node?: typeof nodeModule;
}

/**
 * TCP proxies in front of Redis that can hang, refuse or delay (lab/faults/toxiproxy.ts's `Toxiproxy`
 * fits): a `timeout` toxic with timeout 0 drops every byte and never closes; removing it closes the
 * connections; disabling a proxy closes them and refuses new ones; a downstream `latency` toxic delays every
 * reply and pub/sub message by `latency` ms.
 */
export interface FaultProxies {
  createProxy(proxy: { name: string; listen: string; upstream: string }): Promise<{ listen: string }>;
  deleteProxy(name: string): Promise<void>;
  setEnabled(name: string, enabled: boolean): Promise<unknown>;
  addToxic(
    proxy: string,
    toxic:
      | { name: string; type: "timeout"; stream: "upstream"; attributes: { timeout: number } }
      | {
          name: string;
          type: "latency";
          stream: "downstream";
          attributes: { latency: number; jitter: number };
        },
  ): Promise<unknown>;
  removeToxic(proxy: string, name: string): Promise<void>;
}

/** The command timeout of the clients behind a proxy: one timeout (< 2×) is told apart from none (< ½). */
const COMMAND_TIMEOUT_MS = 200;
/** The breaker's cool-down in the fault tests: long enough to see it open, short enough to see it close. */
const COOLDOWN_MS = 400;
/**
 * How long the stale-fill tests delay every reply and message to instance B: far longer than B takes from its
 * load's return to its fill (well under a millisecond), so the interleaving is forced, not hoped for.
 */
const REPLY_DELAY_MS = 100;

/** A key prefix no other test (or run) shares. */
function uniquePrefix(name: string): string {
  return `cachelab-test:${name}:${crypto.randomUUID().slice(0, 8)}:`;
}

/** A seeded PRNG (mulberry32) in (0, 1], as XFetch's draws. */
function seededDraws(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return 1 - ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** An injected `random` the test sets: 1 never refreshes before expiry, a tiny draw refreshes at once. */
function switchableDraw() {
  const draw = { next: 1, random: () => draw.next };
  return draw;
}
/** ln(1e-300) ≈ −691: with β = 1 000 any measured load time ≥ 0.1 ms makes a hit refresh (70 s ≥ any TTL here). */
const TINY_DRAW = 1e-300;

/** Polls `check` every few ms until it returns true or `timeoutMs` passes; returns whether it did. */
async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 2_000): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await Bun.sleep(5);
  }
  return check();
}

/** Whether `promise` settles within `timeoutMs` (a wait that never ends would time the test out). */
async function settles(promise: Promise<unknown>, timeoutMs = 2_000): Promise<boolean> {
  const timeout = Bun.sleep(timeoutMs).then(() => false);
  return Promise.race([promise.then(() => true), timeout]);
}

/** The Redis client the strategies run on. */
export type ClientKind = "ioredis" | "bun" | "node-redis" | "ioredis-cluster" | "node-redis-cluster";

/** A node-redis cluster as the contract holds it (its type parameters do not matter here). */
type NodeCluster = nodeClusterModule.NodeRedisCluster;

/**
 * Registers the contract's tests for `modules`, named with `label`; Redis at `redisUrl()`, faults by `faults()`,
 * the Redis strategies on `client` (default ioredis).
 */
export function strategyContract(
  label: string,
  modules: StrategyModules,
  redisUrl: () => Promise<string>,
  faults: () => Promise<FaultProxies>,
  client: ClientKind = "ioredis",
): void {
  type Target = Redis | RedisClient | Cluster | NodeCluster | NodeClient | string;
  const onCluster = client === "ioredis-cluster" || client === "node-redis-cluster";
  /** A test kept to one Redis: it puts a proxy in front of it, which a cluster client would go around. */
  const singleRedis: typeof test = onCluster ? ((() => {}) as unknown as typeof test) : test;
  /** The cluster a URL names (one master; the client finds the others), as the cluster adapters take it. */
  function clusterAt(url: string) {
    const parsed = new URL(url);
    return { nodes: [parsed.host], password: decodeURIComponent(parsed.password) || undefined };
  }
  /** The adapter module of the client under test in `adapters` (a copy without it cannot run this client). */
  function adapterIn<K extends keyof Adapters>(adapters: Adapters, kind: K): NonNullable<Adapters[K]> {
    const adapter = adapters[kind];
    if (adapter === undefined)
      throw new TypeError(`Cannot run the contract: no ${kind} adapter: received none`);
    return adapter as NonNullable<Adapters[K]>;
  }
  /** tracking's adapter for `kind` (a copy without it cannot run this client). */
  function trackingAdapter<K extends keyof TrackingAdapters>(kind: K): NonNullable<TrackingAdapters[K]> {
    const adapter = modules.adapters.tracking[kind];
    if (adapter === undefined)
      throw new TypeError(`Cannot run the contract: no ${kind} adapter for tracking: received none`);
    return adapter as NonNullable<TrackingAdapters[K]>;
  }
  /** The commands a Redis strategy runs on: `redis` (a client or a URL) through the adapter beside it. */
  function commandsOn(adapters: Adapters, redis: Target, commandTimeoutMs?: number) {
    const cluster = typeof redis === "string" ? clusterAt(redis) : redis;
    if (client === "ioredis-cluster") {
      return adapterIn(adapters, "ioredis").ioredisClusterCommands(cluster as Cluster, { commandTimeoutMs });
    }
    if (client === "node-redis-cluster") {
      return adapterIn(adapters, "nodeCluster").nodeClusterCommands(cluster as NodeCluster, {
        commandTimeoutMs,
      });
    }
    return client === "bun"
      ? adapterIn(adapters, "bun").bunCommands(redis as RedisClient | string, { commandTimeoutMs })
      : adapterIn(adapters, "ioredis").ioredisCommands(redis as Redis | string, { commandTimeoutMs });
  }
  const bunOptions = () => adapterIn(modules.adapters.redis, "bun").failFastBunOptions;
  /** The command timeout an adapter gives a client it creates from a URL. */
  const defaultTimeoutMs = () =>
    client === "bun"
      ? adapterIn(modules.adapters.redis, "bun").bunCommandDefaults.commandTimeoutMs
      : client === "node-redis-cluster"
        ? adapterIn(modules.adapters.redis, "nodeCluster").failFastNodeClusterOptions.commandOptions.timeout
        : adapterIn(modules.adapters.redis, "ioredis").failFastRedisOptions.commandTimeout;
  type TwoTierOptions = Omit<twoTierModule.TwoTierCacheOptions, "redis" | "onEvent">;
  /** two_tier on `redis` through its adapter, counted as the server counts it; `client` is the suite's. */
  function twoTierOn({
    redis,
    commandTimeoutMs,
    client: _client,
    ...options
  }: TwoTierOptions & { redis: Target; commandTimeoutMs?: number; client?: ClientKind }): CacheStrategy {
    const commands = commandsOn(modules.adapters.two_tier, redis, commandTimeoutMs);
    return counted((onEvent) => modules.two_tier.createCache({ ...options, redis: commands, onEvent }));
  }
  /** The test's own client, to read and write Redis behind the strategies' backs. */
  let redis: Redis;
  /** The client injected into a Redis strategy unless a test gives another (`redis` itself on ioredis). */
  let shared: Redis | RedisClient | Cluster | NodeCluster | NodeClient;
  beforeAll(async () => {
    const clientOptions = { lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 1_000 };
    if (onCluster) {
      const { nodes, password } = clusterAt(await redisUrl());
      const [host, port] = (nodes[0] as string).split(":");
      const cluster = new Cluster([{ host: host as string, port: Number(port) }], {
        lazyConnect: true,
        redisOptions: { ...clientOptions, password },
      });
      await cluster.connect();
      // Its commands are ioredis's, sent to the right node: the test reads and writes through it as through one Redis.
      redis = cluster as unknown as Redis;
    } else {
      redis = new Redis(await redisUrl(), clientOptions);
      await redis.connect();
    }
    if (client === "node-redis-cluster") {
      const { nodes, password } = clusterAt(await redisUrl());
      const nodeCluster = createCluster({
        rootNodes: nodes.map((node) => ({ url: `redis://${node}` })),
        defaults: { password },
      });
      await nodeCluster.connect();
      shared = nodeCluster as unknown as NodeCluster;
    } else if (client === "bun") {
      const bun = new RedisClient(await redisUrl(), bunOptions());
      await bun.connect();
      shared = bun;
    } else if (client === "node-redis") {
      shared = await nodeClient(await redisUrl(), COMMAND_TIMEOUT_MS * 5);
    } else {
      shared = redis;
    }
  });
  afterAll(() => {
    redis.disconnect();
    if (shared instanceof RedisClient) shared.close();
    else if (client === "node-redis-cluster") (shared as NodeCluster).destroy();
    else if (shared !== redis) (shared as NodeClient).destroy();
  });
  /** PING on the injected client, whichever kind it is. */
  const pingShared = (): Promise<unknown> =>
    shared instanceof RedisClient || shared instanceof Redis || shared instanceof Cluster
      ? shared.ping()
      : client === "node-redis"
        ? pingOn(shared as NodeClient)
        : (shared as NodeCluster).sendCommand(undefined, true, ["PING"]);
  /** SCRIPT FLUSH on every master: a cluster's nodes each hold their own scripts. */
  const flushScripts = async (): Promise<void> => {
    const nodes = onCluster ? (redis as unknown as Cluster).nodes("master") : [redis];
    await Promise.all(nodes.map((node) => node.call("SCRIPT", "FLUSH")));
  };

  /** PING on an ioredis or node-redis client. */
  function pingOn(on: Redis | NodeClient): Promise<string> {
    return on instanceof Redis ? on.ping() : (on.sendCommand(["PING"]) as Promise<string>);
  }

  /** A node-redis client with tracking on at `url`, once it is ready. */
  async function nodeClient(url: string, commandTimeoutMs: number): Promise<NodeClient> {
    const node = trackingAdapter("node").trackingClient(url, { commandTimeoutMs });
    node.setMaxListeners(0); // the shared client carries a listener per cache a test makes on it
    if (!(await eventually(() => node.isReady))) {
      throw new Error(`Cannot run the contract: node-redis did not connect: received ${url}`);
    }
    return node;
  }

  interface SubjectOptions {
    ttlMs: number;
    prefix: string;
    redis?: Target;
    commandTimeoutMs?: number;
    breakerCooldownMs?: number;
    maxPendingInvalidations?: number;
    earlyRefresh?: { beta: number; random?: () => number };
  }

  type XfetchDue = typeof localModule.xfetchDue;

  interface Subject {
    name: string;
    caches: boolean;
    usesRedis: boolean;
    create(options: SubjectOptions): CacheStrategy;
    /** The file's own copy of XFetch's decision (absent for `none`). */
    xfetchDue?: XfetchDue;
  }

  const allSubjects: Subject[] = [
    { name: "none", caches: false, usesRedis: false, create: () => modules.none.createCache() },
    {
      name: "local",
      caches: true,
      usesRedis: false,
      create: ({ ttlMs, earlyRefresh }) =>
        countedLocal((onEvent) =>
          modules.local.createCache({ maxSize: 1_000, ttlMs, earlyRefresh, onEvent }),
        ),
      xfetchDue: modules.local.xfetchDue,
    },
    {
      name: "redis",
      caches: true,
      usesRedis: true,
      create: ({ redis: injected, commandTimeoutMs, ...options }) => {
        const commands = commandsOn(modules.adapters.redis, injected ?? shared, commandTimeoutMs);
        return counted((onEvent) => modules.redis.createCache({ ...options, redis: commands, onEvent }));
      },
      xfetchDue: modules.redis.xfetchDue,
    },
    {
      name: "two_tier",
      caches: true,
      usesRedis: true,
      create: ({ redis: injected, ...options }) =>
        twoTierOn({ redis: injected ?? shared, l1MaxSize: 1_000, l1TtlMs: options.ttlMs, ...options }),
      xfetchDue: modules.two_tier.xfetchDue,
    },
    {
      name: "tracking",
      caches: true,
      usesRedis: true,
      create: ({ redis: injected, commandTimeoutMs, ...options }) => {
        const target = injected ?? shared;
        const commands =
          client === "node-redis"
            ? trackingAdapter("node").nodeRedisCommands(target as NodeClient | string, { commandTimeoutMs })
            : trackingAdapter("ioredis").ioredisTrackingCommands(target as Redis | string, {
                commandTimeoutMs,
              });
        return counted((onEvent) =>
          modules.tracking.createCache({
            l1MaxSize: 1_000,
            l1TtlMs: options.ttlMs,
            ...options,
            redis: commands,
            onEvent,
          }),
        );
      },
      xfetchDue: modules.tracking.xfetchDue,
    },
  ];
  // On another client (Bun's, a cluster) only the strategies that use Redis have anything new to show;
  // tracking runs on ioredis and node-redis, which hand over Redis's invalidations, on one Redis.
  const subjects =
    client === "node-redis"
      ? allSubjects.filter((subject) => subject.name === "tracking")
      : client === "ioredis"
        ? allSubjects
        : allSubjects.filter((subject) => subject.name !== "tracking" && subject.usesRedis);

  /**
   * A loader that counts its calls and resolves after `delayMs` with a value naming the call; `settled`
   * counts the calls that have returned.
   */
  function countingLoader(delayMs = 5) {
    const loader = {
      calls: 0,
      settled: 0,
      load: async (): Promise<string | undefined> => {
        loader.calls++;
        const call = loader.calls;
        await Bun.sleep(delayMs);
        loader.settled++;
        return `value-${call}`;
      },
    };
    return loader;
  }

  /**
   * A fail-fast client of the kind under test at `url`, connected; Bun's gets its bound from the strategy, and
   * its options from `bunOptions` when given.
   */
  async function failFastClient(
    url: string,
    commandTimeoutMs: number,
    bunOptions: object = modules.adapters.redis.bun?.failFastBunOptions ?? {},
  ): Promise<Redis | RedisClient | NodeClient> {
    if (client === "node-redis") return nodeClient(url, commandTimeoutMs);
    if (client === "bun") {
      const bun = new RedisClient(url, bunOptions);
      await bun.connect();
      return bun;
    }
    const io = new Redis(url, {
      ...adapterIn(modules.adapters.redis, "ioredis").failFastRedisOptions,
      commandTimeout: commandTimeoutMs,
    });
    io.on("error", () => {});
    await io.connect();
    return io;
  }

  /**
   * A proxy of its own in front of Redis and a fail-fast client through it; `inject` is what a strategy takes
   * to run on that client with that command timeout; `end()` removes both.
   */
  async function redisBehindProxy(name: string, commandTimeoutMs = COMMAND_TIMEOUT_MS, bunOptions?: object) {
    const proxies = await faults();
    const upstream = new URL(await redisUrl());
    const proxyName = `${name}-${crypto.randomUUID().slice(0, 8)}`;
    const { listen } = await proxies.createProxy({
      name: proxyName,
      listen: "127.0.0.1:0",
      upstream: upstream.host,
    });
    const through = new URL(upstream);
    through.host = listen;
    const proxied = await failFastClient(through.toString(), commandTimeoutMs, bunOptions);
    return {
      inject: { redis: proxied, commandTimeoutMs },
      /** Whether the client holds a connection now (ioredis: ready). */
      connected: () =>
        proxied instanceof RedisClient
          ? proxied.connected
          : proxied instanceof Redis
            ? proxied.status === "ready"
            : proxied.isReady,
      /** PING through the proxy, straight from the client (Bun's reconnects only when told to). */
      ping: (): Promise<string | null> =>
        (proxied instanceof RedisClient
          ? (proxied.connected ? Promise.resolve() : proxied.connect()).then(() => proxied.ping())
          : pingOn(proxied)
        ).catch(() => null),
      /** Every byte to Redis is dropped from now on, and the connection is never closed. */
      hang: () =>
        proxies.addToxic(proxyName, {
          name: "hang",
          type: "timeout",
          stream: "upstream",
          attributes: { timeout: 0 },
        }),
      /** Removing the toxic closes the hung connections: the client reconnects. */
      unhang: () => proxies.removeToxic(proxyName, "hang"),
      /** Down: the connections are closed and new ones refused. Up: it listens again. */
      setUp: (up: boolean) => proxies.setEnabled(proxyName, up),
      /** Every reply and pub/sub message reaches the client `ms` late from now on (commands go at once). */
      delayReplies: (ms: number) =>
        proxies.addToxic(proxyName, {
          name: "delay",
          type: "latency",
          stream: "downstream",
          attributes: { latency: ms, jitter: 0 },
        }),
      end: async () => {
        if (proxied instanceof RedisClient) proxied.close();
        else if (proxied instanceof Redis) proxied.disconnect();
        else proxied.destroy();
        await proxies.deleteProxy(proxyName);
      },
    };
  }

  /**
   * A row the test writes, and loaders that read it: `load` returns it as it is; `held` reads it at once, as
   * a database would, and returns what it read only once `release()` is called.
   */
  function heldRow(initial: string) {
    const read = Promise.withResolvers<void>();
    const gate = Promise.withResolvers<void>();
    const row = {
      value: initial,
      /** Resolves once a held load has read the row. */
      read: read.promise,
      load: async (): Promise<string | undefined> => row.value,
      held: async (): Promise<string | undefined> => {
        const seen = row.value;
        read.resolve();
        await gate.promise;
        return seen;
      },
      release: () => gate.resolve(),
    };
    return row;
  }

  /** Whether `cache` answers a key that only Redis holds (set there directly): Redis served it. */
  async function servedByRedis(cache: CacheStrategy, prefix: string): Promise<boolean> {
    const key = `seeded-${crypto.randomUUID().slice(0, 8)}`;
    await redis.set(`${prefix}{${key}}`, "from-redis", "PX", 60_000);
    return (await cache.getOrLoad(key, async () => "from-loader")) === "from-redis";
  }

  for (const subject of subjects) {
    describe(`${label}: ${subject.name} strategy contract`, () => {
      const caches: CacheStrategy[] = [];
      function make(ttlMs = 60_000, injected?: Target, extra: Partial<SubjectOptions> = {}): CacheStrategy {
        const cache = subject.create({
          ttlMs,
          prefix: uniquePrefix(subject.name),
          redis: injected,
          ...extra,
        });
        caches.push(cache);
        return cache;
      }
      /** A cache on a proxied client (`inject`) with a short cool-down, and its key prefix. */
      function makeBehind(
        inject: { redis: Target; commandTimeoutMs: number },
        cooldownMs = COOLDOWN_MS,
      ): { cache: CacheStrategy; prefix: string } {
        const prefix = uniquePrefix(subject.name);
        const cache = subject.create({
          ttlMs: 60_000,
          prefix,
          ...inject,
          breakerCooldownMs: cooldownMs,
        });
        caches.push(cache);
        return { cache, prefix };
      }
      afterAll(async () => {
        await Promise.all(caches.map((cache) => cache.close()));
      });

      test(`${subject.name} loads on the first call and ${subject.caches ? "not" : "again"} on the second`, async () => {
        const cache = make();
        const loader = countingLoader();
        expect(await cache.getOrLoad("k", loader.load)).toBe("value-1");
        const second = await cache.getOrLoad("k", loader.load);
        expect(loader.calls).toBe(subject.caches ? 1 : 2);
        expect(second).toBe(subject.caches ? "value-1" : "value-2");
      });

      test(`${subject.name} turns 20 concurrent misses into ${subject.caches ? "1 load" : "20 loads"}`, async () => {
        const cache = make();
        const loader = countingLoader(20);
        const values = await Promise.all(
          Array.from({ length: 20 }, () => cache.getOrLoad("hot", loader.load)),
        );
        expect(loader.calls).toBe(subject.caches ? 1 : 20);
        if (subject.caches) expect(new Set(values)).toEqual(new Set(["value-1"]));
      });

      test(`${subject.name} does not cache a failed load`, async () => {
        const cache = make();
        let calls = 0;
        const failing = async (): Promise<string | undefined> => {
          calls++;
          throw new Error("database down");
        };
        await expect(cache.getOrLoad("f", failing)).rejects.toThrow("database down");
        expect(await cache.getOrLoad("f", async () => "recovered")).toBe("recovered");
        expect(calls).toBe(1);
      });

      test(`${subject.name} does not cache an absent value`, async () => {
        const cache = make();
        let calls = 0;
        const absent = async (): Promise<string | undefined> => {
          calls++;
          return undefined;
        };
        expect(await cache.getOrLoad("missing", absent)).toBeUndefined();
        expect(await cache.getOrLoad("missing", absent)).toBeUndefined();
        expect(calls).toBe(2);
      });

      test(`${subject.name} reloads after delete`, async () => {
        const cache = make();
        const loader = countingLoader();
        await cache.getOrLoad("d", loader.load);
        await cache.delete("d");
        expect(await cache.getOrLoad("d", loader.load)).toBe("value-2");
        expect(loader.calls).toBe(2);
      });

      test(`${subject.name} does not keep a value whose load was in flight during delete`, async () => {
        const cache = make();
        const loader = countingLoader(30);
        const inFlight = cache.getOrLoad("race", loader.load);
        await Bun.sleep(5);
        await cache.delete("race"); // the write committed while the old row was being read
        expect(await inFlight).toBe("value-1");
        expect(await cache.getOrLoad("race", loader.load)).toBe("value-2");
      });

      test(`${subject.name} expires entries after ttlMs`, async () => {
        const cache = make(60);
        const loader = countingLoader(1);
        await cache.getOrLoad("t", loader.load);
        await cache.getOrLoad("t", loader.load);
        expect(loader.calls).toBe(subject.caches ? 1 : 2);
        await Bun.sleep(120);
        await cache.getOrLoad("t", loader.load);
        expect(loader.calls).toBe(subject.caches ? 2 : 3);
      });

      test(`${subject.name} counts hits, misses and loads`, async () => {
        const cache = make();
        const loader = countingLoader(1);
        await cache.getOrLoad("s", loader.load);
        await cache.getOrLoad("s", loader.load);
        const stats = cache.stats();
        expect(stats.loads).toBe(loader.calls);
        const tiers = Object.values(stats.tiers);
        if (subject.name === "tracking") {
          // Where tracking departs from the contract: its own fill is a write, which Redis answers with an
          // invalidation (to this connection too) and by tracking the key here no more, so a loaded value
          // reaches L1 only from a later GET. The second call is an L2 hit, not an L1 hit, and is not kept
          // either: the fill's invalidation arrived while its GET was out, and a hit with a push beside it is
          // not kept (node-redis hands both over in one parse, so it cannot tell which came first). The third
          // read fills L1, the fourth is answered in process.
          expect(stats.tiers).toEqual({ l1: { hits: 0, misses: 2 }, l2: { hits: 1, misses: 1 } });
          expect(stats).toMatchObject({ invalidationsReceived: 1, loadWaits: 1, earlyRefreshes: 0 });
          await cache.getOrLoad("s", loader.load);
          await cache.getOrLoad("s", loader.load);
          expect(cache.stats().tiers).toEqual({ l1: { hits: 1, misses: 3 }, l2: { hits: 2, misses: 1 } });
          expect(cache.stats()).toMatchObject({ loads: 1, invalidationsReceived: 1 });
        } else if (subject.caches) {
          expect(tiers[0]).toEqual({ hits: 1, misses: 1 });
          // Early refresh is off: only the miss waited on a load, and nothing was refreshed.
          expect(stats).toMatchObject({
            loadWaits: 1,
            earlyRefreshes: 0,
            refreshLoads: 0,
            refreshFailures: 0,
          });
        } else {
          expect(tiers).toEqual([]);
          expect(stats.loadWaits).toBe(2);
        }
        expect(stats.errors).toBe(0);
        if (subject.usesRedis) {
          expect(stats).toMatchObject({
            breakerOpens: 0,
            breakerSkipped: 0,
            invalidationsPending: 0,
            invalidationsDropped: 0,
          });
        }
      });

      test(`${subject.name} close leaves an injected client open`, async () => {
        const cache = make();
        await cache.getOrLoad("c", async () => "v");
        await cache.close();
        expect(await pingShared()).toBe("PONG");
      });

      const xfetchDue = subject.xfetchDue;
      if (subject.caches && xfetchDue) {
        /** A cache with early refresh on (β, draws), its prefix, once its L1 is settled (two_tier subscribes). */
        async function makeEarly(ttlMs: number, earlyRefresh: { beta: number; random: () => number }) {
          const prefix = uniquePrefix(`${subject.name}-early`);
          const cache = subject.create({ ttlMs, prefix, earlyRefresh });
          caches.push(cache);
          expect(await eventually(() => cache.healthy())).toBe(true);
          return { cache, prefix };
        }

        test(`${subject.name} xfetchDue decides as XFetch's formula, boundary included`, () => {
          // [nowMs, expiryMs, deltaMs, beta, random, due]: now − delta·β·ln(random) ≥ expiry.
          const table: [number, number, number, number, number, boolean][] = [
            [0, 10_000, 100, 1, 0.9, false], // far from expiry, a usual draw: 10.5 ms early at most
            [9_900, 10_000, 100, 1, 0.9, false], // close, a usual draw: 10.5 < 100
            [9_900, 10_000, 100, 1, 0.01, true], // close, a small draw: 460 ≥ 100
            [9_000, 10_000, 100, 1, 0.5, false], // β = 1: 69 ms early < 1 000
            [9_000, 10_000, 100, 20, 0.5, true], // β = 20 refreshes earlier: 1 386 ≥ 1 000
            [1_000, 1_100, 50, 2, Math.exp(-1), true], // exactly at the boundary: 1 000 + 50·2·1 = 1 100
            [999.5, 1_100, 50, 2, Math.exp(-1), false], // half a millisecond before it
            [1_000, 1_100, 25, 2, Math.exp(-2), true], // 1 000 + 25·2·2 = 1 100
            [1_000, 1_100.5, 25, 2, Math.exp(-2), false],
            [1_100, 1_100, 100, 1, 1, true], // a draw of 1 refreshes only at expiry (ln 1 = 0)
            [1_099, 1_100, 100, 1, 1, false],
            [10_001, 10_000, 100, 1, 0.9, true], // past expiry: always
            [0, 10_000, 20, 1, 0, true], // a draw of 0 is the smallest one, not −∞: 20·744 ≥ 10 000
            [0, 10_000, 0, 1, 0, false], // an instant load never refreshes early (and 0·∞ is no NaN)
            [0, 10_000, 10, 1, 0, false], // 10·744 < 10 000
          ];
          const decided = table.map(([now, expiry, delta, beta, r]) =>
            xfetchDue(now, expiry, delta, beta, r),
          );
          expect(decided).toEqual(table.map((row) => row[5]));
          // Seeded draws: the share of hits that refresh is exp(−(expiry − now) / (β·delta)).
          const draw = seededDraws(42);
          for (const [gapMs, deltaMs, beta] of [
            [100, 100, 1],
            [300, 100, 1],
            [300, 100, 3],
          ] as const) {
            let due = 0;
            for (let i = 0; i < 20_000; i++)
              if (xfetchDue(1_000, 1_000 + gapMs, deltaMs, beta, draw())) due++;
            expect(Math.abs(due / 20_000 - Math.exp(-gapMs / (beta * deltaMs)))).toBeLessThan(0.01);
          }
        });

        test(`${subject.name} refreshes early on a hit close to expiry with a small draw, not far from it or with a usual one`, async () => {
          const draw = switchableDraw();
          const { cache } = await makeEarly(500, { beta: 1, random: draw.random });
          const loader = countingLoader(50); // its measured delta is ≥ 50 ms
          await cache.getOrLoad("x", loader.load);
          draw.next = 0.9; // −ln 0.9 · delta ≈ 5 ms early at most (for delta up to 1 s: 105 ms)
          expect(await cache.getOrLoad("x", loader.load)).toBe("value-1");
          expect(cache.stats().earlyRefreshes).toBe(0);
          await Bun.sleep(250); // ≈ 250 ms left
          expect(await cache.getOrLoad("x", loader.load)).toBe("value-1");
          expect(cache.stats().earlyRefreshes).toBe(0);
          draw.next = 1e-6; // −ln 1e-6 · delta ≥ 690 ms early: due
          expect(await cache.getOrLoad("x", loader.load)).toBe("value-1");
          draw.next = 1;
          expect(cache.stats().earlyRefreshes).toBe(1);
          expect(await eventually(() => loader.settled === 2)).toBe(true);
        });

        test(`${subject.name} with early refresh answers hits near expiry at once and reloads once in the background`, async () => {
          const draw = switchableDraw();
          const { cache } = await makeEarly(700, { beta: 1_000, random: draw.random });
          const loader = countingLoader(200);
          expect(await cache.getOrLoad("hot", loader.load)).toBe("value-1");
          await Bun.sleep(200); // ≈ 500 ms left: the reload (200 ms) lands well before the expiry
          draw.next = TINY_DRAW;
          const answers = await Promise.all(
            Array.from({ length: 20 }, async () => {
              const startedMs = performance.now();
              const value = await cache.getOrLoad("hot", loader.load);
              return { value, waitedMs: performance.now() - startedMs };
            }),
          );
          draw.next = 1;
          expect(new Set(answers.map((answer) => answer.value))).toEqual(new Set(["value-1"]));
          expect(Math.max(...answers.map((answer) => answer.waitedMs))).toBeLessThan(100); // ≪ the 200 ms load
          // two_tier's refresh GETs L2 before it loads: the reload may start a moment after the hits returned.
          expect(await eventually(() => loader.settled === 2)).toBe(true);
          await Bun.sleep(10); // its fill lands right after the loader returns
          expect(loader.calls).toBe(2); // one background reload for 20 deciding hits
          expect(await cache.getOrLoad("hot", loader.load)).toBe("value-2");
          expect(loader.calls).toBe(2);
          expect(cache.stats()).toMatchObject({
            loads: 2,
            loadWaits: 1, // the first miss only
            earlyRefreshes: 1,
            refreshLoads: 1,
            refreshFailures: 0,
          });
        });

        test(`${subject.name} without early refresh makes the first read after expiry wait on the loader`, async () => {
          const cache = make(150);
          const loader = countingLoader(200);
          await cache.getOrLoad("cold", loader.load);
          await Bun.sleep(200);
          const startedMs = performance.now();
          expect(await cache.getOrLoad("cold", loader.load)).toBe("value-2");
          expect(performance.now() - startedMs).toBeGreaterThanOrEqual(150);
          expect(cache.stats()).toMatchObject({ loads: 2, loadWaits: 2, earlyRefreshes: 0, refreshLoads: 0 });
        });

        test(`${subject.name} does not keep a value whose early refresh was in flight during delete`, async () => {
          const draw = switchableDraw();
          const { cache, prefix } = await makeEarly(60_000, { beta: 1_000, random: draw.random });
          expect(await cache.getOrLoad("r", countingLoader(5).load)).toBe("value-1");
          draw.next = TINY_DRAW;
          let refreshed = false;
          const hit = await cache.getOrLoad("r", async () => {
            await Bun.sleep(100);
            refreshed = true;
            return "read-before-the-write";
          });
          draw.next = 1;
          expect(hit).toBe("value-1");
          await Bun.sleep(20);
          await cache.delete("r"); // the write committed while the refresh was reading the old row
          expect(await eventually(() => refreshed)).toBe(true);
          await Bun.sleep(20);
          if (subject.usesRedis) expect(await redis.get(`${prefix}{r}`)).toBeNull();
          expect(await cache.getOrLoad("r", async () => "after-the-write")).toBe("after-the-write");
          expect(cache.stats()).toMatchObject({ earlyRefreshes: 1, refreshLoads: 1 });
        });

        test(`${subject.name} swallows and counts a failed early refresh, and keeps serving the old value`, async () => {
          const draw = switchableDraw();
          const { cache } = await makeEarly(60_000, { beta: 1_000, random: draw.random });
          expect(await cache.getOrLoad("e", countingLoader(5).load)).toBe("value-1");
          draw.next = TINY_DRAW;
          const failing = async (): Promise<string | undefined> => {
            await Bun.sleep(5);
            throw new Error("database down");
          };
          expect(await cache.getOrLoad("e", failing)).toBe("value-1");
          draw.next = 1;
          expect(await eventually(() => cache.stats().refreshFailures === 1)).toBe(true);
          expect(await cache.getOrLoad("e", failing)).toBe("value-1");
          expect(cache.stats()).toMatchObject({
            loads: 2,
            loadWaits: 1,
            earlyRefreshes: 1,
            refreshLoads: 1,
            refreshFailures: 1,
          });
        });

        test(`${subject.name} rejects an early refresh β that is not a positive number`, () => {
          for (const beta of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
            expect(() => subject.create({ ttlMs: 1_000, prefix: "unused:", earlyRefresh: { beta } })).toThrow(
              RangeError,
            );
          }
        });
      }

      if (subject.usesRedis) {
        test(`${subject.name} reads values stored with and without early refresh alike`, async () => {
          const prefix = uniquePrefix(`${subject.name}-envelope`);
          const draw = switchableDraw();
          const on = subject.create({
            ttlMs: 60_000,
            prefix,
            earlyRefresh: { beta: 1_000, random: draw.random },
          });
          const off = subject.create({ ttlMs: 60_000, prefix });
          caches.push(on, off);
          expect(await eventually(async () => (await on.healthy()) && (await off.healthy()))).toBe(true);
          // Stored with its XFetch fields: marker, expiry (epoch ms), load time, then the value as it is.
          const beforeMs = Date.now();
          expect(await on.getOrLoad("a", async () => '{"id":1}')).toBe('{"id":1}');
          const stored = (await eventually(async () => (await redis.get(`${prefix}{a}`)) !== null))
            ? ((await redis.get(`${prefix}{a}`)) as string)
            : "";
          const [, expiryMs, deltaMs, ...value] = stored.split(":");
          expect({ marker: stored.slice(0, 4), value: value.join(":") }).toEqual({
            marker: "\u0000xf:",
            value: '{"id":1}',
          });
          expect(Number(expiryMs)).toBeGreaterThanOrEqual(beforeMs + 60_000);
          expect(Number(expiryMs)).toBeLessThanOrEqual(Date.now() + 60_000);
          expect(Number(deltaMs)).toBeGreaterThanOrEqual(0);
          expect(await off.getOrLoad("a", async () => "wrong")).toBe('{"id":1}');
          // Stored plain (early refresh off, or by anyone): served as it is, never refreshed early.
          await redis.set(`${prefix}{b}`, "plain", "PX", 60_000);
          draw.next = TINY_DRAW;
          expect(await on.getOrLoad("b", async () => "wrong")).toBe("plain");
          draw.next = 1;
          expect(on.stats().earlyRefreshes).toBe(0);
        });

        test(`${subject.name} answers from the loader within the command timeout when Redis is unreachable`, async () => {
          const cache = make(60_000, "redis://127.0.0.1:1");
          expect(await cache.healthy()).toBe(false);
          const loader = countingLoader(0);
          const startedMs = performance.now();
          expect(await cache.getOrLoad("down", loader.load)).toBe("value-1");
          await cache.delete("down");
          expect(await cache.getOrLoad("down", loader.load)).toBe("value-2");
          expect(performance.now() - startedMs).toBeLessThan(defaultTimeoutMs());
          expect(cache.stats().errors).toBeGreaterThan(0);
        });

        singleRedis(
          `${subject.name} pays at most one command timeout per request while Redis hangs, none once its breaker is open`,
          async () => {
            const proxy = await redisBehindProxy(`${subject.name}-hang`);
            const { cache, prefix } = makeBehind(proxy.inject);
            try {
              expect(await eventually(() => cache.healthy())).toBe(true);
              expect(await servedByRedis(cache, prefix)).toBe(true);
              await proxy.hang();
              const costsMs: number[] = [];
              for (let i = 0; i < 6; i++) {
                const startedMs = performance.now();
                expect(await cache.getOrLoad(`hung-${i}`, async () => "db")).toBe("db");
                costsMs.push(Math.round(performance.now() - startedMs));
              }
              // Its GET times out, its SET runs in the background: one timeout per request (a second would
              // make it ≥ 2×) until 3 failures open the breaker, then no Redis command and no wait at all.
              const opened = costsMs.findIndex((ms) => ms < COMMAND_TIMEOUT_MS / 2);
              expect({
                costsMs,
                firstRequestsPaidOneTimeoutEach:
                  opened >= 1 &&
                  opened <= 3 &&
                  costsMs.slice(0, opened).every((ms) => ms < 2 * COMMAND_TIMEOUT_MS),
                laterRequestsPaidNone:
                  opened !== -1 && costsMs.slice(opened).every((ms) => ms < COMMAND_TIMEOUT_MS / 2),
              }).toMatchObject({ firstRequestsPaidOneTimeoutEach: true, laterRequestsPaidNone: true });
              expect(cache.stats().breakerOpens).toBe(1);
              expect(cache.stats().breakerOpen).toBe(true); // /metrics's cachelab_redis_breaker_open
              expect(cache.stats().breakerSkipped).toBeGreaterThanOrEqual(6 - opened);
              await proxy.unhang();
              expect(await eventually(() => servedByRedis(cache, prefix), 3_000)).toBe(true);
              // Its probe answered: closed again, once.
              expect(cache.stats()).toMatchObject({ breakerOpen: false, breakerCloses: 1 });
            } finally {
              await cache.close();
              await proxy.end();
            }
          },
        );

        singleRedis(
          `${subject.name} fails open while Redis is down, opens its breaker, and reads Redis again once it is back`,
          async () => {
            const proxy = await redisBehindProxy(`${subject.name}-down`);
            const { cache, prefix } = makeBehind(proxy.inject);
            try {
              expect(await servedByRedis(cache, prefix)).toBe(true);
              await proxy.setUp(false);
              const costsMs: number[] = [];
              for (let i = 0; i < 5; i++) {
                const startedMs = performance.now();
                expect(await cache.getOrLoad(`down-${i}`, async () => "db")).toBe("db");
                costsMs.push(Math.round(performance.now() - startedMs));
              }
              // A refused connection fails at once: no request waits for a timeout.
              expect({ costsMs, fast: costsMs.every((ms) => ms < COMMAND_TIMEOUT_MS / 2) }).toMatchObject({
                fast: true,
              });
              await cache.delete("down-0");
              const stats = cache.stats();
              expect(stats.errors).toBeGreaterThanOrEqual(3);
              expect(stats.breakerOpens).toBeGreaterThanOrEqual(1);
              expect(stats.breakerSkipped).toBeGreaterThan(0);
              await proxy.setUp(true);
              expect(await eventually(() => servedByRedis(cache, prefix), 3_000)).toBe(true);
            } finally {
              await cache.close();
              await proxy.end();
            }
          },
        );

        if (client === "bun") {
          test(`${subject.name} on a Bun client left to its own reconnects fails fast while Redis is down, and reconnects it once its retries are spent`, async () => {
            // Bun's defaults but 2 retries: an offline queue, and a reconnect loop that gives up after ~150 ms.
            const proxy = await redisBehindProxy(`${subject.name}-bun-retries`, COMMAND_TIMEOUT_MS, {
              maxRetries: 2,
            });
            const { cache, prefix } = makeBehind(proxy.inject);
            try {
              expect(await eventually(() => cache.healthy())).toBe(true);
              expect(await servedByRedis(cache, prefix)).toBe(true);
              await proxy.setUp(false);
              const costsMs: number[] = [];
              for (let i = 0; i < 5; i++) {
                const startedMs = performance.now();
                expect(await cache.getOrLoad(`down-${i}`, async () => "db")).toBe("db");
                costsMs.push(Math.round(performance.now() - startedMs));
              }
              expect({ costsMs, bounded: costsMs.every((ms) => ms < 2 * COMMAND_TIMEOUT_MS) }).toMatchObject({
                bounded: true,
              });
              await Bun.sleep(2 * COOLDOWN_MS); // its retries are spent by now
              await proxy.setUp(true);
              await Bun.sleep(200);
              expect(proxy.connected()).toBe(false); // Bun's client gave up: only connect() revives it
              expect(await eventually(() => servedByRedis(cache, prefix), 3_000)).toBe(true);
              expect(await eventually(() => cache.healthy(), 3_000)).toBe(true); // two_tier: subscribed again
            } finally {
              await cache.close();
              await proxy.end();
            }
          });
        }

        test(`${subject.name} runs its scripts whole again after Redis forgets them (SCRIPT FLUSH)`, async () => {
          const prefix = uniquePrefix(`${subject.name}-noscript`);
          const cache = subject.create({ ttlMs: 60_000, prefix });
          caches.push(cache);
          expect(await eventually(() => cache.healthy())).toBe(true);
          await cache.getOrLoad("a", async () => "a1"); // its scripts are held by Redis from now on
          await cache.delete("a");
          expect(await eventually(async () => (await redis.get(`${prefix}{a}`)) === null)).toBe(true);
          await flushScripts();
          // By SHA first: NOSCRIPT, then whole. The miss's generation read, its fill, and the delete all land.
          expect(await cache.getOrLoad("b", async () => "b1")).toBe("b1");
          expect(await eventually(async () => (await redis.get(`${prefix}{b}`)) === "b1")).toBe(true);
          await cache.delete("b");
          expect(await redis.get(`${prefix}{b}`)).toBeNull();
          expect(cache.stats()).toMatchObject({ errors: 0, staleFillsRefused: 0, invalidationsPending: 0 });
        });

        singleRedis(`${subject.name} returns a loaded value without waiting for its SET`, async () => {
          const proxy = await redisBehindProxy(`${subject.name}-set`);
          const { cache } = makeBehind(proxy.inject);
          try {
            expect(await eventually(() => cache.healthy())).toBe(true);
            let loadedAtMs = 0;
            const value = await cache.getOrLoad("set-hangs", async () => {
              await proxy.hang(); // the GET has been answered: only the SET that follows meets a hung Redis
              loadedAtMs = performance.now();
              return "db";
            });
            const waitedMs = performance.now() - loadedAtMs;
            expect(value).toBe("db");
            expect(waitedMs).toBeLessThan(COMMAND_TIMEOUT_MS / 2);
            // The SET did time out, later: counted, never thrown.
            expect(await eventually(() => cache.stats().errors === 1, 2_000)).toBe(true);
          } finally {
            await cache.close();
            await proxy.end();
          }
        });

        singleRedis(
          `${subject.name} replays a delete its open breaker skipped before it reads that key from Redis again`,
          async () => {
            const cooldownMs = 600;
            const proxy = await redisBehindProxy(`${subject.name}-replay`);
            const { cache, prefix } = makeBehind(proxy.inject, cooldownMs);
            try {
              expect(await cache.getOrLoad("w", async () => "old")).toBe("old");
              expect(await eventually(async () => (await redis.get(`${prefix}{w}`)) === "old")).toBe(true);
              await proxy.setUp(false);
              const trippedFromMs = performance.now();
              for (let i = 0; i < 10 && cache.stats().breakerOpens === 0; i++) {
                await cache.getOrLoad(`trip-${i}`, async () => "db");
              }
              const openedByMs = performance.now();
              expect(cache.stats().breakerOpens).toBe(1);
              await proxy.setUp(true);
              // Redis answers again (asked directly), but the breaker stays open for its cool-down.
              expect(await eventually(async () => (await proxy.ping()) === "PONG")).toBe(true);
              // Deleting halfway through the cool-down puts the retry timer well after the probe is due.
              await Bun.sleep(Math.max(0, trippedFromMs + cooldownMs / 2 - performance.now()));
              await cache.delete("w"); // the row changed, and the open breaker sends nothing
              expect(performance.now() - trippedFromMs).toBeLessThan(cooldownMs);
              // Redis still holds the old row: read from there after the outage, it would be served stale.
              expect(await redis.get(`${prefix}{w}`)).toBe("old");
              expect(cache.stats().invalidationsPending).toBe(1);
              // The cool-down is over and the first call reads that very key: the pending DEL must go first.
              await Bun.sleep(Math.max(0, openedByMs + cooldownMs + 20 - performance.now()));
              const answers = new Set<string | undefined>();
              const replayed = await eventually(async () => {
                answers.add(await cache.getOrLoad("w", async () => "new"));
                return (await redis.get(`${prefix}{w}`)) !== "old";
              }, 3_000);
              expect({ replayed, answers: [...answers] }).toEqual({ replayed: true, answers: ["new"] });
              expect(await eventually(() => cache.stats().invalidationsPending === 0)).toBe(true);
            } finally {
              await cache.close();
              await proxy.end();
            }
          },
        );

        /**
         * The cross-instance stale fill, forced. Instance B starts loading the row (a miss, or the early
         * refresh of a hit); A writes the row and its delete lands (at once, or replayed after A was cut off
         * from Redis); only then does B's load return the old row. B's link delays every reply and message,
         * so B still owns its load when it returns (two_tier: the delete's message is still on its way to B)
         * and sends its fill. The bound (redis: none once the delete has landed; two_tier: until the message
         * reaches B) is then waited out, and no instance, a fresh one included, may serve the old row.
         */
        async function forceStaleFill(how: "miss" | "refresh" | "replay") {
          const prefix = uniquePrefix(`${subject.name}-stale-fill`);
          const url = await redisUrl();
          const slowB = await redisBehindProxy(`${subject.name}-stale-fill-b`, 10 * REPLY_DELAY_MS);
          const cutA = how === "replay" ? await redisBehindProxy(`${subject.name}-stale-fill-a`) : undefined;
          const draw = switchableDraw();
          const a = subject.create({
            ttlMs: 60_000,
            prefix,
            ...(cutA?.inject ?? { redis: url }),
            breakerCooldownMs: COOLDOWN_MS,
          });
          const b = subject.create({
            ttlMs: 60_000,
            prefix,
            ...slowB.inject,
            earlyRefresh: how === "refresh" ? { beta: 1_000, random: draw.random } : undefined,
          });
          const row = heldRow("old");
          try {
            expect(await eventually(async () => (await a.healthy()) && (await b.healthy()))).toBe(true);
            if (how === "refresh") {
              // A load of a few ms: its measured time is what early refresh scales (an instant one never is).
              const timed = async (): Promise<string | undefined> => {
                await Bun.sleep(5);
                return row.value;
              };
              expect(await b.getOrLoad("p", timed)).toBe("old");
              expect(await eventually(async () => (await redis.get(`${prefix}{p}`)) !== null)).toBe(true);
              draw.next = TINY_DRAW; // B's next hit starts an early refresh
            }
            // tracking hears its own fill's invalidation (Redis sends it to the writer too): counted from here,
            // once heard (on ioredis it comes on the subscriber's connection, after the fill's reply).
            if (subject.name === "tracking" && how === "refresh") {
              expect(await eventually(() => b.stats().invalidationsReceived >= 1)).toBe(true);
            }
            const heard = b.stats().invalidationsReceived;
            await slowB.delayReplies(REPLY_DELAY_MS);
            const answered = b.getOrLoad("p", row.held);
            expect(await settles(row.read)).toBe(true); // B's load has read the old row
            draw.next = 1;
            row.value = "new"; // A's write commits
            if (cutA) {
              await cutA.setUp(false);
              await a.delete("p"); // cannot reach Redis: pending
              expect(a.stats().invalidationsPending).toBe(1);
              await cutA.setUp(true); // A's retry timer replays it
              expect(await eventually(() => a.stats().invalidationsPending === 0, 3_000)).toBe(true);
            } else {
              await a.delete("p");
            }
            expect(b.stats().invalidationsReceived).toBe(heard); // B has heard of no delete yet
            row.release(); // B's load returns the old row
            expect(await answered).toBe("old"); // B answers the read it loaded for (or its hit) with it
            await Bun.sleep(5);
            expect(await b.healthy()).toBe(true); // its PING follows B's fill on the connection: the fill ran
            // tracking hears of the DEL only if Redis held the row (a refresh's): a DEL of nothing changes
            // nothing, and Redis pushes nothing.
            if (subject.name === "two_tier" || (subject.name === "tracking" && how === "refresh")) {
              expect(await eventually(() => b.stats().invalidationsReceived === heard + 1)).toBe(true);
            }
            // The bound is over: Redis holds no value for the row, and every instance loads the new one.
            const held = await redis.get(`${prefix}{p}`);
            const c = subject.create({ ttlMs: 60_000, prefix, redis: url });
            caches.push(c);
            expect(await eventually(() => c.healthy())).toBe(true);
            expect({
              redis: held,
              a: await a.getOrLoad("p", row.load),
              b: await b.getOrLoad("p", row.load),
              c: await c.getOrLoad("p", row.load),
            }).toEqual({ redis: null, a: "new", b: "new", c: "new" });
            expect(b.stats()).toMatchObject({ staleFillsRefused: 1 });
          } finally {
            row.release();
            await Promise.all([a.close(), b.close()]);
            await Promise.all([slowB.end(), cutA?.end()]);
          }
        }

        singleRedis(
          `${subject.name} refuses the fill of a miss that read the row before another instance's delete`,
          async () => {
            await forceStaleFill("miss");
          },
        );

        singleRedis(
          `${subject.name} refuses the fill of an early refresh that read the row before another instance's delete`,
          async () => {
            await forceStaleFill("refresh");
          },
        );

        singleRedis(
          `${subject.name} refuses the fill of a load that read the row before another instance's delete replayed after an outage`,
          async () => {
            await forceStaleFill("replay");
          },
        );

        test(`${subject.name} keeps at most maxPendingInvalidations pending, drops the oldest and counts it`, async () => {
          const cache = make(60_000, "redis://127.0.0.1:1", { maxPendingInvalidations: 2 });
          for (const key of ["a", "b", "c"]) await cache.delete(key);
          expect(cache.stats()).toMatchObject({ invalidationsPending: 2, invalidationsDropped: 1 });
        });

        test(`${subject.name} shares entries between two instances through Redis`, async () => {
          const prefix = uniquePrefix(`${subject.name}-shared`);
          const a = subject.create({ ttlMs: 60_000, prefix });
          const b = subject.create({ ttlMs: 60_000, prefix });
          caches.push(a, b);
          const loader = countingLoader(1);
          await a.getOrLoad("shared", loader.load);
          expect(await b.getOrLoad("shared", loader.load)).toBe("value-1");
          expect(loader.calls).toBe(1);
        });
      }
    });
  }

  if (client === "node-redis") return;
  describe(`${label}: two_tier specifics`, () => {
    /** The injected client, and the kind a URL creates (the suite's). */
    const on = () => ({ redis: shared, client });
    test("two_tier serves an L2 hit and backfills L1", async () => {
      const prefix = uniquePrefix("two_tier-backfill");
      const a = twoTierOn({
        ...on(),
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      const b = twoTierOn({
        ...on(),
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      try {
        // L1 is flushed when the subscription is established: start once both are subscribed.
        expect(await eventually(async () => (await a.healthy()) && (await b.healthy()))).toBe(true);
        await a.getOrLoad("k", async () => "from-db");
        expect(await b.getOrLoad("k", async () => "wrong")).toBe("from-db");
        expect(b.stats().tiers).toEqual({ l1: { hits: 0, misses: 1 }, l2: { hits: 1, misses: 0 } });
        await redis.del(`${prefix}{k}`); // only L1 can answer now
        expect(await b.getOrLoad("k", async () => "wrong")).toBe("from-db");
        expect(b.stats().tiers.l1).toEqual({ hits: 1, misses: 1 });
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    test("two_tier drops another instance's L1 entry when a delete is published", async () => {
      const prefix = uniquePrefix("two_tier-pubsub");
      const a = twoTierOn({
        ...on(),
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      const b = twoTierOn({
        ...on(),
        ttlMs: 60_000,
        l1MaxSize: 100,
        l1TtlMs: 60_000,
        prefix,
      });
      try {
        expect(await eventually(async () => (await a.healthy()) && (await b.healthy()))).toBe(true);
        await a.getOrLoad("k", async () => "v1");
        expect(await b.getOrLoad("k", async () => "wrong")).toBe("v1");
        await a.delete("k");
        expect(a.stats().invalidationsPublished).toBe(1);
        expect(await eventually(() => b.stats().invalidationsReceived === 1, 1_000)).toBe(true);
        expect(await b.getOrLoad("k", async () => "v2")).toBe("v2");
        expect(a.stats().invalidationsReceived).toBe(0); // its own message is ignored
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    singleRedis(
      "two_tier republishes an invalidation it could not send while Redis was unreachable",
      async () => {
        const proxy = await redisBehindProxy("two_tier-republish");
        const prefix = uniquePrefix("two_tier-republish");
        const options = {
          ttlMs: 60_000,
          l1MaxSize: 100,
          l1TtlMs: 60_000,
          prefix,
          breakerCooldownMs: COOLDOWN_MS,
        };
        const a = twoTierOn({ ...options, ...proxy.inject }); // cut off from Redis below
        const b = twoTierOn({ ...options, ...on() });
        try {
          expect(await eventually(async () => (await a.healthy()) && (await b.healthy()))).toBe(true);
          await a.getOrLoad("k", async () => "old");
          expect(await eventually(async () => (await redis.get(`${prefix}{k}`)) === "old")).toBe(true);
          expect(await b.getOrLoad("k", async () => "wrong")).toBe("old"); // now in b's L1
          await proxy.setUp(false);
          await a.delete("k"); // neither the DEL nor the PUBLISH gets out
          expect(a.stats().invalidationsPending).toBe(1);
          expect(await b.getOrLoad("k", async () => "new")).toBe("old"); // b has not heard of it
          await proxy.setUp(true); // a gets no more calls: its retry timer replays the invalidation
          expect(await eventually(() => b.stats().invalidationsReceived === 1, 3_000)).toBe(true);
          expect(await b.getOrLoad("k", async () => "new")).toBe("new");
          expect(a.stats()).toMatchObject({ invalidationsPublished: 1, invalidationsPending: 0 });
        } finally {
          await Promise.all([a.close(), b.close()]);
          await proxy.end();
        }
      },
    );

    test("two_tier backfills L1 with L2's expiry, and an early refresh takes a newer L2 entry without loading", async () => {
      const prefix = uniquePrefix("two_tier-early");
      const drawA = switchableDraw();
      const drawB = switchableDraw();
      const options = { ...on(), ttlMs: 60_000, l1MaxSize: 100, l1TtlMs: 60_000, prefix };
      const a = twoTierOn({
        ...options,
        earlyRefresh: { beta: 1_000, random: drawA.random },
      });
      const b = twoTierOn({
        ...options,
        earlyRefresh: { beta: 1_000, random: drawB.random },
      });
      try {
        expect(await eventually(async () => (await a.healthy()) && (await b.healthy()))).toBe(true);
        await a.getOrLoad("k", async () => {
          await Bun.sleep(5);
          return "v1";
        });
        expect(
          await eventually(async () => (await redis.get(`${prefix}{k}`))?.endsWith(":v1") === true),
        ).toBe(true);
        expect(await b.getOrLoad("k", async () => "wrong")).toBe("v1"); // an L2 hit: in b's L1 now
        // a refreshes: its reload SETs L2 with a later expiry.
        drawA.next = TINY_DRAW;
        const v2 = async (): Promise<string | undefined> => {
          await Bun.sleep(5); // its expiry is then later than v1's by at least that (ms resolution)
          return "v2";
        };
        expect(await a.getOrLoad("k", v2)).toBe("v1");
        drawA.next = 1;
        expect(
          await eventually(async () => (await redis.get(`${prefix}{k}`))?.endsWith(":v2") === true),
        ).toBe(true);
        expect(a.stats()).toMatchObject({ earlyRefreshes: 1, refreshLoads: 1, loads: 2 });
        // b decides on the expiry its L1 copied from L2: its refresh finds a's newer entry and loads nothing.
        drawB.next = TINY_DRAW;
        let bLoads = 0;
        const bLoader = async (): Promise<string | undefined> => {
          bLoads++;
          return "from-b";
        };
        expect(await b.getOrLoad("k", bLoader)).toBe("v1");
        drawB.next = 1;
        expect(await eventually(async () => (await b.getOrLoad("k", bLoader)) === "v2")).toBe(true);
        expect(bLoads).toBe(0);
        expect(b.stats()).toMatchObject({ earlyRefreshes: 1, refreshLoads: 0, loads: 0, loadWaits: 0 });
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    singleRedis(
      "two_tier disowns its loads in flight when its subscription is re-established: one held across the gap fills nothing",
      async () => {
        const proxy = await redisBehindProxy("two_tier-resubscribe-flight");
        const prefix = uniquePrefix("two_tier-resubscribe-flight");
        const url = await redisUrl();
        const options = { ttlMs: 60_000, l1MaxSize: 100, l1TtlMs: 60_000, prefix };
        const a = twoTierOn({ ...options, redis: url, client });
        // B's breaker, once open, stays open for the rest of the test.
        const b = twoTierOn({ ...options, ...proxy.inject, breakerCooldownMs: 60_000 });
        const c = twoTierOn({ ...options, redis: url, client });
        const row = heldRow("old");
        try {
          expect(await eventually(async () => (await a.healthy()) && (await b.healthy()))).toBe(true);
          const answered = b.getOrLoad("p", row.held);
          expect(await settles(row.read)).toBe(true); // B's load has read the old row
          await proxy.setUp(false); // B's connections close, its subscriber's too: the gap begins
          for (let i = 0; i < 3; i++) await b.getOrLoad(`gap-${i}`, row.load); // 3 failed GETs open its breaker
          expect(b.stats().breakerOpens).toBe(1);
          row.value = "new";
          await a.delete("p"); // its message is lost to B
          expect(a.stats().invalidationsPublished).toBe(1);
          await proxy.setUp(true);
          expect(await eventually(() => b.healthy(), 3_000)).toBe(true); // subscribed again: the gap is over
          // B's load returns the old row. Its fill cannot be checked (the breaker sends nothing), so only the
          // disowning keeps that row out of B's L1.
          row.release();
          expect(await answered).toBe("old");
          expect(await eventually(() => c.healthy())).toBe(true);
          expect({
            redis: await redis.get(`${prefix}{p}`),
            a: await a.getOrLoad("p", row.load),
            b: await b.getOrLoad("p", row.load),
            c: await c.getOrLoad("p", row.load),
          }).toEqual({ redis: null, a: "new", b: "new", c: "new" });
          expect(b.stats()).toMatchObject({ invalidationsReceived: 0, staleFillsRefused: 0 });
        } finally {
          row.release();
          await Promise.all([a.close(), b.close(), c.close()]);
          await proxy.end();
        }
      },
    );

    singleRedis(
      "two_tier flushes L1 when its subscriber reconnects (messages may have been lost), and hears each message once after",
      async () => {
        const prefix = uniquePrefix("two_tier-resubscribe");
        const options = { ...on(), ttlMs: 60_000, l1MaxSize: 100, l1TtlMs: 60_000, prefix };
        const cache = twoTierOn(options);
        const other = twoTierOn(options);
        try {
          expect(await eventually(() => cache.healthy())).toBe(true);
          await cache.getOrLoad("k", async () => "v1");
          // Its fill may be on another connection than this test's (Bun's client): DEL only once it has landed.
          expect(await eventually(async () => (await redis.get(`${prefix}{k}`)) === "v1")).toBe(true);
          await redis.del(`${prefix}{k}`);
          await redis.call("CLIENT", "KILL", "TYPE", "pubsub"); // drops every subscriber connection, ours included
          expect(
            await eventually(async () => (await cache.getOrLoad("k", async () => "v2")) === "v2", 3_000),
          ).toBe(true);
          // Subscribed again, once: another instance's delete reaches it as one message, not two.
          expect(await eventually(async () => (await cache.healthy()) && (await other.healthy()))).toBe(true);
          await other.delete("k");
          expect(await eventually(() => cache.stats().invalidationsReceived > 0)).toBe(true);
          await Bun.sleep(20);
          expect(cache.stats().invalidationsReceived).toBe(1);
        } finally {
          await Promise.all([cache.close(), other.close()]);
        }
      },
    );
  });
}
