/**
 * The strategy contract (strategies/_contract.ts) for tracking against Valkey: this repo's tracking on
 * node-redis over RESP3, on the lab's valkey-server beside its Redis (install-deps.sh's pin), kept coherent by
 * Valkey's CLIENT TRACKING invalidation pushes; faults through a Toxiproxy of this file's own in front of it.
 * The quick set's Valkey pass (seconds); redis and two_tier on Valkey are valkey_test.ts (the full set). A
 * machine without valkey-server fails here; it never skips.
 */
import { ownFaults, repoStrategies as repo } from "../lab/shared/strategy_testing.ts";
import { testValkeyUrl } from "../lab/shared/testing.ts";
import { strategyContract } from "./_contract.ts";

const faults = ownFaults();
strategyContract("repo on Valkey, node-redis", repo, testValkeyUrl, faults, "node-redis");
