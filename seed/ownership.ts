/**
 * Whose database is this? The lab writes (creates tables, truncates, reseeds, PUTs) only to a database it can
 * prove is its own: one holding cachelab's marker table `cachelab_seed_meta`, or one with no tables at all.
 * Anything else is somebody's data, refused before the first write unless the user hands it over
 * (`--i-own-this-database` or CACHELAB_I_OWN_THIS_DATABASE=1), the way Rails' destructive tasks stop on a
 * production database unless told otherwise.
 */
import type postgres from "postgres";

export const HANDOVER_FLAG = "--i-own-this-database";
export const HANDOVER_ENV = "CACHELAB_I_OWN_THIS_DATABASE";
/** The tables the seeder truncates and reloads: in a handed-over database, a user's tables of these names too. */
export const LAB_TABLES = ["products", "reviews"] as const;

export type Ownership =
  | { owned: true; why: "marked" | "empty" | "handed over" }
  | { owned: false; reason: string };

/** Thrown by every writer the lab has when the database is not its own; the CLIs exit 2 on it. */
export class ForeignDatabaseError extends Error {
  override name = "ForeignDatabaseError";
}

/** Whether the environment hands the database over (`CACHELAB_I_OWN_THIS_DATABASE=1` or `true`). */
export function handedOverByEnv(env: Record<string, string | undefined> = process.env): boolean {
  const value = env[HANDOVER_ENV];
  return value === "1" || value === "true";
}

/** Reads (never writes) whether the lab may write to the database `sql` connects to. */
export async function databaseOwnership(
  sql: postgres.Sql,
  options: { handedOver?: boolean } = {},
): Promise<Ownership> {
  if (options.handedOver) return { owned: true, why: "handed over" };
  const [marker] = await sql<{ marked: boolean }[]>`
    select to_regclass('public.cachelab_seed_meta') is not null as marked`;
  if (marker?.marked) return { owned: true, why: "marked" };
  // Every table, view or sequence outside the system schemas is somebody's.
  const relations = await sql<{ schema: string; name: string; kind: string }[]>`
    select n.nspname as schema, c.relname as name, c.relkind::text as kind
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')
      and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'
      and n.nspname not like 'pg_temp%'
      and not exists (select 1 from pg_depend d where d.objid = c.oid and d.deptype = 'e')
    order by (c.relname = 'products') desc, (c.relname = any(${LAB_TABLES as unknown as string[]})) desc,
      n.nspname, c.relname`;
  if (relations.length === 0) return { owned: true, why: "empty" };
  const [where] = await sql<{ database: string; host: string | null; port: number | null }[]>`
    select current_database() as database, host(inet_server_addr()) as host, inet_server_port() as port`;
  const place = `database ${where?.database} at ${where?.host ?? "its unix socket"}${where?.port ? `:${where.port}` : ""}`;
  const first = relations[0] as { schema: string; name: string; kind: string };
  let found: string;
  if (first.name === "products" && first.kind === "r") {
    const [count] = await sql.unsafe<{ rows: string }[]>(
      `select count(*)::text as rows from "${first.schema.replaceAll('"', '""')}".products`,
    );
    found = `a table products with ${Number(count?.rows).toLocaleString("en-US").replaceAll(",", " ")} rows`;
  } else {
    const names = relations.slice(0, 3).map((relation) => relation.name);
    found = `${relations.length} relation${relations.length === 1 ? "" : "s"} (${names.join(", ")}${relations.length > 3 ? ", …" : ""})`;
  }
  const others =
    relations.length > 1 && first.name === "products" ? ` and ${relations.length - 1} other relations` : "";
  return {
    owned: false,
    reason: `${place} has ${found}${others} that cachelab did not create (no cachelab_seed_meta)`,
  };
}

/** Throws ForeignDatabaseError, naming what it found and how to hand the database over, unless it is the lab's. */
export async function assertOwnedDatabase(
  sql: postgres.Sql,
  action: string,
  options: { handedOver?: boolean } = {},
): Promise<Ownership & { owned: true }> {
  const ownership = await databaseOwnership(sql, options);
  if (ownership.owned) return ownership;
  throw new ForeignDatabaseError(
    `Cannot ${action}: ${ownership.reason}; point DATABASE_URL at a database of cachelab's own (unset it and \`bun run services up\` starts one), or, if the rows of its ${LAB_TABLES.join(" and ")} tables may be replaced, hand it over with ${HANDOVER_FLAG} or ${HANDOVER_ENV}=1`,
  );
}
