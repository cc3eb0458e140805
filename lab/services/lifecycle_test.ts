import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import postgres from "postgres";
import { REPO_ROOT } from "../shared/repo.ts";
import { type Credentials, credentialsPath } from "./credentials.ts";
import { COMPOSE_FILE, composeEnv } from "./docker.ts";
import type { Services, ServicesOptions } from "./lifecycle.ts";
import { ServicesUnavailableError, servicesDown, servicesStatus, servicesUp } from "./lifecycle.ts";
import { findPostgresBinDir, postgresUserRunner, trustLines } from "./native_postgres.ts";

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

/** The real uid a process runs as (/proc/<pid>/status). */
function processUid(pid: number): number | null {
  const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return uid === undefined ? null : Number(uid);
}

function uidOf(user: string): number | null {
  const result = Bun.spawnSync(["id", "-u", user], { stdout: "pipe", stderr: "ignore" });
  return result.exitCode === 0 ? Number(result.stdout.toString().trim()) : null;
}

async function runCli(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const child = Bun.spawn(["bun", join(REPO_ROOT, "lab", "cli", "services.ts"), ...args], {
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  return { exitCode, stdout, stderr };
}

/** The first reply line to `commands` (RESP inline commands) on a raw connection: no client's own handshake. */
async function redisReply(port: number, commands: string[]): Promise<string> {
  const { promise, resolve, reject } = Promise.withResolvers<string>();
  let received = "";
  const socket = await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      data(_socket, chunk) {
        received += chunk.toString();
        const lines = received.split("\r\n");
        if (lines.length > commands.length) resolve(lines[commands.length - 1] ?? "");
      },
      error(_socket, error) {
        reject(error);
      },
    },
  });
  socket.write(commands.map((command) => `${command}\r\n`).join(""));
  try {
    return await promise;
  } finally {
    socket.end();
  }
}

/** The error a connection attempt ends with, or "connected". */
async function postgresError(url: string): Promise<string> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} });
  try {
    await sql`select 1`;
    return "connected";
  } catch (error) {
    return (error as Error).message;
  } finally {
    await sql.end({ timeout: 0 });
  }
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
    expect(await servicesStatus(options)).toEqual({ postgres: null, redis: null, toxiproxy: null });
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

describe("a checkout the postgres user cannot reach", () => {
  // Only root runs Postgres as another user (CI and these machines run as root).
  test.skipIf(process.getuid?.() !== 0)(
    "servicesUp keeps the native Postgres in a mkdtemp folder of its own when the checkout is private, never a folder someone prepared",
    async () => {
      const privateDir = mkdtempSync(join(tmpdir(), "cachelab-private-")); // 0700, like a clone under mkdtemp
      const stateDir = join(privateDir, "repo", ".cachelab");
      const options: ServicesOptions = {
        stateDir,
        env: { PATH: process.env.PATH },
        log: () => {},
        defaults: CLOSED_DEFAULTS,
      };
      // What an older cachelab used: a name anyone could compute and create first, here another user's.
      const tag = new Bun.CryptoHasher("sha1").update(stateDir).digest("hex").slice(0, 10);
      const predictable = join(tmpdir(), `cachelab-postgres-${tag}`);
      mkdirSync(predictable);
      writeFileSync(join(predictable, "planted"), "not cachelab's");
      chownSync(predictable, 65534, 65534);
      let root: string | null = null;
      try {
        const services = await servicesUp(options);
        expect(services.postgres.mode).toBe("native");
        expect(await postgresAnswers(services.databaseUrl)).toBe(true);
        const statePath = join(stateDir, "services.json");
        const state = JSON.parse(readFileSync(statePath, "utf8")) as {
          postgres: { dataDir: string };
          postgresRoot: string;
        };
        root = state.postgresRoot;
        expect(state.postgres.dataDir).toBe(join(root, "data"));
        expect(root.startsWith(join(tmpdir(), "cachelab-postgres-"))).toBe(true);
        expect(root).not.toBe(predictable);
        expect(statSync(predictable).uid).toBe(65534);
        expect(readFileSync(join(predictable, "planted"), "utf8")).toBe("not cachelab's");
        expect((await servicesUp(options)).databaseUrl).toBe(services.databaseUrl);
        await servicesDown(options);

        // The recorded folder survives `down` (so the next `up` reuses its data); swapped for a link, it is refused.
        const kept = JSON.parse(readFileSync(statePath, "utf8")) as { postgresRoot: string };
        expect(kept.postgresRoot).toBe(root);
        const swapped = mkdtempSync(join(tmpdir(), "cachelab-swapped-"));
        writeFileSync(statePath, JSON.stringify({ postgresRoot: swapped }), { mode: 0o600 });
        rmSync(swapped, { recursive: true });
        symlinkSync(predictable, swapped);
        try {
          await expect(servicesUp(options)).rejects.toThrow(
            /^Cannot use .* for Postgres: not a folder of ours/,
          );
        } finally {
          rmSync(swapped, { force: true });
          // Redis started beside the refused Postgres and recorded itself: keep that record for servicesDown.
          const after = JSON.parse(readFileSync(statePath, "utf8")) as Record<string, unknown>;
          writeFileSync(statePath, JSON.stringify({ ...after, postgresRoot: root }), { mode: 0o600 });
        }
      } finally {
        await servicesDown(options);
        if (root) rmSync(root, { recursive: true, force: true });
        rmSync(predictable, { recursive: true, force: true });
        rmSync(privateDir, { recursive: true, force: true });
      }
    },
  );
});

