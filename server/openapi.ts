/**
 * The server's OpenAPI document (GET /openapi/json, built by @elysiajs/openapi): every route's parameters, body and
 * responses, the 4xx and 503 shapes included, as JSON Schema. They are handed to the plugin as
 * `references`, not to Elysia as route validators: the handlers validate themselves (cheaper on the hit
 * path, and with messages that name the field), so the document describes and costs nothing per request.
 * schemathesis fuzzes the server against it (server/openapi_test.ts).
 */
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { ADMIN_TOKEN_HEADER, MAX_INT4, PROBE_PREFIX } from "../server_config.ts";
import { CATEGORY_MAX, MAX_REQUEST_BODY_BYTES, NAME_MAX_CHARS, PAGE_MAX } from "./limits.ts";

// Plain JSON Schema: Elysia's `t.Integer` also admits numeric strings, which is not what the server answers.
const integer = (minimum?: number, maximum?: number) => ({
  type: "integer",
  ...(minimum === undefined ? {} : { minimum }),
  ...(maximum === undefined ? {} : { maximum }),
});
const string = { type: "string" };

function object(
  properties: Record<string, object>,
  options: { optional?: string[]; [key: string]: unknown } = {},
) {
  const { optional = [], ...rest } = options;
  return {
    type: "object",
    properties,
    required: Object.keys(properties).filter((name) => !optional.includes(name)),
    additionalProperties: false,
    ...rest,
  };
}

const Product = object({
  id: integer(1, MAX_INT4),
  name: string,
  categoryId: integer(),
  priceCents: integer(),
  stock: integer(),
  description: string,
  version: integer(1),
  updatedAt: { type: "string", format: "date-time" },
});

const Review = object({
  id: integer(1),
  rating: integer(1, 5),
  body: string,
  createdAt: { type: "string", format: "date-time" },
});

/** GET /products/:id/summary: the product's fields, then its reviews' aggregates and latest 5 (newest first). */
const ProductSummary = object({
  ...Product.properties,
  reviewCount: integer(0),
  averageRating: {
    anyOf: [{ type: "number", minimum: 1, maximum: 5 }, { type: "null" }],
    description: "Rounded to 2 places; null without reviews",
  },
  ratingHistogram: {
    type: "array",
    items: integer(0),
    minItems: 5,
    maxItems: 5,
    description: "Reviews with 1, 2, 3, 4 and 5 stars",
  },
  latestReviews: { type: "array", items: Review, maxItems: 5 },
});

const Problem = object({
  error: {
    type: "string",
    description: "What is wrong, e.g. `name must be at most 200 characters: received 201`",
  },
});

/** 503: the database gate shed the request, or Postgres cancelled its statement; see Retry-After. */
const Unavailable = object({ error: string, retryAfterS: integer(1) });

const ProductList = object({
  category: integer(),
  page: integer(),
  size: integer(),
  items: { type: "array", items: Product },
});

const ProductUpdate = object(
  {
    priceCents: integer(0, MAX_INT4),
    stock: integer(0, MAX_INT4),
    // No control characters (NUL among them), not blank.
    name: {
      type: "string",
      minLength: 1,
      maxLength: NAME_MAX_CHARS,
      pattern: "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",
    },
  },
  {
    optional: ["priceCents", "stock", "name"],
    minProperties: 1,
    description: `At least one field; the body at most ${MAX_REQUEST_BODY_BYTES} bytes (413 past that)`,
  },
);

const ProductId = object({ id: integer(1, MAX_INT4) });

const AdminHeaders = object({
  [ADMIN_TOKEN_HEADER]: {
    type: "string",
    description: "The server's CACHELAB_ADMIN_TOKEN (any value on a loopback server without one)",
  },
});

/** Any JSON object: the counters and identity documents grow fields the lab reads by name. */
const Document = { type: "object", additionalProperties: true };

const Readiness = object({ database: { type: "boolean" }, cache: { type: "boolean" } });

const Refused = { 401: Problem, 403: Problem };

/** Bun's own answer to a body past MAX_REQUEST_BODY_BYTES, sent before any handler runs. */
const TooLarge = { type: "string", description: `The body exceeds ${MAX_REQUEST_BODY_BYTES} bytes` };

const ROUTES = {
  "/health": { get: { response: { 200: object({ status: { type: "string", const: "ok" } }) } } },
  "/ready": { get: { response: { 200: Readiness, 503: Readiness } } },
  "/stats": { get: { response: { 200: Document } } },
  "/info": { get: { response: { 200: Document } } },
  "/admin/reset": {
    post: {
      headers: AdminHeaders,
      response: { 200: object({ redisKeysRemoved: integer(0) }), ...Refused },
    },
  },
  "/stats/window": { post: { headers: AdminHeaders, response: { 200: Document, ...Refused } } },
  "/products/:id": {
    get: { params: ProductId, response: { 200: Product, 400: Problem, 404: Problem, 503: Unavailable } },
    put: {
      params: ProductId,
      body: ProductUpdate,
      response: { 200: Product, 400: Problem, 404: Problem, 413: TooLarge, 503: Unavailable },
    },
  },
  "/products/:id/summary": {
    get: {
      params: ProductId,
      response: { 200: ProductSummary, 400: Problem, 404: Problem, 503: Unavailable },
    },
  },
  "/products": {
    get: {
      query: object(
        {
          category: integer(1, CATEGORY_MAX),
          page: { ...integer(0, PAGE_MAX), default: 0 },
          size: { ...integer(1, 100), default: 20 },
        },
        { optional: ["page", "size"] },
      ),
      response: { 200: ProductList, 400: Problem, 503: Unavailable },
    },
  },
};

/** Where the document is served. */
export const OPENAPI_PATH = "/openapi/json";

/**
 * Registers GET /openapi/json on an app (an Elysia functional plugin): the document is built on the first
 * request, from the app's routes as they are by then, when every route is registered.
 */
export function openapiRoute(app: Elysia) {
  let text: Promise<string> | undefined;
  return app.get(OPENAPI_PATH, async () => {
    text ??= openapiJson(app.routes);
    return new Response(await text, { headers: { "content-type": "application/json" } });
  });
}

/**
 * The document for an app's routes, built once by a throwaway app holding the same paths and the plugin:
 * the plugin writes `references` into the hooks of the routes it documents, which must never reach the
 * served app's routes (a params schema there would turn on Elysia's validation of every request).
 */
export async function openapiJson(routes: readonly { method: string; path: string }[]): Promise<string> {
  const documented = new Elysia().use(
    openapi({
      provider: null,
      specPath: OPENAPI_PATH,
      documentation: {
        info: {
          title: "cachelab server",
          version: "1",
          description: "Products from PostgreSQL behind one cache strategy, and the lab's counters.",
        },
      },
      // biome-ignore lint/suspicious/noExplicitAny: the plugin's reference type wants every field of every route
      references: ROUTES as any,
    }),
  );
  // The probe routes repeat the product routes for the lab's own checks (server_config.ts PROBE_PREFIX).
  for (const { method, path } of routes) {
    if (path !== OPENAPI_PATH && !path.startsWith(`${PROBE_PREFIX}/`))
      documented.route(method, path, () => "");
  }
  return (await documented.handle(new Request(`http://localhost${OPENAPI_PATH}`))).text();
}
