/**
 * Bun's CPU profile (`--cpu-prof`: the JavaScript thread's samples) grouped by what a sampled frame does, for
 * bench/profile.ts: building a `Response`, Elysia, the lab's handler (server.ts, server/), the strategy
 * (strategies/, quick-lru), the driver or client (postgres.js, drizzle, ioredis, node-redis, `node:net`'s
 * writes), and native frames without a JavaScript name (Bun's HTTP server, the engine).
 */

/** The JavaScript thread's samples, grouped: what the order of the table's columns is. */
export const JS_GROUPS = ["Response", "Elysia", "handler", "strategy", "driver", "native"] as const;
export type JsGroup = (typeof JS_GROUPS)[number];

/** The group of a profile's frame, by its function's name and where it lives. */
export function jsGroup(functionName: string, url: string): JsGroup {
  if (url === "" || url === "[native code]") {
    if (functionName === "Response") return "Response";
    if (/^(writeBuffered|write|writev|end)$/.test(functionName)) return "driver";
    return "native";
  }
  if (url.includes("/node_modules/elysia/")) return "Elysia";
  if (/\/node_modules\/(quick-lru)\//.test(url) || url.includes("/strategies/")) return "strategy";
  if (/\/node_modules\/(postgres|drizzle-orm|ioredis|redis|@redis|denque|cluster-key-slot)\//.test(url))
    return "driver";
  if (url.startsWith("node:") || url.startsWith("internal:")) return "driver";
  return "handler";
}

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  samples: number[];
}

/** Shares of the profile's samples by group (the idle root left out). */
export function jsShares(profile: CpuProfile): Record<JsGroup, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const counts = Object.fromEntries(JS_GROUPS.map((group) => [group, 0])) as Record<JsGroup, number>;
  let all = 0;
  for (const id of profile.samples) {
    const frame = byId.get(id);
    if (frame === undefined || (frame.functionName === "" && frame.url === "")) continue; // idle: no JS ran
    counts[jsGroup(frame.functionName, frame.url)]++;
    all++;
  }
  for (const group of JS_GROUPS) counts[group] = all > 0 ? counts[group] / all : Number.NaN;
  return counts;
}
