/**
 * The lab's valkey-server (native_valkey.ts), a real process in a state folder of the test's own: started on
 * demand beside Redis with a password and no persistence, reused, reported, stopped by `services down`; and
 * the refusals: no binary, a binary that is not Valkey's, a VALKEY_URL that answers as Redis.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { ownRedisServer } from "../shared/testing.ts";
import { type ServicesOptions, servicesDown, servicesStatus, valkeyUp } from "./lifecycle.ts";
import { VALKEY_MISSING, VALKEY_PROGRAM, valkeyBinary } from "./native_valkey.ts";
import {
  CLOSED_DEFAULTS,
  processUid,
  readPidFile,
  redisReply,
  runCli,
  temporaryStateDir,
  uidOf,
} from "./services_testing.ts";
import { isAlive } from "./state.ts";

const VALKEY_VERSION = "9.1.2"; // install-deps.sh's pin

/** Exited: gone, or a zombie whose parent has not reaped it yet (when it does is the parent's, not the stop's). */
const exited = (pid: number) => !isAlive(pid, VALKEY_PROGRAM);

describe("the lab's valkey-server", () => {
  const stateDir = temporaryStateDir();
  const logLines: string[] = [];
  const options: ServicesOptions = {
    stateDir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    log: (line) => logLines.push(line),
    defaults: CLOSED_DEFAULTS,
  };
  const pidFile = join(stateDir, "valkey", "valkey.pid");
  let url: string;

  beforeAll(async () => {
    url = (await valkeyUp(options)).url;
  });

  afterAll(async () => {
    try {
      await servicesDown(options);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  test("valkeyUp starts one on a free port with a password, answering as Valkey with its own version", async () => {
    expect(valkeyBinary(options.env ?? {})).not.toBeNull();
    const status = await servicesStatus(options);
    expect(status.valkey).toEqual({
      mode: "native",
      url,
      version: VALKEY_VERSION,
      startedByCachelab: true,
      server: "valkey",
    });
    // Nothing else was started for it.
    expect([status.postgres, status.redis, status.toxiproxy]).toEqual([null, null, null]);
    expect(url).toMatch(/^redis:\/\/:[\w-]{32}@127\.0\.0\.1:\d+$/);
    const port = Number(new URL(url).port);
    expect(await redisReply(port, ["PING"])).toStartWith("-NOAUTH");
    expect(logLines.some((line) => /^valkey: started native server.* on port \d+/.test(line))).toBe(true);
  });

  test("it keeps nothing on disk: no snapshots, no append-only file", async () => {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    await client.connect();
    try {
      expect(await client.config("GET", "save")).toEqual(["save", ""]);
      expect(await client.config("GET", "appendonly")).toEqual(["appendonly", "no"]);
      expect(await client.config("GET", "bind")).toEqual(["bind", "127.0.0.1"]);
    } finally {
      client.disconnect();
    }
  });

  test.skipIf(process.getuid?.() !== 0)("as root, it does not run as uid 0", () => {
    expect(processUid(readPidFile(pidFile))).toBe(uidOf("valkey") ?? uidOf("redis") ?? uidOf("nobody"));
  });

  test("valkeyUp again reuses the recorded server", async () => {
    const pid = readPidFile(pidFile);
    expect((await valkeyUp(options)).url).toBe(url);
    expect(readPidFile(pidFile)).toBe(pid);
    expect(logLines.at(-1)).toBe(`valkey: reusing native server (pid ${pid})`);
  });

  test("bun run services status names it, password masked", async () => {
    const password = new URL(url).password;
    const { exitCode, stdout } = await runCli(["status"], { ...process.env, VALKEY_URL: url });
    expect(exitCode).toBe(0);
    const line = stdout.split("\n").find((l) => l.startsWith("valkey: "));
    expect(line).toBe(
      `valkey: external (found, not managed by cachelab), version ${VALKEY_VERSION}, ${url.replace(password, "***")}`,
    );
  });

  test("servicesDown stops it and forgets it; once stopped, status says so and valkeyUp starts a new one", async () => {
    const pid = readPidFile(pidFile);
    const lines = await servicesDown({ ...options, only: ["valkey"] });
    expect(lines).toEqual([`valkey: stopped native server (pid ${pid}, port ${new URL(url).port})`]);
    expect(exited(pid)).toBe(true);
    expect(existsSync(pidFile)).toBe(false);
    expect(existsSync(join(stateDir, "services.json"))).toBe(false); // it was the only record
    expect((await servicesStatus(options)).valkey).toBeNull();
    expect(await servicesDown({ ...options, only: ["valkey"] })).toEqual(["nothing to stop"]);
    url = (await valkeyUp(options)).url;
    expect(readPidFile(pidFile)).not.toBe(pid);
  });

  test("a recorded server that is gone is replaced", async () => {
    const pid = readPidFile(pidFile);
    process.kill(pid, "SIGKILL");
    while (!exited(pid)) await Bun.sleep(10);
    url = (await valkeyUp(options)).url;
    expect(readPidFile(pidFile)).not.toBe(pid);
    expect(logLines.some((line) => line.startsWith("valkey: recorded native server on port"))).toBe(true);
  });
});

describe("what is not Valkey", () => {
  const scratch = mkdtempSync(join(tmpdir(), "cachelab-valkey-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  const optionsWith = (env: Record<string, string | undefined>): ServicesOptions => ({
    stateDir: join(scratch, crypto.randomUUID()),
    env,
    log: () => {},
    defaults: CLOSED_DEFAULTS,
  });

  test("without a valkey-server anywhere, valkeyUp names install-deps", async () => {
    const options = optionsWith({ PATH: "/nonexistent", VALKEY_VENV: join(scratch, "no-venv") });
    expect(valkeyBinary(options.env ?? {})).toBeNull();
    await expect(valkeyUp(options)).rejects.toThrow(`Cannot start Valkey: ${VALKEY_MISSING}`);
  });

  test("VALKEY_SERVER naming a redis-server is refused before anything starts", async () => {
    const redisServer = Bun.which("redis-server") as string;
    const options = optionsWith({ PATH: process.env.PATH, VALKEY_SERVER: redisServer });
    await expect(valkeyUp(options)).rejects.toThrow(
      new RegExp(
        `^Cannot start Valkey: ${redisServer} --version does not name Valkey: received Redis server v=`,
      ),
    );
    expect((await servicesStatus(options)).valkey).toBeNull();
  });

  test("a VALKEY_URL that answers as Redis is refused, naming what answered", async () => {
    const redis = await ownRedisServer("VALKEY_URL on a Redis");
    try {
      const options = optionsWith({ PATH: process.env.PATH, VALKEY_URL: redis.url });
      await expect(valkeyUp(options)).rejects.toThrow(
        /^Cannot connect to valkey from VALKEY_URL: it answers as redis \d+\.\d+\.\d+, not as Valkey: received redis:\/\/127\.0\.0\.1:\d+$/,
      );
    } finally {
      await redis.stop();
    }
  });

  test("bun run services up takes --valkey and names it when refusing another option", async () => {
    const { exitCode, stderr } = await runCli(["up", "--valkyrie"], { ...process.env });
    expect(exitCode).toBe(2);
    expect(stderr).toContain("Cannot run services up: unknown option (valid: --valkey): received --valkyrie");
  });
});
