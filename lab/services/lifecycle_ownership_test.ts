import { afterAll, describe, expect, test } from "bun:test";
import {
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
import type { ServicesOptions } from "./lifecycle.ts";
import { servicesDown, servicesStatus, servicesUp } from "./lifecycle.ts";
import { findPostgresBinDir, postgresUserRunner, trustLines } from "./native_postgres.ts";
import { CLOSED_DEFAULTS, postgresAnswers, redisAnswers, temporaryStateDir } from "./services_testing.ts";

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

  const programs = {
    postgres: "postgres",
    redis: "redis-server",
    toxiproxy: "toxiproxy-server",
    valkey: "valkey-server",
  } as const;

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
      expect(await servicesStatus(options)).toEqual({
        postgres: null,
        redis: null,
        toxiproxy: null,
        redisCluster: null,
        valkey: null,
      });
      const lines = await servicesDown(options);
      expect(lines).toHaveLength(4);
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
