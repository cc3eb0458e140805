import { expect, test } from "bun:test";
import { createServer } from "node:net";
import { ephemeralRange, freePort } from "./ports.ts";

test("freePort picks ports outside the kernel's ephemeral range, where no outgoing connection takes them", async () => {
  const [low, high] = ephemeralRange();
  expect(low).toBeLessThan(high);
  for (let i = 0; i < 20; i++) {
    const port = await freePort();
    expect(port >= low && port <= high).toBe(false);
  }
});

test("freePort honours a free preferred port and passes over a taken one", async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen({ host: "127.0.0.1", port: 0 }, resolve));
  const port = (taken.address() as { port: number }).port;
  try {
    expect(await freePort(port)).not.toBe(port);
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
  expect(await freePort(port)).toBe(port);
});
