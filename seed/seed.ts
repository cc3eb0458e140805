/**
 * Seeds `products` with deterministic rows: row N depends only on (N, seed, descriptionBytes, its payload
 * size), so it is byte-identical on every machine for the same flags, and `reviewsPerProduct` reviews of each
 * (seed/reviews.ts). Loads with COPY in one transaction; records what was seeded (with a SHA-256 of the loaded
 * COPY text, products then reviews) in `cachelab_seed_meta` so the lab can tell whether the database matches
 * a plan without reseeding.
 *
 *   bun run seed [--rows 100000] [--seed 42] [--description-bytes 200] [--reviews-per-product 0]
 *                [--payload-bytes N] [--force] [--i-own-this-database]
 */
import type { Writable } from "node:stream";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { assertOwnedDatabase, ForeignDatabaseError, HANDOVER_FLAG, handedOverByEnv } from "./ownership.ts";
import { describePayload, PAYLOAD_BYTES_MAX } from "./payload.ts";
import {
  checkSeedPlan,
  chunkRows,
  copyText,
  corpusChars,
  DEFAULT_SEED_PLAN,
  type SeedPlan,
} from "./product_rows.ts";
import { REVIEW_COPY_COLUMNS, reviewCorpus, reviewsCopyText } from "./reviews.ts";
import { createTablesSql } from "./schema.ts";
import { makeCorpus } from "./seed_text.ts";

// The plan and its rows live in product_rows.ts; the lab has always imported them from here.
export { categoryOf, checkSeedPlan, copyText, DEFAULT_SEED_PLAN, type SeedPlan } from "./product_rows.ts";

type Sql = postgres.Sql;

const COPY_COLUMNS = "id, name, category_id, price_cents, stock, description, version, updated_at";

/** Streams a COPY … TO STDOUT into `hasher`; returns the lines it held. */
async function hashCopy(sql: Sql, query: string, hasher: Bun.CryptoHasher): Promise<number> {
  let rows = 0;
  const stream = await sql.unsafe(query).readable();
  // Events, not `for await`: after an async-iterated COPY the next COPY on that connection never starts.
  await new Promise<void>((resolve, reject) => {
    stream.on("data", (chunk: Buffer) => {
      hasher.update(chunk);
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) rows++;
    });
    stream.on("end", () => {
      // postgres.js pauses its socket when the COPY outruns this reader and resumes it on the stream's next
      // read, which an ended stream never asks for: on a loaded machine the connection's next query then
      // never got its reply. Ask once more (a resume of a flowing socket does nothing).
      (stream as unknown as { _read(size: number): void })._read(0);
      resolve();
    });
    stream.on("error", reject);
  });
  return rows;
}

/**
 * SHA-256 of the table as COPY text in id order, then (with `reviews`) of the reviews in (product, id) order:
 * equals the seed checksum iff no row changed. `rows` counts the products.
 */
