import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { freePort } from "../lab/shared/ports.ts";
import { testTmpdir } from "../lab/shared/test_tmpdir.ts";
import { testServices } from "../lab/shared/testing.ts";
import { getCeiling, KEYS_TTL_MS, localCeiling } from "./_ceilings.ts";
import { verify } from "./_verify.ts";

const BODY = '{"id":1,"name":"a"}';
const work = mkdtempSync(join(testTmpdir(), "cachelab-ceilings-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs a ceiling's script until it prints its first line; its process, that line and its stderr. */
async function start(name: string, source: string) {
  const script = join(work, `${name}.ts`);
  writeFileSync(script, source);
  const proc = Bun.spawn(["bun", script], { stdout: "pipe", stderr: "pipe" });
  const { value } = await proc.stdout.getReader().read();
  return { proc, line: new TextDecoder().decode(value ?? new Uint8Array()).trim() };
}

for (const framework of ["elysia", "raw"] as const) {
  test(`the local ceiling on ${framework} answers each warmed id with the body, an unknown one 404`, async () => {
    const port = await freePort();
    const { proc, line } = await start(framework, localCeiling(framework, BODY, 10, 100, 60_000)(port));
    try {
      expect(line).toBe("ready");
      const origin = `http://127.0.0.1:${port}`;
      await verify(framework, origin, BODY);
      expect(await (await fetch(`${origin}/products/10`)).text()).toBe(BODY);
      expect((await fetch(`${origin}/products/11`)).status).toBe(404);
    } finally {
      proc.kill();
      await proc.exited;
    }
  });
}

test("the Elysia ceiling refuses to be measured when Elysia would await its hits", async () => {
  const source = localCeiling("elysia", BODY, 10, 100, 60_000)(await freePort());
  const awaited = source.replace("const route = ({ params }) =>", "const route = async ({ params }) =>");
  expect(awaited).not.toBe(source);
  const { proc } = await start("awaited", awaited);
  expect(await proc.exited).not.toBe(0);
  expect(await new Response(proc.stderr).text()).toContain(
    "Cannot measure the local ceiling: Elysia awaits its hits",
  );
});

for (const client of ["ioredis", "node-redis", "bun"] as const) {
  test(`the GET ceiling on ${client} answers each id it stored, and its keys expire by themselves`, async () => {
    const { redisUrl } = await testServices();
    const prefix = `cachelab-test:${process.pid}:ceiling:${client}:`;
    const port = await freePort();
    const { proc, line } = await start(`get_${client}`, getCeiling(client, redisUrl, prefix, 10, BODY)(port));
    const redis = new Redis(redisUrl);
    try {
      expect(line).toBe("ready");
      const origin = `http://127.0.0.1:${port}`;
      expect(await (await fetch(`${origin}/products/10`)).text()).toBe(BODY);
      expect((await fetch(`${origin}/products/11`)).status).toBe(404);
      const ttls = await Promise.all([1, 10].map((id) => redis.pttl(`${prefix}${id}`)));
      for (const ttl of ttls) {
        expect(ttl).toBeGreaterThan(0); // -1 would be a key kept for ever
        expect(ttl).toBeLessThanOrEqual(KEYS_TTL_MS);
      }
    } finally {
      proc.kill();
      await proc.exited;
      await redis.del(...Array.from({ length: 10 }, (_, i) => `${prefix}${i + 1}`));
      redis.disconnect();
    }
  });
}
