/**
 * `bun run server`: server.ts with the services `bun run services up` found or started. DATABASE_URL and
 * REDIS_URL win when set; server.ts itself reads only its environment and imports nothing from the lab.
 *
 *   CACHE_STRATEGY=two_tier bun run server
 */
import { serve } from "../../server/process.ts";
import { servicesStatus } from "../services/lifecycle.ts";

if (!process.env.DATABASE_URL || !process.env.REDIS_URL) {
  const status = await servicesStatus({ log: () => {} });
  process.env.DATABASE_URL ||= status.postgres?.url;
  process.env.REDIS_URL ||= status.redis?.url;
}
process.exit(await serve());
