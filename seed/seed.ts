/**
 * Seeds `products` with deterministic rows: row N depends only on (N, seed, descriptionBytes), so it is
 * byte-identical on every machine for the same flags. Loads with COPY in one transaction; records what was
 * seeded (with a SHA-256 of the loaded COPY text) in `cachelab_seed_meta` so the lab can tell whether the
 * database matches a plan without reseeding.
 *
 *   bun run seed [--rows 100000] [--seed 42] [--description-bytes 200] [--force] [--i-own-this-database]
 */
import type { Writable } from "node:stream";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { assertOwnedDatabase, ForeignDatabaseError, HANDOVER_FLAG, handedOverByEnv } from "./ownership.ts";
import { CATEGORY_COUNT, createTablesSql } from "./schema.ts";

export interface SeedPlan {
  rows: number;
  seed: number;
  descriptionBytes: number;
}

export const DEFAULT_SEED_PLAN: SeedPlan = { rows: 100_000, seed: 42, descriptionBytes: 200 };

type Sql = postgres.Sql;

const WORDS = (
  "alpha amber anchor apple arch atlas autumn basil beacon birch blaze bloom bolt breeze brick bronze " +
  "cable canyon cedar chalk cider cloud cobalt comet copper coral cotton crest crystal delta dune ember " +
  "fable falcon fern flint forge frost garnet glacier granite harbor hazel indigo iron ivory jade juniper " +
  "kelp lantern lava linen lotus maple marble meadow mesa mint moss nectar nova oak ocean onyx orbit " +
  "pearl pepper pine plume prism quartz quill raven reef ridge river ruby saffron sage sand slate spark " +
  "spruce stone storm summit thistle tide timber topaz tulip umber velvet violet willow wind zephyr"
).split(" ");
const BASE_EPOCH_MS = Date.UTC(2024, 0, 1);

/** A 32-bit integer finalizer (lowbias32); stateless, so any row can be generated independently. */
function mix32(x: number): number {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  h ^= h >>> 16;
  return h >>> 0;
}

function word(h: number): string {
  return WORDS[h % WORDS.length] as string;
}

/** A seed-dependent ASCII text that descriptions are cut from (no tab, newline or backslash: COPY-safe). */
function makeCorpus(seed: number, minChars: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < minChars; i++) {
    const w = word(mix32(seed ^ Math.imul(i + 1, 0x9e3779b1)));
    parts.push(w);
    length += w.length + 1;
  }
  return parts.join(" ");
}

/** Validates a plan; throws RangeError naming the bad field. */
export function checkSeedPlan(plan: SeedPlan): SeedPlan {
  const limits: [keyof SeedPlan, number, number][] = [
    ["rows", 1, 10_000_000],
    ["seed", 0, 2 ** 31 - 1],
    ["descriptionBytes", 0, 1_000_000],
  ];
  for (const [field, min, max] of limits) {
    const value = plan[field];
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new RangeError(`Cannot seed: ${field} must be an integer in ${min}..${max}: received ${value}`);
    }
  }
  return plan;
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

/**
 * `updated_at` of row `id` (base + id seconds) written exactly as Postgres prints a timestamptz in UTC, so
 * `COPY … TO STDOUT` under TimeZone=UTC gives back the bytes that were loaded.
 */
function timestampText(id: number, days: Map<number, string>): string {
  const day = Math.floor(id / 86_400);
  let date = days.get(day);
  if (date === undefined) {
    date = new Date(BASE_EPOCH_MS + day * 86_400_000).toISOString().slice(0, 10);
    days.set(day, date);
  }
  const second = id % 86_400;
  return `${date} ${pad2(Math.floor(second / 3_600))}:${pad2(Math.floor(second / 60) % 60)}:${pad2(second % 60)}+00`;
}

function rowHash(plan: SeedPlan, id: number): number {
  return mix32(Math.imul(plan.seed, 0x9e3779b1) ^ id);
}

/** The category of seeded row `id` (rows never change category: a PUT cannot set it). */
export function categoryOf(plan: SeedPlan, id: number): number {
  return 1 + (mix32(rowHash(plan, id) + 1) % CATEGORY_COUNT);
}

/** Rows fromId..toId (inclusive) in COPY text format, one line each. */
export function copyText(
  plan: SeedPlan,
  fromId: number,
  toId: number,
  corpus = makeCorpus(plan.seed, corpusChars(plan)),
): string {
  const lines: string[] = [];
  const span = corpus.length - plan.descriptionBytes;
  const days = new Map<number, string>();
  for (let id = fromId; id <= toId; id++) {
    const h = rowHash(plan, id);
    const h2 = mix32(h + 1);
    const name = `${word(h)} ${word(h2 >>> 8)} ${id}`;
    const categoryId = 1 + (h2 % CATEGORY_COUNT);
    const priceCents = 100 + (mix32(h + 2) % 99_901);
    const stock = mix32(h + 3) % 1_001;
    const offset = mix32(h + 4) % span;
    const description = corpus.slice(offset, offset + plan.descriptionBytes);
    lines.push(
      `${id}\t${name}\t${categoryId}\t${priceCents}\t${stock}\t${description}\t1\t${timestampText(id, days)}\n`,
    );
  }
  return lines.join("");
}

