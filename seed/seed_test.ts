import { afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { testDatabaseUrl } from "../lab/shared/testing.ts";
import { CATEGORY_COUNT } from "./schema.ts";
import {
  checkSeed,
  checkSeedPlan,
  copyText,
  ensureSeeded,
  type SeedPlan,
  seed,
  tableChecksum,
} from "./seed.ts";

const PLAN: SeedPlan = { rows: 1_000, seed: 42, descriptionBytes: 200 };

function sha256(text: string): string {
  return new Bun.CryptoHasher("sha256").update(text).digest("hex");
}

describe("copyText", () => {
  test("copyText gives the same bytes for the same plan (golden checksum)", () => {
    // Pinned: a change here means every machine's seeded rows change, and old CSV rows stop being comparable.
    expect(sha256(copyText(PLAN, 1, PLAN.rows))).toBe(GOLDEN_SHA256);
  });

  test("copyText row N does not depend on where a chunk starts", () => {
    const whole = copyText(PLAN, 1, 20).split("\n");
    const tail = copyText(PLAN, 11, 20).split("\n");
    expect(tail).toEqual(whole.slice(10));
  });

  test("copyText rows have the planned shape", () => {
    const lines = copyText({ ...PLAN, descriptionBytes: 37 }, 1, 500)
      .trimEnd()
      .split("\n");
    expect(lines).toHaveLength(500);
    for (const [index, line] of lines.entries()) {
      const fields = line.split("\t");
      expect(fields).toHaveLength(8);
      const [id, , category, price, stock, description, version, updatedAt] = fields as [string, ...string[]];
      expect(Number(id)).toBe(index + 1);
      expect(Number(category)).toBeGreaterThanOrEqual(1);
      expect(Number(category)).toBeLessThanOrEqual(CATEGORY_COUNT);
      expect(Number(price)).toBeGreaterThanOrEqual(100);
      expect(Number(stock)).toBeGreaterThanOrEqual(0);
      expect(description).toHaveLength(37);
      expect(version).toBe("1");
      expect(updatedAt).toMatch(/^2024-01-01 \d\d:\d\d:\d\d\+00$/);
    }
  });

  test("copyText differs for another seed", () => {
    expect(copyText({ ...PLAN, seed: 43 }, 1, 10)).not.toBe(copyText(PLAN, 1, 10));
  });
});

test("checkSeedPlan rejects out-of-range values with the field name", () => {
  expect(() => checkSeedPlan({ ...PLAN, rows: 0 })).toThrow(
    "rows must be an integer in 1..10000000: received 0",
  );
  expect(() => checkSeedPlan({ ...PLAN, descriptionBytes: 1.5 })).toThrow("descriptionBytes");
});

describe("seed against Postgres", () => {
  let url: string;
  let sql: postgres.Sql;
  beforeAll(async () => {
    // A database of its own: the shared one is re-seeded by other files, whose servers may still hold it.
    url = await testDatabaseUrl(PLAN, "seed_test");
  });
  // A connection per test: in a loaded full run, one shared across the tests once stopped reading replies
  // (Postgres idle after answering, the client waiting), and every later test timed out on it.
  beforeEach(() => {
    sql = postgres(url, { max: 1, onnotice: () => {} });
  });
  afterEach(async () => {
    await sql.end({ timeout: 5 });
  });

  test("seed is deterministic: the same flags give the same checksum, and the table hashes to it", async () => {
    const first = await seed(sql, PLAN);
    const second = await seed(sql, PLAN);
    expect(second.checksum).toBe(first.checksum);
    expect(first.checksum).toBe(sha256(copyText(PLAN, 1, PLAN.rows)));
    expect(await tableChecksum(sql)).toEqual({ rows: PLAN.rows, checksum: first.checksum });
    expect(await checkSeed(sql, PLAN, { deep: true })).toEqual({ ok: true, checksum: first.checksum });
  });

  test("seed is idempotent: a re-run leaves exactly the requested rows", async () => {
    await seed(sql, { ...PLAN, rows: 1_500 });
    await seed(sql, PLAN);
    const [{ n }] = (await sql`select count(*)::int as n from products`) as [{ n: number }];
    expect(n).toBe(PLAN.rows);
    expect((await ensureSeeded(sql, PLAN)).seeded).toBe(false);
  });

  test("checkSeed notices another plan, a write through the API's path and a direct edit", async () => {
    await seed(sql, PLAN);
    expect(await checkSeed(sql, { ...PLAN, seed: 1 })).toMatchObject({ ok: false });
    await sql`update products set stock = stock + 1, version = version + 1 where id = 3`;
    expect(await checkSeed(sql, PLAN)).toMatchObject({
      ok: false,
      reason: expect.stringContaining("Σ version"),
    });
    await seed(sql, PLAN);
    await sql`update products set name = 'edited' where id = 4`; // no version bump: only the deep check sees it
    expect((await checkSeed(sql, PLAN)).ok).toBe(true);
    expect(await checkSeed(sql, PLAN, { deep: true })).toMatchObject({ ok: false });
    expect(await ensureSeeded(sql, PLAN)).toMatchObject({ seeded: true });
    expect((await checkSeed(sql, PLAN, { deep: true })).ok).toBe(true);
  });
});

test("bun run seed exits 2 on an unknown flag or a bad value", async () => {
  for (const args of [["--bogus"], ["--rows", "many"], ["--rows", "0"]]) {
    const proc = Bun.spawn(["bun", `${import.meta.dir}/seed.ts`, ...args], {
      stderr: "pipe",
      stdout: "pipe",
    });
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stderr).text()).toContain("see `bun run seed --help`");
  }
});

const GOLDEN_SHA256 = "cc8019b0de7a271a2d401c8e7cc0cbdceaadcc4396378b1c21413a62b2e07474";
