/**
 * The lab's side of the server's admin guard (server/admin_auth.ts): every POST /admin/reset and
 * /stats/window carries the `x-cachelab-admin-token` header. A server the lab starts gets a random token
 * of its own (server_process.ts); for one it did not start the token comes from the lab's environment.
 */
import { ADMIN_TOKEN_HEADER } from "../../server_config.ts";

/** The variable that holds the token, for the server and for a lab driving a server it did not start. */
export const ADMIN_TOKEN_ENV = "CACHELAB_ADMIN_TOKEN";

/** CACHELAB_ADMIN_TOKEN from the lab's own environment, or null. */
export function envAdminToken(env: Record<string, string | undefined> = process.env): string | null {
  return env[ADMIN_TOKEN_ENV] || null;
}

/**
 * The header for an admin call. Without a token any value: a loopback server without a token only wants
 * the header present (a page cannot send it without a preflight).
 */
export function adminHeaders(server: { adminToken: string | null }): Record<string, string> {
  return { [ADMIN_TOKEN_HEADER]: server.adminToken ?? "unset" };
}

/** What a refused admin call says: the server's own reason, and where the lab's token comes from. */
export async function adminRefusal(response: Response, what: string): Promise<string> {
  const reason = await response.text().then(
    (text) => (JSON.parse(text) as { error?: string }).error ?? text,
    () => "",
  );
  const hint =
    response.status === 401 || response.status === 403
      ? `; set ${ADMIN_TOKEN_ENV} in the lab's environment to the server's token (it sends it as ${ADMIN_TOKEN_HEADER})`
      : "";
  return `Cannot ${what}: ${response.status} ${reason}${hint}`;
}

/** POSTs one admin call with the token header; throws what the server said when it refuses. */
export async function postAdmin(
  server: { url: string; adminToken: string | null },
  path: "/admin/reset" | "/stats/window",
  options: { timeoutMs: number; what: string },
): Promise<Response> {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: adminHeaders(server),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  if (!response.ok) throw new Error(await adminRefusal(response, options.what));
  return response;
}
