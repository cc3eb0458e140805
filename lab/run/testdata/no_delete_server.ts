/**
 * server.ts with a strategy that skips its delete: a PUT commits, but the cached row stays. The stale-read
 * checker must count stale reads.
 */
import { runServer } from "../../../server/run.ts";

process.exit(await runServer({ wrapCache: (cache) => ({ ...cache, delete: async () => {} }) }));
