import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { testServices } from "../lab/shared/testing.ts";
import { assertOwnedDatabase, databaseOwnership, ForeignDatabaseError } from "./ownership.ts";
import { seed } from "./seed.ts";

const PLAN = { rows: 200, seed: 42, descriptionBytes: 50 };
const REPO = `${import.meta.dir}/..`;

/** A database of the test's own on the lab's server, made to look like a developer's (or left empty). */
async function scratchDatabase(
  name: string,
): Promise<{ url: string; sql: postgres.Sql; drop(): Promise<void> }> {
  const { databaseUrl } = await testServices();
  const admin = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end();
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end();
    },
  };
}

/** A user's own products (the lab's column names, their rows) and another table beside it. */
async function userTables(sql: postgres.Sql): Promise<void> {
  await sql.unsafe(`create table products (id integer primary key, name text not null, category_id integer not null,
    price_cents integer not null, stock integer not null, description text not null, version integer not null default 1,
    updated_at timestamptz not null);
    insert into products select i, 'my product ' || i, 1, 100 * i, i, 'mine', 1, now() from generate_series(1, 50) i;
    create table orders (id serial primary key, product_id integer);
    insert into orders (product_id) values (1), (2);`);
}

/** Every byte of the user's tables, so "unchanged" means unchanged. */
async function fingerprint(sql: postgres.Sql): Promise<string> {
  const [row] = await sql<{ products: string; orders: string; tables: string }[]>`
    select (select md5(string_agg(p::text, '|' order by id)) from products p) as products,
      (select md5(string_agg(o::text, '|' order by id)) from orders o) as orders,
      (select string_agg(tablename, ',' order by tablename) from pg_tables where schemaname = 'public') as tables`;
  return JSON.stringify(row);
}

async function runCli(argv: string[], env: Record<string, string>) {
  const proc = Bun.spawn(argv, {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, output: `${stdout}${stderr}` };
}

describe("a database cachelab did not create", () => {
  let user: Awaited<ReturnType<typeof scratchDatabase>>;
  let before: string;
  beforeAll(async () => {
    user = await scratchDatabase("cachelab_users_own_test");
    await userTables(user.sql);
    before = await fingerprint(user.sql);
  });
  afterAll(async () => {
    // Whatever every command below tried, the user's rows are byte for byte what they were.
    expect(await fingerprint(user.sql)).toBe(before);
    await user.drop();
  });

  test("databaseOwnership names the user's products table and its rows", async () => {
    const ownership = await databaseOwnership(user.sql);
    expect(ownership.owned).toBe(false);
    if (ownership.owned) return;
    expect(ownership.reason).toMatch(
      /^database cachelab_users_own_test at 127\.0\.0\.1:\d+ has a table products with 50 rows and 2 other relations that cachelab did not create/,
    );
  });

  test("seed() refuses before any write and the rows are unchanged", async () => {
    await expect(seed(user.sql, PLAN)).rejects.toThrow(ForeignDatabaseError);
    await expect(seed(user.sql, PLAN)).rejects.toThrow("--i-own-this-database");
    expect(await fingerprint(user.sql)).toBe(before);
  });

  test("bun run seed, bun run bench:seed and bun run experiment exit 2 naming what they found", async () => {
    const env = { DATABASE_URL: user.url };
    const commands = [
      ["bun", "seed/seed.ts", "--rows", "200"],
      ["bun", "bench/seed.ts", "--rows", "200", "--repeats", "1"],
      [
        "bun",
        "lab/cli/experiment.ts",
        "quickstart",
        "--strategies",
        "none",
        "--out",
        "/tmp/cachelab-foreign.csv",
      ],
    ];
    for (const argv of commands) {
      const { code, output } = await runCli(argv, env);
      expect({ argv, code }).toEqual({ argv, code: 2 });
      expect(output).toContain("has a table products with 50 rows");
      expect(output).toContain("CACHELAB_I_OWN_THIS_DATABASE=1");
      expect(await fingerprint(user.sql)).toBe(before);
    }
  }, 120_000);
});

describe("databases cachelab may write to", () => {
  test("an empty database is the lab's to fill, and once seeded it carries the marker", async () => {
    const empty = await scratchDatabase("cachelab_empty_own_test");
    try {
      expect(await databaseOwnership(empty.sql)).toEqual({ owned: true, why: "empty" });
      await seed(empty.sql, PLAN);
      expect(await databaseOwnership(empty.sql)).toEqual({ owned: true, why: "marked" });
    } finally {
      await empty.drop();
    }
  });

  test("a table other than products is somebody's too", async () => {
    const other = await scratchDatabase("cachelab_other_own_test");
    try {
      await other.sql`create table invoices (id integer)`;
      await expect(assertOwnedDatabase(other.sql, "seed")).rejects.toThrow(
        /has 1 relation \(invoices\) that cachelab did not create/,
      );
    } finally {
      await other.drop();
    }
  });

  test("a user's reviews table is somebody's, named first as a lab table; handed over, the seed replaces its rows", async () => {
    const other = await scratchDatabase("cachelab_reviews_own_test");
    try {
      await other.sql.unsafe(`create table invoices (id integer);
        create table reviews (product_id integer not null, id integer not null, rating integer not null,
          body text not null, created_at timestamptz not null, primary key (product_id, id));
        insert into reviews values (1, 1, 5, 'mine', now())`);
      await expect(assertOwnedDatabase(other.sql, "seed")).rejects.toThrow(
        /has 2 relations \(reviews, invoices\) that cachelab did not create.*the rows of its products and reviews tables may be replaced/,
      );
      await seed(other.sql, { ...PLAN, reviewsPerProduct: 2 }, { handedOver: true });
      const [{ n }] = (await other.sql`select count(*)::int as n from reviews where body = 'mine'`) as [
        { n: number },
      ];
      expect(n).toBe(0);
    } finally {
      await other.drop();
    }
  });

  test("handed over (--i-own-this-database), the user's products are replaced by the seed", async () => {
    const handed = await scratchDatabase("cachelab_handed_own_test");
    try {
      await userTables(handed.sql);
      const { code, output } = await runCli(
        ["bun", "seed/seed.ts", "--rows", "200", "--i-own-this-database"],
        {
          DATABASE_URL: handed.url,
        },
      );
      expect({ code, output }).toMatchObject({ code: 0 });
      const [{ n }] = (await handed.sql`select count(*)::int as n from products`) as [{ n: number }];
      expect(n).toBe(200);
      expect(await databaseOwnership(handed.sql)).toEqual({ owned: true, why: "marked" });
    } finally {
      await handed.drop();
    }
  }, 60_000);
});
