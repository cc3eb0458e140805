import { createServer } from "./server.ts";
import { readConfig } from "./server_config.ts";
import { createMeter } from "./server/meter.ts";
import { cacheKey } from "./server/cache_keys.ts";
import { parseId } from "./server/limits.ts";
let captured: any;
const s = createServer(readConfig({ ...process.env, CACHE_STRATEGY: "local" }), { wrapCache: (c) => (captured = c) });
const headers = new Headers({ "content-type": "application/json" });
const OK = { headers };
const bodies: string[] = [];
let constant = "";
const app = s.app as any;
app.get("/bare/:id", () => new Response(constant, OK));
app.get("/perid/:id", ({ params }: any) => new Response(bodies[Number(params.id)]!, OK));
app.get("/perid2/:id", function (this: any, c: any) { return new Response(bodies[Number(c.params.id)]!, OK); }.bind(null));
const config = readConfig({ ...process.env, CACHE_STRATEGY: "local" });
const meter = createMeter({ config, cache: () => captured, redis: null, gate: null });
const loader = async () => "X";
app.get("/vparse/:id", ({ params }: any) => {
  const id = parseId(params.id, 1, 2147483647)!;
  const b = captured.getOrLoad(cacheKey("product", id), () => loader());
  return typeof b === "string" ? new Response(b, OK) : b.then((x: string) => new Response(x, OK));
});
app.get("/vkey/:id", ({ params }: any) => {
  const id = parseId(params.id, 1, 2147483647)!;
  const k = cacheKey("product", id);
  return new Response(bodies[id]!, OK);
});
app.get("/vlru/:id", ({ params }: any) => {
  const id = parseId(params.id, 1, 2147483647)!;
  const b = captured.getOrLoad(cacheKey("product", id), loader);
  return typeof b === "string" ? new Response(b, OK) : b.then((x: string) => new Response(x, OK));
});
import QuickLRU from "quick-lru";
const map = new Map<string, any>(); const q1 = new QuickLRU<string, any>({ maxSize: 100000 }); const q2 = new QuickLRU<string, any>({ maxSize: 100000, maxAge: 3600000 });
const fillQ = () => { for (let id = 1; id <= 1000; id++) { const e = { value: bodies[id], deltaMs: 1, expiryMs: Date.now() + 3600000 }; map.set(cacheKey("product", id), e); q1.set(cacheKey("product", id), e); q2.set(cacheKey("product", id), e); } };
(globalThis as any).fillQ = fillQ;
for (const [name, get] of [["vmap", (k: string) => map.get(k)], ["vq1", (k: string) => q1.get(k)], ["vq2", (k: string) => q2.get(k)]] as const) {
  app.get(`/${name}/:id`, ({ params }: any) => {
    const id = parseId(params.id, 1, 2147483647)!;
    const e = get(cacheKey("product", id));
    return new Response(e.value, OK);
  });
}
function getP(kind: string, { params }: any, lookups?: any) {
  if (meter.admit(false)) return meter.overloaded();
  const id = parseId(params.id, 1, 2147483647)!;
  meter.countRead(false, id);
  const b = meter.lookup(captured, lookups, cacheKey("product", id), () => loader());
  return typeof b === "string" ? new Response(b, OK) : b.then((x: string) => new Response(x, OK));
}
app.get("/vmeter/:id", (c: any) => getP("product", c, { loaded: false, left: false }));
app.get("/vmeterb/:id", getP.bind(null, "product"));
app.get("/vtimed/:id", meter.timed("/vtimed/:id", getP.bind(null, "product")));
const counts: Record<string, number> = { l1_hit: 0, l2_hit: 0, miss: 0, join: 0, write: 0, shed: 0, error: 0, invalid: 0 };
function outcomeOf(response: Response, lookups: any): string {
  const { status } = response;
  if (status === 503) return "shed";
  if (status >= 500) return "error";
  if (status >= 400 && status !== 404) return "invalid";
  if (lookups.loaded) return "miss";
  return lookups.joined ? "join" : lookups.left ? "l2_hit" : "l1_hit";
}
function outcomeNoStatus(response: Response, lookups: any): string {
  if (lookups.loaded) return "miss";
  return lookups.joined ? "join" : lookups.left ? "l2_hit" : "l1_hit";
}
function t0(c: any) { const lookups = { loaded: false, left: false }; return getP("product", c, lookups); }
function t1(c: any) { const lookups = { loaded: false, left: false }; const a = getP("product", c, lookups); if (!(a instanceof Promise)) { counts[outcomeOf(a, lookups)]++; return a; } return a; }
function t2(c: any) { const lookups = { loaded: false, left: false }; const a = getP("product", c, lookups); if (!(a instanceof Promise)) { counts[outcomeNoStatus(a, lookups)]++; return a; } return a; }
function t3(c: any) { const a = getP("product", c, undefined); if (!(a instanceof Promise)) { counts[outcomeOf(a, {loaded:false})]++; return a; } return a; }
app.get("/t0/:id", t0.bind(null)); app.get("/t1/:id", t1.bind(null)); app.get("/t2/:id", t2.bind(null)); app.get("/t3/:id", t3.bind(null));
app.listen({ port: 38111, hostname: "127.0.0.1" });
for (let id = 1; id <= 1000; id++) await (await fetch(`http://127.0.0.1:38111/products/${id}`)).text();
for (let id = 1; id <= 1000; id++) bodies[id] = captured.getOrLoad(`product:${id}`, async () => "X");
constant = bodies[1]!; (globalThis as any).fillQ();
const lua = (p: string) => { const f = `/tmp/p0_${p}.lua`; Bun.write(f, `math.randomseed(42)\nrequest = function() return wrk.format(nil, "/${p}/" .. math.random(1, 1000)) end`); return f; };
const routes = (process.env.ROUTES ?? "bare,perid,vparse,vmeter,vmeterb,vtimed,products").split(",");
const res: Record<string, number[]> = {};
for (let round = 0; round < Number(process.env.ROUNDS ?? 3); round++) for (const p of routes) {
  const f = lua(p);
  await Bun.sleep(50);
  const before = process.cpuUsage();
  const perf = Bun.spawn(["perf", "stat", "-x,", "-e", "instructions,cycles", "-p", String(process.pid), "--", "sleep", "2"], { stderr: "pipe" });
  const proc = Bun.spawn(["taskset", "-c", "1", "wrk", "-t1", "-c32", "-d2s", "-s", f, "http://127.0.0.1:38111"], { stdout: "pipe" });
  const out = await new Response(proc.stdout).text();
  const cpu = process.cpuUsage(before);
  const perfOut = await new Response(perf.stderr).text();
  const ins = Number(/^(\d+),,instructions/m.exec(perfOut)?.[1]); const cyc = Number(/^(\d+),,cycles/m.exec(perfOut)?.[1]);
  const n = Number(/(\d+) requests in/.exec(out)![1]);
  const us = (cpu.user + cpu.system) / n;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]);
  (res[p] ??= []).push(us); (res[p + ":ins"] ??= []).push(ins / n); (res[p + ":cyc"] ??= []).push(cyc / n);
  if (process.env.VERBOSE) console.log(round, p, rps.toFixed(0), "rps", us.toFixed(2), "us/resp");
}
const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
for (const [p, v] of Object.entries(res)) { const b = res[p.includes(":") ? "bare:" + p.split(":")[1] : "bare"]!; console.log(p, med(v).toFixed(2), "paired diff vs bare", med(v.map((x, i) => x - b[i]!)).toFixed(3)); }
await app.stop(); await s.close(); process.exit(0);
