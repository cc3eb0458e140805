import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import postgres from "postgres";
import type { Services, ServicesOptions } from "./services.ts";
import { ServicesUnavailableError, servicesDown, servicesStatus, servicesUp } from "./services.ts";

// Port 1 (tcpmux) has no listener, so step 2 never picks a server that happens to run on 5432/6379.
const CLOSED_DEFAULTS = {
  databaseUrl: "postgres://postgres@127.0.0.1:1/cachelab",
  redisUrl: "redis://127.0.0.1:1",
};

function temporaryStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "cachelab-services-"));
  // As root the native Postgres runs as the postgres user, which must reach the folder.
  chmodSync(dir, 0o755);
  return dir;
}

function readPidFile(path: string): number {
  return Number.parseInt(readFileSync(path, "utf8").split("\n")[0] ?? "", 10);
}

async function postgresAnswers(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    const rows = await sql`select 1 as one`;
    return rows[0]?.one === 1;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 0 });
  }
}

async function toxiproxyAnswers(url: string): Promise<boolean> {
  return fetch(`${url}/version`, { signal: AbortSignal.timeout(1_000) }).then(
    (response) => response.ok,
    () => false,
  );
}

async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return (await client.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    if (client.status !== "end") client.disconnect();
  }
}

describe("native services", () => {
  const stateDir = temporaryStateDir();
  const otherStateDir = temporaryStateDir();
  const logLines: string[] = [];
  const options: ServicesOptions = {
    stateDir,
    env: { PATH: process.env.PATH },
    log: (line) => logLines.push(line),
    defaults: CLOSED_DEFAULTS,
  };
  const postgresPidFile = join(stateDir, "postgres", "data", "postmaster.pid");
  const redisPidFile = join(stateDir, "redis", "redis.pid");
  const toxiproxyPidFile = join(stateDir, "toxiproxy", "toxiproxy.pid");
  let first: Services;

  beforeAll(async () => {
    first = await servicesUp(options);
  });

  afterAll(async () => {
    try {
      await servicesDown(options);
      await servicesDown({ ...options, stateDir: otherStateDir });
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
      rmSync(otherStateDir, { recursive: true, force: true });
    }
  });

  test("servicesUp starts native servers when nothing answers", async () => {
    expect(first.postgres).toMatchObject({ mode: "native", startedByCachelab: true });
    expect(first.redis).toMatchObject({ mode: "native", startedByCachelab: true });
    expect(first.postgres.version).toMatch(/^\d+\.\d+/);
    expect(first.redis.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(first.databaseUrl).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/cachelab$/);
    expect(first.redisUrl).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(await postgresAnswers(first.databaseUrl)).toBe(true);
    expect(await redisAnswers(first.redisUrl)).toBe(true);
    expect(existsSync(join(stateDir, "services.json"))).toBe(true);
  });

  test("servicesUp starts a native Toxiproxy beside them, below the ephemeral port range", async () => {
    expect(first.toxiproxy).toMatchObject({ mode: "native", startedByCachelab: true, version: "2.12.0" });
    const port = Number(new URL(first.toxiproxy?.url ?? "").port);
    expect(port).toBeLessThan(32_768);
    expect(await toxiproxyAnswers(first.toxiproxy?.url ?? "")).toBe(true);
  });

  test("servicesUp preloads pg_stat_statements and creates the extension", async () => {
    const sql = postgres(first.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const extensions = await sql`select extname from pg_extension where extname = 'pg_stat_statements'`;
      expect(extensions).toHaveLength(1);
      // The view only answers when the library is preloaded.
      const rows = await sql`select count(*)::int as calls from pg_stat_statements`;
      expect(rows[0]?.calls).toBeGreaterThanOrEqual(0);
    } finally {
      await sql.end({ timeout: 0 });
    }
  });

  test("servicesUp reuses the recorded native servers instead of starting new ones", async () => {
    const toxiproxyPid = readPidFile(toxiproxyPidFile);
    const postgresPid = readPidFile(postgresPidFile);
    const redisPid = readPidFile(redisPidFile);
    const second = await servicesUp(options);
    expect(second.databaseUrl).toBe(first.databaseUrl);
    expect(second.redisUrl).toBe(first.redisUrl);
    expect(second.postgres.mode).toBe("native");
    expect(readPidFile(postgresPidFile)).toBe(postgresPid);
    expect(readPidFile(redisPidFile)).toBe(redisPid);
    expect(second.toxiproxy?.url).toBe(first.toxiproxy?.url);
    expect(readPidFile(toxiproxyPidFile)).toBe(toxiproxyPid);
  });

  test("servicesStatus reports the native servers without starting anything", async () => {
    const status = await servicesStatus(options);
    expect(status.postgres).toEqual(first.postgres);
    expect(status.redis).toEqual(first.redis);
    expect(status.toxiproxy).toEqual(first.toxiproxy);
  });

  test("servicesUp uses TOXIPROXY_URL as external, and names it when it does not answer", async () => {
    const env = { PATH: process.env.PATH, DATABASE_URL: first.databaseUrl, REDIS_URL: first.redisUrl };
    const external = await servicesUp({
      ...options,
      stateDir: otherStateDir,
      env: { ...env, TOXIPROXY_URL: first.toxiproxy?.url },
    });
    expect(external.toxiproxy).toMatchObject({ mode: "external", url: first.toxiproxy?.url });
    const attempt = servicesUp({
      ...options,
      stateDir: otherStateDir,
      env: { ...env, TOXIPROXY_URL: "http://127.0.0.1:1" },
    });
    await expect(attempt).rejects.toThrow(/TOXIPROXY_URL.*127\.0\.0\.1:1/);
  });

  test("servicesUp uses DATABASE_URL and REDIS_URL as external servers", async () => {
    const external = await servicesUp({
      ...options,
      stateDir: otherStateDir,
      env: { PATH: process.env.PATH, DATABASE_URL: first.databaseUrl, REDIS_URL: first.redisUrl },
    });
    expect(external.postgres).toMatchObject({
      mode: "external",
      url: first.databaseUrl,
      startedByCachelab: false,
    });
    expect(external.redis).toMatchObject({ mode: "external", url: first.redisUrl, startedByCachelab: false });
    expect(external.postgres.version).toBe(first.postgres.version);
  });

  test("servicesUp reports DATABASE_URL and REDIS_URL naming its own servers as native", async () => {
    const exported = await servicesUp({
      ...options,
      env: { PATH: process.env.PATH, DATABASE_URL: first.databaseUrl, REDIS_URL: first.redisUrl },
    });
    expect(exported.postgres).toEqual(first.postgres);
    expect(exported.redis).toEqual(first.redis);
  });

  test("servicesUp uses a server answering on the default URLs as external", async () => {
    const found = await servicesUp({
      ...options,
      stateDir: otherStateDir,
      defaults: { databaseUrl: first.databaseUrl, redisUrl: first.redisUrl },
    });
    expect(found.postgres).toMatchObject({
      mode: "external",
      url: first.databaseUrl,
      startedByCachelab: false,
    });
    expect(found.redis).toMatchObject({ mode: "external", url: first.redisUrl, startedByCachelab: false });
  });

  test("servicesDown leaves a server it merely found running", async () => {
    // Only the Toxiproxy those runs started (no TOXIPROXY_URL was given) is cachelab's to stop there.
    const lines = await servicesDown({ ...options, stateDir: otherStateDir });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toStartWith("toxiproxy: stopped native server");
    expect(await postgresAnswers(first.databaseUrl)).toBe(true);
    expect(await redisAnswers(first.redisUrl)).toBe(true);
  });

  test("servicesUp notes a default port that answers with the wrong database and falls through", async () => {
    const notes: string[] = [];
    const services = await servicesUp({
      ...options,
      log: (line) => notes.push(line),
      defaults: {
        databaseUrl: first.databaseUrl.replace(/cachelab$/, "no_such_database"),
        redisUrl: CLOSED_DEFAULTS.redisUrl,
      },
    });
    expect(services.postgres).toMatchObject({ mode: "native", url: first.databaseUrl });
    expect(notes.some((line) => line.startsWith("postgres:") && line.includes("not using it"))).toBe(true);
  });

  test("servicesUp names an unreachable DATABASE_URL in its error without the password", async () => {
    const attempt = servicesUp({
      ...options,
      stateDir: otherStateDir,
      env: { PATH: process.env.PATH, DATABASE_URL: "postgres://postgres:secret@127.0.0.1:1/cachelab" },
    });
    await expect(attempt).rejects.toThrow(/DATABASE_URL.*127\.0\.0\.1:1\/cachelab/);
    await expect(attempt).rejects.not.toThrow(/secret/);
    // Nothing was started for Redis either: the bad URL fails before any native start.
    expect(existsSync(join(otherStateDir, "services.json"))).toBe(false);
  });

  test("servicesUp throws ServicesUnavailableError when neither redis-server nor docker is on PATH", async () => {
    const attempt = servicesUp({
      ...options,
      stateDir: otherStateDir,
      env: { PATH: "", DATABASE_URL: first.databaseUrl },
    });
    await expect(attempt).rejects.toBeInstanceOf(ServicesUnavailableError);
    await expect(attempt).rejects.toThrow(/^Cannot start redis:/);
  });

  test("servicesUp starts new native servers when the recorded pids are gone", async () => {
    const postgresPid = readPidFile(postgresPidFile);
    const redisPid = readPidFile(redisPidFile);
    const toxiproxyPid = readPidFile(toxiproxyPidFile);
    process.kill(postgresPid, "SIGKILL");
    process.kill(redisPid, "SIGKILL");
    process.kill(toxiproxyPid, "SIGKILL");
    const restarted = await servicesUp(options);
    expect(restarted.toxiproxy?.mode).toBe("native");
    expect(readPidFile(toxiproxyPidFile)).not.toBe(toxiproxyPid);
    expect(await toxiproxyAnswers(restarted.toxiproxy?.url ?? "")).toBe(true);
    expect(restarted.postgres.mode).toBe("native");
    expect(readPidFile(postgresPidFile)).not.toBe(postgresPid);
    expect(readPidFile(redisPidFile)).not.toBe(redisPid);
    expect(await postgresAnswers(restarted.databaseUrl)).toBe(true);
    expect(await redisAnswers(restarted.redisUrl)).toBe(true);
    first = restarted;
  });

  test("servicesUp stops a Postgres left running on its data directory without a record, then starts its own", async () => {
    // As when a clone is deleted without `services down` and cloned again to the same path.
    const postgresPid = readPidFile(postgresPidFile);
    const recordFile = join(stateDir, "services.json");
    const records = JSON.parse(readFileSync(recordFile, "utf8")) as Record<string, unknown>;
    delete records.postgres;
    writeFileSync(recordFile, JSON.stringify(records));
    logLines.length = 0;
    const restarted = await servicesUp(options);
    expect(logLines.some((line) => line.startsWith("postgres: stopped a server left running on"))).toBe(true);
    expect(restarted.postgres.mode).toBe("native");
    expect(readPidFile(postgresPidFile)).not.toBe(postgresPid);
    expect(await postgresAnswers(restarted.databaseUrl)).toBe(true);
    first = restarted;
  });

  test("servicesDown stops the native servers cachelab started", async () => {
    const lines = await servicesDown(options);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toStartWith("postgres: stopped native server");
    expect(lines[1]).toStartWith("redis: stopped native server");
    expect(lines[2]).toStartWith("toxiproxy: stopped native server");
    expect(await toxiproxyAnswers(first.toxiproxy?.url ?? "")).toBe(false);
    expect(await postgresAnswers(first.databaseUrl)).toBe(false);
    expect(await redisAnswers(first.redisUrl)).toBe(false);
    expect(existsSync(join(stateDir, "services.json"))).toBe(false);
    expect(await servicesDown(options)).toEqual(["nothing to stop"]);
  });

  test("servicesStatus reports null for services that are not running", async () => {
    expect(await servicesStatus(options)).toEqual({ postgres: null, redis: null, toxiproxy: null });
  });
});

