/**
 * server.ts with a strategy that skips its delete: a PUT commits, but the cached row stays. The stale-read
 * checker must count stale reads.
 */
import { serve } from "../../../server/process.ts";

process.exit(await serve({ wrapCache: (cache) => ({ ...cache, delete: async () => {} }) }));
