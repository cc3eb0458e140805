import { afterAll, expect, test } from "bun:test";
import { verify } from "./_verify.ts";

const BODY = '{"id":1,"name":"a"}';
const servers: ReturnType<typeof Bun.serve>[] = [];
afterAll(() => {
  for (const server of servers) server.stop(true);
});

/** A server answering every request with `body` and `status`. */
function serving(body: string, status = 200): string {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(body, { status }) });
  servers.push(server);
  return `http://127.0.0.1:${server.port}`;
}

test("a server answering the product's bytes is measured", async () => {
  await verify("ok", serving(BODY), BODY);
});

test("a 200 with an empty body, other bytes or another status is refused, saying what it answered", async () => {
  await expect(verify("empty", serving(""), BODY)).rejects.toThrow(
    'Cannot measure empty: GET /products/1 answered 200 "", expected 200',
  );
  await expect(verify("other", serving('{"id":2}'), BODY)).rejects.toThrow('answered 200 "{\\"id\\":2}"');
  await expect(verify("missing", serving(BODY, 404), BODY)).rejects.toThrow("answered 404");
});
