/** What every bench starts from: the lab's services up and the default 100 000 rows seeded (exit 2 on a foreign database). */
import { servicesUp } from "../lab/services/lifecycle.ts";
import { ForeignDatabaseError, handedOverByEnv } from "../seed/ownership.ts";
import { DEFAULT_SEED_PLAN, ensureSeeded } from "../seed/seed.ts";

export async function seededServices() {
  const services = await servicesUp({ log: () => {} });
  const postgres = (await import("postgres")).default;
  const db = postgres(services.databaseUrl, { max: 1, onnotice: () => {} });
  await ensureSeeded(db, DEFAULT_SEED_PLAN, { handedOver: handedOverByEnv() }).catch((error: unknown) => {
    if (!(error instanceof ForeignDatabaseError)) throw error;
    console.error(error.message);
    process.exit(2);
  });
  await db.end();
  return services;
}
