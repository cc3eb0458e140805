/** The products table the lab serves, their reviews, and the meta row that records what was seeded. */
import { index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

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

/** Reviews of each product (review ids 1..reviewsPerProduct per product); the summary route aggregates them. */
export const reviews = pgTable(
  "reviews",
  {
    productId: integer("product_id").notNull(),
    id: integer("id").notNull(),
    rating: integer("rating").notNull(),
    body: text("body").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.productId, t.id] }),
    index("reviews_product_id_created_at_idx").on(t.productId, t.createdAt),
  ],
);

export const seedMeta = pgTable("cachelab_seed_meta", {
  id: integer("id").primaryKey(),
  rows: integer("rows").notNull(),
  seed: integer("seed").notNull(),
  descriptionBytes: integer("description_bytes").notNull(),
  reviewsPerProduct: integer("reviews_per_product").notNull().default(0),
  /** The payload size profile (seed/payload.ts describePayload), null: every description descriptionBytes long. */
  payload: text("payload"),
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
);
alter table cachelab_seed_meta add column if not exists reviews_per_product integer not null default 0;
alter table cachelab_seed_meta add column if not exists payload text;
create table if not exists reviews (
  product_id integer not null,
  id integer not null,
  rating integer not null,
  body text not null,
  created_at timestamptz not null,
  primary key (product_id, id)
);
create index if not exists reviews_product_id_created_at_idx on reviews (product_id, created_at);`;

export const CATEGORY_COUNT = 50;
