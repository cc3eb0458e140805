/**
 * server.ts with a deliberately broken cache: every answer claims a version one higher than the database's.
 * The experiment runner's verification must catch it and mark the cell invalid.
 */
import { runServer } from "../../../server/run.ts";

process.exit(
  await runServer({
    wrapCache: (cache) => ({
      ...cache,
      getOrLoad: async (key, load) =>
        (await cache.getOrLoad(key, load))?.replace(/"version":(\d+)/, (_match, n: string) => `"version":${Number(n) + 1}`),
    }),
  }),
);