describe("stops that check what they stop", () => {
  const stateDir = temporaryStateDir();
  const binDir = mkdtempSync(join(tmpdir(), "cachelab-impostors-"));
  const options: ServicesOptions = {
    stateDir,
    env: { PATH: process.env.PATH },
    log: () => {},
    defaults: CLOSED_DEFAULTS,
  };
  const impostors: Bun.Subprocess[] = [];

  /**
   * A harmless process named like the server, as a reused pid after a reboot would be: a copy of python3 that
   * listens on a port of its own (so only the start time tells it apart) in the record's folder (Postgres's
   * record also names its working folder).
   */
  async function impostor(program: string, cwd: string): Promise<{ proc: Bun.Subprocess; port: number }> {
    const path = join(binDir, program);
    if (!existsSync(path)) copyFileSync("/usr/bin/python3", path);
    mkdirSync(cwd, { recursive: true });
    const script =
      "import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen()\nprint(s.getsockname()[1], flush=True)\ntime.sleep(60)";
    const proc = Bun.spawn([path, "-c", script], { cwd, stdio: ["ignore", "pipe", "ignore"] });
    impostors.push(proc);
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
    const { value } = await reader.read();
    reader.releaseLock();
    return { proc, port: Number(new TextDecoder().decode(value).trim()) };
  }

  afterAll(() => {
    for (const proc of impostors) proc.kill("SIGKILL");
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(binDir, { recursive: true, force: true });
  });

  const programs = { postgres: "postgres", redis: "redis-server", toxiproxy: "toxiproxy-server" } as const;

  for (const differs of ["start time", "port"] as const) {
    test(`servicesDown and the reuse check never signal or reuse a live pid whose ${differs} differs from the record`, async () => {
      const records: Record<string, unknown> = {};
      const procs: Bun.Subprocess[] = [];
      const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
      for (const [name, program] of Object.entries(programs)) {
        const dataDir = join(stateDir, name, "data");
        const { proc, port } = await impostor(program, dataDir);
        procs.push(proc);
        const pidFile = join(dataDir, name === "postgres" ? "postmaster.pid" : `${name}.pid`);
        writeFileSync(pidFile, `${proc.pid}\n`);
        const recordedPort = differs === "port" ? port + 1 : port;
        const startTicks =
          differs === "start time" ? String(Number(startTicksOf(proc.pid)) - 1) : startTicksOf(proc.pid);
        records[name] = {
          mode: "native",
          url:
            name === "toxiproxy"
              ? `http://127.0.0.1:${recordedPort}`
              : `${name}://:x@127.0.0.1:${recordedPort}`,
          port: recordedPort,
          pidFile,
          dataDir,
          process: { pid: proc.pid, startTicks, bootId },
        };
      }
      writeFileSync(join(stateDir, "services.json"), JSON.stringify(records), { mode: 0o600 });
      expect(await servicesStatus(options)).toEqual({ postgres: null, redis: null, toxiproxy: null });
      const lines = await servicesDown(options);
      expect(lines).toHaveLength(3);
      for (const line of lines)
        expect(line).toContain(
          differs === "port" ? "does not listen on the recorded port" : "started at another time",
        );
      for (const line of lines) expect(line).toContain("not signalled");
      await Bun.sleep(100);
      for (const proc of procs)
        expect({ exitCode: proc.exitCode, signalCode: proc.signalCode }).toEqual({
          exitCode: null,
          signalCode: null,
        });
      for (const proc of procs) proc.kill("SIGKILL");
    });
  }
});

function startTicksOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
}

