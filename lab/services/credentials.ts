/**
 * The passwords of the servers cachelab starts, generated once per state folder and kept in
 * <stateDir>/secrets/credentials.json (0600 in a 0700 folder), so a Postgres data folder and a user's exported
 * URLs keep working across `services down` and `up`.
 */
import { chmodSync, lstatSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Context, ensureOwnedDir, errorMessage, stateDirMode } from "./state.ts";

export interface Credentials {
  postgresPassword: string;
  redisPassword: string;
}

export function credentialsPath(ctx: Pick<Context, "stateDir">): string {
  return join(ctx.stateDir, "secrets", "credentials.json");
}

/** 24 random bytes as base64url: 32 characters that need no escaping in a URL or a config line. */
export function generatePassword(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64url");
}

/** The state folder's credentials, created on first use; a file not ours or a symlink is refused. */
export function readCredentials(ctx: Pick<Context, "stateDir">): Credentials {
  ensureOwnedDir(ctx.stateDir, stateDirMode());
  ensureOwnedDir(join(ctx.stateDir, "secrets"), 0o700);
  const path = credentialsPath(ctx);
  const fresh: Credentials = { postgresPassword: generatePassword(), redisPassword: generatePassword() };
  try {
    // wx: two starts racing keep whichever file was written first.
    writeFileSync(path, `${JSON.stringify(fresh, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    return fresh;
  } catch (error) {
    if ((error as { code?: string }).code !== "EEXIST") throw error;
  }
  const stat = lstatSync(path);
  const uid = process.getuid?.();
  if (!stat.isFile() || (uid !== undefined && stat.uid !== uid)) {
    throw new Error(
      `Cannot use ${path}: not a regular file of ours (delete it to generate new passwords): received uid ${stat.uid}, mode ${stat.mode.toString(8)}`,
    );
  }
  if ((stat.mode & 0o777) !== 0o600) chmodSync(path, 0o600);
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<Credentials>;
    if (typeof parsed.postgresPassword === "string" && typeof parsed.redisPassword === "string") {
      return { postgresPassword: parsed.postgresPassword, redisPassword: parsed.redisPassword };
    }
    throw new Error("postgresPassword or redisPassword missing");
  } catch (error) {
    throw new Error(`Cannot read ${path}: ${errorMessage(error)}: received a malformed file (delete it)`);
  }
}

/** `url` with `password` (and `user`, when given) in its userinfo. */
export function withPassword(url: string, password: string, user?: string): string {
  const parsed = new URL(url);
  if (user !== undefined) parsed.username = user;
  parsed.password = password;
  return parsed.toString();
}
