/**
 * What the server's always-on tier timing costs a local hit, without HTTP or a load tool in the way
 * (bench/_tier_timing_cost.ts: two servers in this process, timing on and off, alternated batch by batch).
 *   T (in process) = local hits per second with the timing ÷ without, per round; goal ≥ 0.98.
 * In process the handler is the whole cost, so this is the ratio at its strictest: over HTTP the same
 * nanoseconds are a smaller share (bench/hot_path.ts's T, whose run-to-run spread on a 2-core VM is wider).
 *
 *   bun run bench:tier-timing [--rounds 30] [--batch 20000] [--keys 1000]
 */

import { benchArgs, positiveInt } from "./_args.ts";
import { seededServices } from "./_seeded.ts";
import { spread, timingCost } from "./_tier_timing_cost.ts";

const values = benchArgs("bun run bench:tier-timing [--rounds 30] [--batch 20000] [--keys 1000]", {
  rounds: { type: "string", default: "30" },
  batch: { type: "string", default: "20000" },
  keys: { type: "string", default: "1000" },
});
const rounds = positiveInt("rounds", values.rounds);
const batch = positiveInt("batch", values.batch);
const keys = positiveInt("keys", values.keys);

const services = await seededServices();

const cost = await timingCost(services, { rounds, batch, keys });
console.log(`in process: ${rounds} interleaved rounds of ${batch} local hits over ${keys} warmed ids`);
console.log("\n| figure | median (min–max) |\n| --- | --- |");
console.log(`| local hits/s, tier timing on (default) | ${spread(cost.timed, 0)} |`);
console.log(`| local hits/s, TIER_TIMING=0 | ${spread(cost.untimed, 0)} |`);
console.log(`| ns per hit added by the timing, per round | ${spread(cost.addedNs, 0)} |`);
console.log(`| T (in process) = on ÷ off, per round (goal ≥ 0.98) | ${spread(cost.ratios, 3)} |`);
