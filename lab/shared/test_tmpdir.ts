import { tmpdir } from "node:os";

/**
 * Where tests make their temporary folders: one folder per test process (test_preload.ts), removed after its
 * last file, so a run of the suite leaves nothing in the system's temporary folder.
 */
export function testTmpdir(): string {
  return process.env.CACHELAB_TEST_TMP ?? tmpdir();
}