function corpusChars(plan: SeedPlan): number {
  return 65_536 + 4 * plan.descriptionBytes;
}

const COPY_COLUMNS = "id, name, category_id, price_cents, stock, description, version, updated_at";

/** SHA-256 of the table as COPY text in id order: equals the seed checksum iff no row changed. */
export async function tableChecksum(sql: Sql): Promise<{ rows: number; checksum: string }> {
  const hasher = new Bun.CryptoHasher("sha256");
  let rows = 0;
  // updated_at printed as seed() wrote it, whatever the session's TimeZone.
  const columns = COPY_COLUMNS.replace(
    "updated_at",
    `to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00'`,
  );
  const stream = await sql.unsafe(`copy (select ${columns} from products order by id) to stdout`).readable();
  // Events, not `for await`: after an async-iterated COPY the next COPY on that connection never starts.
  await new Promise<void>((resolve, reject) => {
    stream.on("data", (chunk: Buffer) => {
      hasher.update(chunk);
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) rows++;
    });
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  return { rows, checksum: hasher.digest("hex") };
}

export type SeedCheck = { ok: true; checksum: string } | { ok: false; reason: string };

/**
 * Does the database hold exactly the rows `plan` seeds? Reads, never writes. The quick check compares the
 * meta row, the row count and Σ version (every write through the API bumps a version); `deep` also
 * re-hashes every row.
 */
export async function checkSeed(
  sql: Sql,
  plan: SeedPlan,
  options: { deep?: boolean } = {},
): Promise<SeedCheck> {
  const [{ exists } = { exists: false }] = await sql<{ exists: boolean }[]>`
    select to_regclass('cachelab_seed_meta') is not null and to_regclass('products') is not null as exists`;
  if (!exists) return { ok: false, reason: "not seeded: tables are missing" };
  const [meta] = await sql<{ rows: number; seed: number; description_bytes: number; checksum: string }[]>`
    select rows, seed, description_bytes, checksum from cachelab_seed_meta where id = 1`;
  if (!meta) return { ok: false, reason: "not seeded: no seed meta row" };
  const seeded = { rows: meta.rows, seed: meta.seed, descriptionBytes: meta.description_bytes };
  if (
    seeded.rows !== plan.rows ||
    seeded.seed !== plan.seed ||
    seeded.descriptionBytes !== plan.descriptionBytes
  ) {
    return { ok: false, reason: `seeded with ${JSON.stringify(seeded)}, plan wants ${JSON.stringify(plan)}` };
  }
  const [counts] = await sql<{ rows: number; versions: string }[]>`
    select count(*)::int as rows, coalesce(sum(version), 0)::text as versions from products`;
  if (counts?.rows !== plan.rows || counts.versions !== String(plan.rows)) {
    return {
      ok: false,
      reason: `rows changed since seeding (${counts?.rows} rows, Σ version ${counts?.versions})`,
    };
  }
  if (options.deep) {
    const now = await tableChecksum(sql);
    if (now.checksum !== meta.checksum) {
      return {
        ok: false,
        reason: `rows changed since seeding (checksum ${now.checksum} ≠ ${meta.checksum})`,
      };
    }
  }
  return { ok: true, checksum: meta.checksum };
}

function writeAll(stream: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.write(chunk, (error) => (error ? reject(error) : resolve()));
  });
}

/** Who may be written to: `handedOver` is the user's word that a database without cachelab's marker may be. */
export interface SeedOptions {
  handedOver?: boolean;
}

/**
 * Replaces the table's contents with the plan's rows in one transaction and records the meta row.
 * Indexes are dropped before COPY and rebuilt after, which is faster than maintaining them row by row.
 * Refuses (ForeignDatabaseError) before any write on a database that is not cachelab's (seed/ownership.ts).
 */
