/**
 * Which database, seed and Redis a server reads: the queries and the parsers of their replies, shared by the
 * server's GET /info and the lab, which compares a server it did not start with its own services.
 */

/** Which database this is; pg_control_system needs superuser or pg_monitor, so it may be null. */
export const IDENTITY_QUERY = `select current_database() as name, case when pg_has_role('pg_monitor', 'usage')
  then (select system_identifier::text from pg_control_system()) end as system_identifier`;

export function identityOf(rows: unknown): { systemIdentifier: string | null; name: string } {
  const [row] = rows as { name: string; system_identifier: string | null }[];
  if (!row) throw new Error("the identity query returned no row");
  return { systemIdentifier: row.system_identifier, name: row.name };
}

/** The rows the lab seeded (cachelab_seed_meta): a simulation needs their categories. */
export interface SeedMeta {
  rows: number;
  seed: number;
  descriptionBytes: number;
}

export const SEED_QUERY = `select rows, seed, description_bytes from cachelab_seed_meta where id = 1`;

export function seedOf(rows: unknown): SeedMeta | null {
  const [row] = rows as { rows: number; seed: number; description_bytes: number }[];
  return row ? { rows: row.rows, seed: row.seed, descriptionBytes: row.description_bytes } : null;
}

/** The run_id in an `INFO server` reply: which Redis process this is. */
export function runIdOf(info: unknown): string {
  const match = /^run_id:(\w+)/m.exec(String(info));
  if (!match) throw new Error("INFO server has no run_id");
  return match[1] as string;
}
