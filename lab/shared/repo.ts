/** The repository's root folder, for the paths the lab reads and writes (results/, experiments/, server.ts). */
import { resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dir, "..", "..");
