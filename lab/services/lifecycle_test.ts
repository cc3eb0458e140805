import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { type Credentials, credentialsPath } from "./credentials.ts";
import { COMPOSE_FILE, composeEnv } from "./docker.ts";
import type { Services, ServicesOptions } from "./lifecycle.ts";
import { ServicesUnavailableError, servicesDown, servicesStatus, servicesUp } from "./lifecycle.ts";
import { trustLines } from "./native_postgres.ts";
import {
  CLOSED_DEFAULTS,
  postgresAnswers,
  postgresError,
  processUid,
  readPidFile,
  redisAnswers,
  redisReply,
  runCli,
  temporaryStateDir,
  toxiproxyAnswers,
  uidOf,
} from "./services_testing.ts";

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
    expect(first.databaseUrl).toMatch(/^postgres:\/\/postgres:[\w-]{32}@127\.0\.0\.1:\d+\/cachelab$/);
    expect(first.redisUrl).toMatch(/^redis:\/\/:[\w-]{32}@127\.0\.0\.1:\d+$/);
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

  test("the native Redis refuses a connection without the password (NOAUTH) and takes the generated one", async () => {
    const { password, port } = new URL(first.redisUrl);
    expect(await redisReply(Number(port), ["PING"])).toStartWith("-NOAUTH");
    expect(await redisReply(Number(port), ["AUTH wrong", "PING"])).toStartWith("-NOAUTH");
    expect(await redisReply(Number(port), ["AUTH wrong"])).toStartWith("-WRONGPASS");
    expect(await redisReply(Number(port), [`AUTH ${password}`, "PING"])).toBe("+PONG");
  });

  test("the native Postgres refuses a connection without the password and has no trust line", async () => {
    const url = new URL(first.databaseUrl);
    url.password = "";
    expect(await postgresError(url.toString())).toMatch(/password authentication failed|no password|SASL/i);
    url.password = "wrong";
    expect(await postgresError(url.toString())).toMatch(/password authentication failed for user "postgres"/);
    expect(await postgresAnswers(first.databaseUrl)).toBe(true);
    expect(trustLines(join(stateDir, "postgres", "data"))).toEqual([]);
    const hba = readFileSync(join(stateDir, "postgres", "data", "pg_hba.conf"), "utf8");
    expect(hba).toMatch(/^host\s+all\s+all\s+127\.0\.0\.1\/32\s+scram-sha-256$/m);
  });

  test("the generated credentials are in a 0600 file in a 0700 folder, and services.json is 0600", () => {
    const credentials = JSON.parse(readFileSync(credentialsPath({ stateDir }), "utf8")) as Credentials;
    expect(first.databaseUrl).toContain(`:${credentials.postgresPassword}@`);
    expect(first.redisUrl).toContain(`:${credentials.redisPassword}@`);
    expect(statSync(credentialsPath({ stateDir })).mode & 0o777).toBe(0o600);
    expect(statSync(join(stateDir, "secrets")).mode & 0o777).toBe(0o700);
    expect(statSync(join(stateDir, "services.json")).mode & 0o777).toBe(0o600);
    // The progress lines (what `up` prints on stderr) never carry them.
    expect(logLines.length).toBeGreaterThan(0);
    for (const line of logLines) {
      expect(line).not.toContain(credentials.postgresPassword);
      expect(line).not.toContain(credentials.redisPassword);
    }
    // The state folder lets no one list it; as root the postgres user may pass through to its own folder.
    expect(statSync(stateDir).mode & 0o777).toBe(process.getuid?.() === 0 ? 0o711 : 0o700);
  });

  test.skipIf(process.getuid?.() !== 0)("as root, the native Redis and Toxiproxy do not run as uid 0", () => {
    const redisPid = readPidFile(redisPidFile);
    const toxiproxyPid = readPidFile(toxiproxyPidFile);
    expect(processUid(redisPid)).toBe(uidOf("redis") ?? uidOf("nobody"));
    expect(processUid(toxiproxyPid)).toBe(uidOf("nobody"));
    expect(processUid(readPidFile(postgresPidFile))).toBe(uidOf("postgres"));
    // Its API listens on loopback only.
    expect(new URL(first.toxiproxy?.url ?? "").hostname).toBe("127.0.0.1");
  });

  test("bun run services status masks the passwords, and shows them with --show-secrets", async () => {
    const env = { ...process.env, DATABASE_URL: first.databaseUrl, REDIS_URL: first.redisUrl };
    const masked = await runCli(["status"], env);
    expect(masked.exitCode).toBe(0);
    const postgresPassword = new URL(first.databaseUrl).password;
    const redisPassword = new URL(first.redisUrl).password;
    expect(masked.stdout).not.toContain(postgresPassword);
    expect(masked.stdout).not.toContain(redisPassword);
    expect(masked.stdout).toContain(first.databaseUrl.replace(postgresPassword, "***"));
    expect(masked.stdout).toContain(first.redisUrl.replace(redisPassword, "***"));
    const shown = await runCli(["status", "--show-secrets"], env);
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toContain(first.databaseUrl);
    expect(shown.stdout).toContain(first.redisUrl);
    const wrong = await runCli(["status", "--show-secret"], env);
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toContain(
      "Cannot run services status: unknown option (valid: --show-secrets): received --show-secret",
    );
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

  test("servicesDown with only stops just those (what an interrupted run started), leaving the others up", async () => {
    expect(await servicesDown({ ...options, only: ["toxiproxy"] })).toEqual([
      expect.stringMatching(/^toxiproxy: stopped native server/),
    ]);
    expect(await toxiproxyAnswers(first.toxiproxy?.url ?? "")).toBe(false);
    expect(await postgresAnswers(first.databaseUrl)).toBe(true);
    expect(await redisAnswers(first.redisUrl)).toBe(true);
    first = await servicesUp(options); // Toxiproxy again, for the test below
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
    expect(await servicesStatus(options)).toEqual({
      postgres: null,
      redis: null,
      toxiproxy: null,
      redisCluster: null,
      valkey: null,
    });
  });
});

test("docker-compose.yml requires the passwords docker.ts passes and publishes its ports on 127.0.0.1 only", () => {
  const text = readFileSync(COMPOSE_FILE, "utf8");
  const stateDir = temporaryStateDir();
  try {
    const env = composeEnv({ stateDir });
    const required = [...text.matchAll(/\$\{(\w+):\?/g)].map((match) => match[1]);
    expect(new Set(required)).toEqual(new Set(Object.keys(env)));
    const compose = Bun.YAML.parse(text) as {
      services: Record<
        string,
        { command: string | string[]; ports: string[]; environment: Record<string, string> }
      >;
    };
    const redis = compose.services.redis;
    const postgresService = compose.services.postgres;
    if (!redis || !postgresService)
      throw new Error("Cannot read docker-compose.yml: a service is missing: received none");
    expect([redis.command].flat().join(" ")).toContain("requirepass");
    // Compose's required-variable syntax, `$` + `{NAME:?message}`.
    expect(redis.environment.REDIS_PASSWORD).toStartWith("$" + "{CACHELAB_REDIS_PASSWORD:?");
    expect(postgresService.environment.POSTGRES_PASSWORD).toStartWith("$" + "{CACHELAB_POSTGRES_PASSWORD:?");
    for (const service of [redis, postgresService])
      for (const port of service.ports) expect(port).toStartWith("127.0.0.1:");
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
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