export async function tableChecksum(
  sql: Sql,
  options: { reviews?: boolean } = {},
): Promise<{ rows: number; checksum: string }> {
  const hasher = new Bun.CryptoHasher("sha256");
  // Timestamps printed as seed() wrote them, whatever the session's TimeZone.
  const utc = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00'`;
  const columns = COPY_COLUMNS.replace("updated_at", utc("updated_at"));
  const rows = await hashCopy(sql, `copy (select ${columns} from products order by id) to stdout`, hasher);
  if (options.reviews) {
    const reviewColumns = REVIEW_COPY_COLUMNS.replace("created_at", utc("created_at"));
    await hashCopy(
      sql,
      `copy (select ${reviewColumns} from reviews order by product_id, id) to stdout`,
      hasher,
    );
  }
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
    select to_regclass('cachelab_seed_meta') is not null and to_regclass('products') is not null
      and to_regclass('reviews') is not null as exists`;
  if (!exists) return { ok: false, reason: "not seeded: tables are missing" };
  const [{ current } = { current: false }] = await sql<{ current: boolean }[]>`
    select count(*) = 2 as current from information_schema.columns
    where table_name = 'cachelab_seed_meta' and column_name in ('reviews_per_product', 'payload')
      and table_schema = current_schema()`;
  // A meta row written before reviews and payloads existed: its rows had neither.
  const extra = current
    ? sql`, reviews_per_product, payload`
    : sql`, 0 as reviews_per_product, null as payload`;
  const [meta] = await sql<
    {
      rows: number;
      seed: number;
      description_bytes: number;
      checksum: string;
      reviews_per_product: number;
      payload: string | null;
    }[]
  >`select rows, seed, description_bytes, checksum ${extra} from cachelab_seed_meta where id = 1`;
  if (!meta) return { ok: false, reason: "not seeded: no seed meta row" };
  const seeded = {
    rows: meta.rows,
    seed: meta.seed,
    descriptionBytes: meta.description_bytes,
    reviewsPerProduct: meta.reviews_per_product,
    payload: meta.payload,
  };
  const wanted = {
    rows: plan.rows,
    seed: plan.seed,
    descriptionBytes: plan.descriptionBytes,
    reviewsPerProduct: plan.reviewsPerProduct ?? 0,
    payload: describePayload(plan.payloadBytes),
  };
  if (JSON.stringify(seeded) !== JSON.stringify(wanted)) {
    return {
      ok: false,
      reason: `seeded with ${JSON.stringify(seeded)}, plan wants ${JSON.stringify(wanted)}`,
    };
  }
  const [counts] = await sql<{ rows: number; versions: string }[]>`
    select count(*)::int as rows, coalesce(sum(version), 0)::text as versions from products`;
  if (counts?.rows !== plan.rows || counts.versions !== String(plan.rows)) {
    return {
      ok: false,
      reason: `rows changed since seeding (${counts?.rows} rows, Σ version ${counts?.versions})`,
    };
  }
  const reviewsWanted = plan.rows * wanted.reviewsPerProduct;
  const [reviewCount] = await sql<{ reviews: number }[]>`select count(*)::int as reviews from reviews`;
  if (reviewCount?.reviews !== reviewsWanted) {
    return {
      ok: false,
      reason: `reviews changed since seeding (${reviewCount?.reviews} of ${reviewsWanted})`,
    };
  }
  if (options.deep) {
    const now = await tableChecksum(sql, { reviews: reviewsWanted > 0 });
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

/** COPY … FROM STDIN of the chunks `chunks` yields, each hashed as it is sent. */
async function copyIn(
  tx: postgres.TransactionSql,
  query: string,
  hasher: Bun.CryptoHasher,
  chunks: () => Generator<string>,
): Promise<void> {
  const stream = await tx.unsafe(query).writable();
  const done = new Promise<void>((resolve, reject) => {
    stream.on("finish", resolve);
    stream.on("error", reject);
  });
  for (const text of chunks()) {
    const chunk = Buffer.from(text);
    hasher.update(chunk);
    await writeAll(stream, chunk);
  }
  stream.end();
  await done;
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
  const reviewsPerProduct = plan.reviewsPerProduct ?? 0;
  const hasher = new Bun.CryptoHasher("sha256");
  await sql.unsafe(createTablesSql).simple();
  const checksum = await sql.begin(async (tx) => {
    await tx
      .unsafe(`truncate products, reviews;
      alter table products drop constraint if exists products_pkey;
      drop index if exists products_category_id_id_idx;
      alter table reviews drop constraint if exists reviews_pkey;
      drop index if exists reviews_product_id_created_at_idx`)
      .simple();
    await copyIn(tx, `copy products (${COPY_COLUMNS}) from stdin`, hasher, function* () {
      for (let from = 1, n = chunkRows(plan, 1); from <= plan.rows; from += n, n = chunkRows(plan, from)) {
        yield copyText(plan, from, from + n - 1, corpus);
      }
    });
    if (reviewsPerProduct > 0) {
      const reviewsText = reviewCorpus(plan.seed);
      // About 20 000 reviews a chunk, whole products each.
      const products = Math.max(1, Math.floor(20_000 / reviewsPerProduct));
      await copyIn(tx, `copy reviews (${REVIEW_COPY_COLUMNS}) from stdin`, hasher, function* () {
        for (let from = 1; from <= plan.rows; from += products) {
          const to = Math.min(plan.rows, from + products - 1);
          yield reviewsCopyText({ seed: plan.seed, reviewsPerProduct }, from, to, reviewsText);
        }
      });
    }
    const checksum = hasher.digest("hex");
    await tx
      .unsafe(`alter table products add primary key (id);
      create index products_category_id_id_idx on products (category_id, id);
      alter table reviews add primary key (product_id, id);
      create index reviews_product_id_created_at_idx on reviews (product_id, created_at)`)
      .simple();
    const payload = describePayload(plan.payloadBytes);
    await tx`insert into cachelab_seed_meta (id, rows, seed, description_bytes, reviews_per_product, payload, checksum, seeded_at)
      values (1, ${plan.rows}, ${plan.seed}, ${plan.descriptionBytes}, ${reviewsPerProduct}, ${payload}, ${checksum}, now())
      on conflict (id) do update set rows = excluded.rows, seed = excluded.seed,
        description_bytes = excluded.description_bytes, reviews_per_product = excluded.reviews_per_product,
        payload = excluded.payload, checksum = excluded.checksum, seeded_at = excluded.seeded_at`;
    return checksum;
  });
  await sql`analyze products`;
  if (reviewsPerProduct > 0) await sql`analyze reviews`;
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

const USAGE = `usage: bun run seed [--rows 100000] [--seed 42] [--description-bytes 200] [--reviews-per-product 0]
                    [--payload-bytes N] [--force] [${HANDOVER_FLAG}]

  --rows N                 products, 1..10000000 (default ${DEFAULT_SEED_PLAN.rows})
  --seed N                 the generator's seed (default ${DEFAULT_SEED_PLAN.seed}): the same flags give the same rows
                           on every machine
  --description-bytes N    each description's length (default ${DEFAULT_SEED_PLAN.descriptionBytes})
  --reviews-per-product N  reviews of each product, for the summary route (default 0)
  --payload-bytes N        every product's JSON body exactly N bytes, up to ${PAYLOAD_BYTES_MAX} (the row's other
                           fields are its least)
  --force                  reload even when the database already holds exactly this plan
  ${HANDOVER_FLAG}    let it replace the products of a database without cachelab's marker table
                           (also CACHELAB_I_OWN_THIS_DATABASE=1)
  -h, --help               this text

