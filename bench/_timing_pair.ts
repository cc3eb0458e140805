/**
 * Two servers in one process for bench/hot_path.ts's ratio T: the real app with its tier timing on (the
 * default) on PORT and with TIER_TIMING=0 on PORT_UNTIMED. One process, so what differs between two server
 * processes (where the JIT and the heap land, a quarter either way on a 2-core VM) falls on both alike, and the
 * load alternates between the ports slice by slice.
 */

import { processAlive } from "../server/process.ts";
import { createServer } from "../server.ts";
import { DEFAULT_CONFIG, readConfig } from "../server_config.ts";

const untimedPort = Number(process.env.PORT_UNTIMED);
if (!Number.isInteger(untimedPort))
  throw new Error(`PORT_UNTIMED must be a port: received ${process.env.PORT_UNTIMED}`);
const timed = createServer(readConfig({ ...process.env, TIER_TIMING: String(DEFAULT_CONFIG.tierTiming) }));
const untimed = createServer(readConfig({ ...process.env, TIER_TIMING: "0", PORT: String(untimedPort) }));
const hostname = process.env.HOST ?? "127.0.0.1";
timed.app.listen({ port: Number(process.env.PORT), hostname });
untimed.app.listen({ port: untimedPort, hostname });
console.log(`timing pair: timed :${process.env.PORT}, untimed :${untimedPort}, pid=${process.pid}`);

// Leave with the bench, even when it was killed too hard to stop us (as server/process.ts does).
const parentPid = Number(process.env.CACHELAB_PARENT_PID);
setInterval(() => {
  if (!processAlive(parentPid)) process.exit(0);
}, 500).unref();
