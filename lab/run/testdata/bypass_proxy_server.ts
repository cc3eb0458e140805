/**
 * server.ts that ignores the Redis URL the lab hands it (the proxy) and reaches Redis directly, at
 * CACHELAB_TEST_DIRECT_REDIS_URL: the faults the lab injects never reach it. Only the fault check catches it.
 */
import { runServer } from "../../../server/run.ts";

const direct = process.env.CACHELAB_TEST_DIRECT_REDIS_URL;
if (!direct) throw new Error("Cannot start: CACHELAB_TEST_DIRECT_REDIS_URL is not set");
process.env.REDIS_URL = direct;
process.exit(await runServer());