describe("folders that are not ours", () => {
  test("servicesUp refuses a state folder that is a symlink or belongs to another user", async () => {
    const parent = temporaryStateDir();
    try {
      const target = join(parent, "elsewhere");
      mkdirSync(target);
      const linked = join(parent, "linked");
      symlinkSync(target, linked);
      const attempt = servicesUp({
        stateDir: linked,
        env: { PATH: process.env.PATH },
        log: () => {},
        defaults: CLOSED_DEFAULTS,
      });
      await expect(attempt).rejects.toThrow(/^Cannot use folder .*linked: it is a symbolic link/);
      if (process.getuid?.() === 0) {
        const foreign = join(parent, "foreign");
        mkdirSync(foreign);
        chownSync(foreign, 65534, 65534);
        const foreignAttempt = servicesUp({
          stateDir: foreign,
          env: { PATH: process.env.PATH },
          log: () => {},
          defaults: CLOSED_DEFAULTS,
        });
        await expect(foreignAttempt).rejects.toThrow(
          /^Cannot use folder .*foreign: it belongs to another user \(uid 65534/,
        );
        expect(existsSync(join(foreign, "secrets"))).toBe(false);
      }
      expect(existsSync(join(target, "secrets"))).toBe(false);
      // Nor are records believed from a linked folder: they decide what `down` signals.
      writeFileSync(join(target, "services.json"), "{}");
      const down = servicesDown({ stateDir: linked, env: { PATH: process.env.PATH }, log: () => {} });
      await expect(down).rejects.toThrow(/^Cannot read .*services\.json: .*linked is a symbolic link/);
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe("a data folder an older cachelab initialized with trust", () => {
  const stateDir = temporaryStateDir();
  const lines: string[] = [];
  const options: ServicesOptions = {
    stateDir,
    env: { PATH: process.env.PATH },
    log: (line) => lines.push(line),
    defaults: CLOSED_DEFAULTS,
  };

  afterAll(async () => {
    try {
      await servicesDown(options);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  test("servicesUp migrates it in place: password set, no trust line left, its data kept", async () => {
    const root = join(stateDir, "postgres");
    const dataDir = join(root, "data");
    mkdirSync(root, { recursive: true });
    const binDir = findPostgresBinDir({ PATH: process.env.PATH }, dataDir);
    if (!binDir) throw new Error("Cannot test the trust migration: no initdb found: received PATH");
    const asPostgres = await postgresUserRunner({ PATH: process.env.PATH }, root);
    // What the older cachelab ran.
    const initdb = [join(binDir, "initdb"), "-D", dataDir, "-U", "postgres", "--auth=trust", "--no-sync"];
    expect(
      Bun.spawnSync(asPostgres(initdb), { cwd: root, stdout: "ignore", stderr: "ignore" }).exitCode,
    ).toBe(0);
    expect(trustLines(dataDir).length).toBeGreaterThan(0);
    writeFileSync(join(dataDir, "cachelab-marker"), "kept");

    const services = await servicesUp(options);
    expect(
      lines.some(
        (line) => line.includes("was initialized with trust auth") && line.includes("migrated in place"),
      ),
    ).toBe(true);
    expect(readFileSync(join(dataDir, "cachelab-marker"), "utf8")).toBe("kept");
    expect(trustLines(dataDir)).toEqual([]);
    expect(await postgresAnswers(services.databaseUrl)).toBe(true);
    const url = new URL(services.databaseUrl);
    url.password = "";
    expect(await postgresAnswers(url.toString())).toBe(false);
  });

  test("servicesUp restarts the servers an older cachelab recorded without a password or a start time", async () => {
    const statePath = join(stateDir, "services.json");
    const state = JSON.parse(readFileSync(statePath, "utf8")) as Record<
      "postgres" | "redis" | "toxiproxy",
      { url: string; process?: { pid: number } }
    >;
    const oldPids = [state.postgres.process?.pid, state.redis.process?.pid, state.toxiproxy.process?.pid];
    // What an older cachelab wrote: no process stamp, URLs without a password.
    for (const record of Object.values(state)) delete record.process;
    state.postgres.url = state.postgres.url.replace(/:[\w-]+@/, "@");
    state.redis.url = state.redis.url.replace(/:[\w-]+@/, "");
    writeFileSync(statePath, JSON.stringify(state), { mode: 0o600 });
    lines.length = 0;
    const services = await servicesUp(options);
    for (const name of ["postgres", "redis"]) {
      expect(
        lines.some(
          (line) =>
            line.startsWith(`${name}: the recorded native server`) && line.includes("restarting it with one"),
        ),
      ).toBe(true);
    }
    expect(
      lines.some((line) => line.startsWith("toxiproxy:") && line.includes("predates unprivileged starts")),
    ).toBe(true);
    for (const pid of oldPids)
      expect(
        pid !== undefined &&
          existsSync(`/proc/${pid}/cmdline`) &&
          readFileSync(`/proc/${pid}/cmdline`).length > 0,
      ).toBe(false);
    expect(await postgresAnswers(services.databaseUrl)).toBe(true);
    expect(await redisAnswers(services.redisUrl)).toBe(true);
    expect(new URL(services.redisUrl).password).toHaveLength(32);
  });
});
