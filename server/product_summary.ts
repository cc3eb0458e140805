/**
 * GET /products/:id/summary's query: the product with its review count, average rating, rating histogram
 * (ratings 1..5) and latest 5 reviews, as the API's JSON text, in ONE statement (a join, aggregates and a
 * correlated top-5), so a miss costs what the data makes it cost: about R rows read for R reviews a product.
 */
import { sql as drizzleSql, eq } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { products, reviews } from "../seed/schema.ts";

/** How many of the latest reviews a summary carries. */
export const SUMMARY_LATEST_REVIEWS = 5;

// An aggregate whose arguments are only the outer query's columns belongs to the outer (grouped) query, so
// row_to_json of the inner select prints the product's columns and its review aggregates compactly, in this order.
const summaryJson = drizzleSql<string>`(select row_to_json(s)::text from (select ${products.id} as "id",
  ${products.name} as "name", ${products.categoryId} as "categoryId", ${products.priceCents} as "priceCents",
  ${products.stock} as "stock", ${products.description} as "description", ${products.version} as "version",
  to_char(${products.updatedAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "updatedAt",
  count(${reviews.id})::int as "reviewCount",
  round(avg(${reviews.rating}), 2)::float8 as "averageRating",
  array[count(*) filter (where ${reviews.rating} = 1), count(*) filter (where ${reviews.rating} = 2),
    count(*) filter (where ${reviews.rating} = 3), count(*) filter (where ${reviews.rating} = 4),
    count(*) filter (where ${reviews.rating} = 5)]::int[] as "ratingHistogram",
  (select coalesce('[' || string_agg(row_to_json(l)::text, ',' order by l."createdAt" desc, l."id" desc) || ']',
    '[]')::json from (select latest.id as "id", latest.rating as "rating", latest.body as "body",
    to_char(latest.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "createdAt"
    from reviews latest where latest.product_id = ${products.id}
    order by latest.created_at desc, latest.id desc limit ${drizzleSql.raw(String(SUMMARY_LATEST_REVIEWS))}) l)
    as "latestReviews") s)`;

/** The summary of one product (`{ id }`), a named prepared statement like the detail's; no row: unknown id. */
export function prepareSummary(db: PgDatabase<PgQueryResultHKT>) {
  return db
    .select({ body: summaryJson })
    .from(products)
    .leftJoin(reviews, eq(reviews.productId, products.id))
    .where(eq(products.id, drizzleSql.placeholder("id")))
    .groupBy(products.id)
    .prepare("cachelab_product_summary");
}
