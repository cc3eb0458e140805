/**
 * server.ts with a cache that caches wrongly: it never keeps products with an even id (every read of one goes
 * to the database) yet answers correctly, so verification passes. Only the hit-ratio simulation can catch it.
 */
import { runServer } from "../../../server/run.ts";

process.exit(
  await runServer({
    wrapCache: (cache) => ({
      ...cache,
      getOrLoad: (key, load) => (/^product:\d*[02468]$/.test(key) ? load() : cache.getOrLoad(key, load)),
    }),
  }),
);