The database: the one \`bun run services up\` finds or starts, or DATABASE_URL's. docs/seed.md`;

async function main(args: string[]): Promise<number> {
  let plan: SeedPlan;
  let force = false;
  let handedOver = false;
  try {
    const { values } = parseArgs({
      args,
      options: {
        rows: { type: "string" },
        seed: { type: "string" },
        "description-bytes": { type: "string" },
        "reviews-per-product": { type: "string" },
        "payload-bytes": { type: "string" },
        force: { type: "boolean", default: false },
        "i-own-this-database": { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
      allowPositionals: false,
    });
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
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
      reviewsPerProduct: parseIntFlag("reviews-per-product", values["reviews-per-product"], 0),
      ...(values["payload-bytes"] === undefined
        ? {}
        : {
            payloadBytes: {
              kind: "fixed" as const,
              bytes: parseIntFlag("payload-bytes", values["payload-bytes"], 0),
            },
          }),
    });
  } catch (error) {
    console.error(`${(error as Error).message}\nsee \`bun run seed --help\``);
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
  const reviews = plan.reviewsPerProduct ?? 0;
  const what = `${plan.rows} rows${reviews > 0 ? ` and ${plan.rows * reviews} reviews` : ""}${plan.payloadBytes ? ` (payload ${describePayload(plan.payloadBytes)})` : ""}`;
  try {
    if (force) {
      const { checksum, durationMs } = await seed(sql, plan, { handedOver });
      console.log(`seeded ${what} in ${durationMs.toFixed(0)} ms (checksum ${checksum})`);
    } else {
      const startedMs = performance.now();
      const result = await ensureSeeded(sql, plan, { handedOver });
      const ms = (performance.now() - startedMs).toFixed(0);
      console.log(
        result.seeded
          ? `seeded ${what} in ${ms} ms (checksum ${result.checksum}; was: ${result.reason})`
          : `already seeded: ${what}, seed ${plan.seed}, checksum ${result.checksum} (checked in ${ms} ms)`,
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

if (import.meta.main) {
  // On demand, as above: the seed's own modules import nothing of the lab.
  const { exitWith } = await import("../lab/cli/args.ts");
  await exitWith(() => main(process.argv.slice(2)));
}