export async function seed(
  sql: Sql,
  plan: SeedPlan,
  options: SeedOptions = {},
): Promise<{ checksum: string; durationMs: number }> {
  checkSeedPlan(plan);
  await assertOwnedDatabase(sql, `seed ${plan.rows} rows`, options);
  const startedMs = performance.now();
  const corpus = makeCorpus(plan.seed, corpusChars(plan));
  const hasher = new Bun.CryptoHasher("sha256");
  await sql.unsafe(createTablesSql).simple();
  const checksum = await sql.begin(async (tx) => {
    await tx
      .unsafe(`truncate products;
      alter table products drop constraint if exists products_pkey;
      drop index if exists products_category_id_id_idx`)
      .simple();
    const stream = await tx.unsafe(`copy products (${COPY_COLUMNS}) from stdin`).writable();
    const done = new Promise<void>((resolve, reject) => {
      stream.on("finish", resolve);
      stream.on("error", reject);
    });
    const chunkRows = 5_000;
    for (let from = 1; from <= plan.rows; from += chunkRows) {
      const chunk = Buffer.from(copyText(plan, from, Math.min(plan.rows, from + chunkRows - 1), corpus));
      hasher.update(chunk);
      await writeAll(stream, chunk);
    }
    stream.end();
    await done;
    const checksum = hasher.digest("hex");
    await tx
      .unsafe(`alter table products add primary key (id);
      create index products_category_id_id_idx on products (category_id, id)`)
      .simple();
    await tx`insert into cachelab_seed_meta (id, rows, seed, description_bytes, checksum, seeded_at)
      values (1, ${plan.rows}, ${plan.seed}, ${plan.descriptionBytes}, ${checksum}, now())
      on conflict (id) do update set rows = excluded.rows, seed = excluded.seed,
        description_bytes = excluded.description_bytes, checksum = excluded.checksum, seeded_at = excluded.seeded_at`;
    return checksum;
  });
  await sql`analyze products`;
  return { checksum, durationMs: performance.now() - startedMs };
}

/** Seeds only when the database does not already match the plan (deep check: every row is re-hashed). */
export async function ensureSeeded(
  sql: Sql,
  plan: SeedPlan,
  options: SeedOptions = {},
): Promise<{ seeded: boolean; checksum: string; reason?: string }> {
  const check = await checkSeed(sql, plan, { deep: true });
  if (check.ok) return { seeded: false, checksum: check.checksum };
  const { checksum } = await seed(sql, plan, options);
  return { seeded: true, checksum, reason: check.reason };
}

function parseIntFlag(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value))
    throw new RangeError(`Cannot parse --${name}: expected a whole number: received ${value}`);
  return Number(value);
}

async function main(): Promise<number> {
  let plan: SeedPlan;
  let force = false;
  let handedOver = false;
  try {
    const { values } = parseArgs({
      options: {
        rows: { type: "string" },
        seed: { type: "string" },
        "description-bytes": { type: "string" },
        force: { type: "boolean", default: false },
        "i-own-this-database": { type: "boolean", default: false },
      },
      strict: true,
      allowPositionals: false,
    });
    force = values.force;
    handedOver = values["i-own-this-database"] || handedOverByEnv();
    plan = checkSeedPlan({
      rows: parseIntFlag("rows", values.rows, DEFAULT_SEED_PLAN.rows),
      seed: parseIntFlag("seed", values.seed, DEFAULT_SEED_PLAN.seed),
      descriptionBytes: parseIntFlag(
        "description-bytes",
        values["description-bytes"],
        DEFAULT_SEED_PLAN.descriptionBytes,
      ),
    });
  } catch (error) {
    console.error(
      `${(error as Error).message}\nusage: bun run seed [--rows 100000] [--seed 42] [--description-bytes 200] [--force] [${HANDOVER_FLAG}]`,
    );
    return 2;
  }
  // A reseed under a running experiment would truncate the table it measures: one run at a time.
  const { acquireRunLock } = await import("../lab/shared/run_lock.ts");
  const lock = acquireRunLock("seed");
  if ("refusal" in lock) {
    console.error(lock.refusal);
    return 2;
  }
  const { servicesUp } = await import("../lab/services/lifecycle.ts");
  const services = await servicesUp({ log: (line) => console.error(line) });
  const sql = postgres(services.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    if (force) {
      const { checksum, durationMs } = await seed(sql, plan, { handedOver });
      console.log(`seeded ${plan.rows} rows in ${durationMs.toFixed(0)} ms (checksum ${checksum})`);
    } else {
      const startedMs = performance.now();
      const result = await ensureSeeded(sql, plan, { handedOver });
      const ms = (performance.now() - startedMs).toFixed(0);
      console.log(
        result.seeded
          ? `seeded ${plan.rows} rows in ${ms} ms (checksum ${result.checksum}; was: ${result.reason})`
          : `already seeded: ${plan.rows} rows, seed ${plan.seed}, checksum ${result.checksum} (checked in ${ms} ms)`,
      );
    }
    return 0;
  } catch (error) {
    if (!(error instanceof ForeignDatabaseError)) throw error;
    console.error(error.message);
    return 2;
  } finally {
    await sql.end();
    lock.release();
  }
}

if (import.meta.main) process.exit(await main());
