/** The products table the lab serves, and the meta row that records what was seeded. */
import { index, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

export const products = pgTable(
  "products",
  {
    id: integer("id").primaryKey(),
    name: text("name").notNull(),
    categoryId: integer("category_id").notNull(),
    priceCents: integer("price_cents").notNull(),
    stock: integer("stock").notNull(),
    description: text("description").notNull(),
    version: integer("version").notNull().default(1),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("products_category_id_id_idx").on(t.categoryId, t.id)],
);

export const seedMeta = pgTable("cachelab_seed_meta", {
  id: integer("id").primaryKey(),
  rows: integer("rows").notNull(),
  seed: integer("seed").notNull(),
  descriptionBytes: integer("description_bytes").notNull(),
  checksum: text("checksum").notNull(),
  seededAt: timestamp("seeded_at", { withTimezone: true }).notNull(),
});

export type Product = typeof products.$inferSelect;

/** DDL kept beside the drizzle definition above; the seeder runs it, so no migration tool is needed. */
export const createTablesSql = `
create table if not exists products (
  id integer primary key,
  name text not null,
  category_id integer not null,
  price_cents integer not null,
  stock integer not null,
  description text not null,
  version integer not null default 1,
  updated_at timestamptz not null
);
create index if not exists products_category_id_id_idx on products (category_id, id);
create table if not exists cachelab_seed_meta (
  id integer primary key,
  rows integer not null,
  seed integer not null,
  description_bytes integer not null,
  checksum text not null,
  seeded_at timestamptz not null
);`;

export const CATEGORY_COUNT = 50;