test("ServicesUnavailableError names both ways to get the servers and the URL variables", () => {
  const error = new ServicesUnavailableError(["postgres", "redis"]);
  expect(error).toBeInstanceOf(Error);
  expect(error.name).toBe("ServicesUnavailableError");
  expect(error.message).toContain("apt-get install postgresql redis-server");
  expect(error.message).toContain("brew install postgresql redis");
  expect(error.message).toContain("docker compose up -d");
  expect(error.message).toContain("DATABASE_URL");
  expect(error.message).toContain("REDIS_URL");
});

describe("a checkout the postgres user cannot reach", () => {
  // Only root runs Postgres as another user (CI and these machines run as root).
  test.skipIf(process.getuid?.() !== 0)(
    "servicesUp keeps the native Postgres in a temp folder of its own when the checkout is private",
    async () => {
      const privateDir = mkdtempSync(join(tmpdir(), "cachelab-private-")); // 0700, like a clone under mkdtemp
      const options: ServicesOptions = {
        stateDir: join(privateDir, "repo", ".cachelab"),
        env: { PATH: process.env.PATH },
        log: () => {},
        defaults: CLOSED_DEFAULTS,
      };
      let dataDir: string | null = null;
      try {
        const services = await servicesUp(options);
        expect(services.postgres.mode).toBe("native");
        expect(await postgresAnswers(services.databaseUrl)).toBe(true);
        const state = JSON.parse(
          readFileSync(join(privateDir, "repo", ".cachelab", "services.json"), "utf8"),
        ) as {
          postgres: { dataDir: string };
        };
        dataDir = state.postgres.dataDir;
        expect(dataDir.startsWith(join(tmpdir(), "cachelab-postgres-"))).toBe(true);
        expect((await servicesUp(options)).databaseUrl).toBe(services.databaseUrl);
      } finally {
        await servicesDown(options);
        if (dataDir) rmSync(join(dataDir, ".."), { recursive: true, force: true });
        rmSync(privateDir, { recursive: true, force: true });
      }
    },
  );
});
