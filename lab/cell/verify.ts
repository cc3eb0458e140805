/**
 * TechEmpower-style verification before load: real rows byte-equal to the database, a list page equal to
 * the database query, bad input refused with 400/404.
 */
import type postgres from "postgres";
import { postAdmin } from "./admin.ts";
import type { ServerProcess } from "./server_process.ts";

/**
 * TechEmpower-style checks before load: real rows byte-equal to the database, bad input refused. When the
 * attack's keyspace holds every row, what verification read is forgotten (POST /admin/reset): the attack then
 * starts from the cold cache its simulation starts from.
 */
export async function verifyServer(
  server: ServerProcess,
  sql: postgres.Sql,
  options: { rows: number; avoidKeyspace: number },
): Promise<string | null> {
  // Ids outside the attack's keyspace when there are any, so verification does not warm the attack's keys.
  const low = options.avoidKeyspace < options.rows ? options.avoidKeyspace + 1 : 1;
  const ids = Array.from({ length: 10 }, () => low + Math.floor(Math.random() * (options.rows - low + 1)));
  const expected = await sql<{ id: number; body: string }[]>`
    select id, json_build_object('id', id, 'name', name, 'categoryId', category_id, 'priceCents', price_cents,
      'stock', stock, 'description', description, 'version', version,
      'updatedAt', to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))::text as body
    from products where id = any(${ids}::int[])`;
  const byId = new Map(expected.map((row) => [row.id, JSON.stringify(JSON.parse(row.body))]));
  for (const id of ids) {
    const response = await fetch(`${server.url}/products/${id}`);
    const body = await response.text();
    if (response.status !== 200) return `verification: GET /products/${id} answered ${response.status}`;
    if (body !== byId.get(id))
      return `verification: GET /products/${id} body differs from the database row (version or fields)`;
  }
  const category = 1 + Math.floor(Math.random() * 50);
  const page = await sql<
    { id: number }[]
  >`select id from products where category_id = ${category} order by id limit 5`;
  const list = (await (await fetch(`${server.url}/products?category=${category}&size=5`)).json()) as {
    items?: { id: number }[];
  };
  if (JSON.stringify(list.items?.map((item) => item.id)) !== JSON.stringify(page.map((row) => row.id))) {
    return `verification: list page of category ${category} differs from the database`;
  }
  for (const [path, status] of [
    ["/products/0", 400],
    ["/products/abc", 400],
    [`/products/${options.rows + 1}`, 404],
    ["/products?category=1&size=0", 400],
  ] as const) {
    const response = await fetch(`${server.url}${path}`);
    if (response.status !== status)
      return `verification: GET ${path} answered ${response.status}, expected ${status}`;
  }
  if (low === 1) {
    await postAdmin(server, "/admin/reset", {
      timeoutMs: 10_000,
      what: "reset the server after verification",
    });
  }
  return null;
}
