/** A bench's check before it measures a server: a 200 with the wrong bytes would count as an answer. */
export async function verify(name: string, origin: string, body: string): Promise<void> {
  const response = await fetch(`${origin}/products/1`);
  const text = await response.text();
  if (response.status !== 200 || text !== body) {
    throw new Error(
      `Cannot measure ${name}: GET /products/1 answered ${response.status} ${JSON.stringify(text.slice(0, 60))}, ` +
        `expected 200 ${JSON.stringify(body.slice(0, 60))}`,
    );
  }
}
