/**
 * `access-log`: the Common and Combined Log Formats of Apache httpd (`%h %l %u %t "%r" %>s %b`, then
 * `"%{Referer}i" "%{User-agent}i"`) and nginx's predefined `combined` (`$remote_addr - $remote_user
 * [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`); fields a custom
 * format appends after those are allowed. The request line's target is matched against the route, whose
 * first capture group is the key; the method gives the op (GET/HEAD read, PUT/POST/PATCH write, DELETE
 * delete). A log line the route does not select (another path, another method, no request line) is
 * `unmatched`, counted and reported; a line that is not such a log line at all is bad.
 *
 * A read's size is the body bytes of a 200 response (`-`, a HEAD, any other status: null, since the body is
 * then not the value). It is what was sent, so a compressed response gives its compressed size.
 */
import type { TraceOp } from "../trace.ts";
import { BLANK, bad, isBlank, type LineParser, type LineSkip, MAX_SIZE_BYTES } from "./_fields.ts";

const QUOTED = String.raw`"((?:[^"\\]|\\.)*)"`;
const LOG_LINE = new RegExp(
  String.raw`^\S+ \S+ \S+ \[(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\] ` +
    String.raw`${QUOTED} (\d{3}) (\d+|-)(?: ${QUOTED} ${QUOTED})?(?: .*)?$`,
);
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const METHODS: Record<string, TraceOp> = {
  GET: "read",
  HEAD: "read",
  PUT: "write",
  POST: "write",
  PATCH: "write",
  DELETE: "delete",
};

/** Whether a line is a common or combined log line (detection). */
export function isAccessLogLine(line: string): boolean {
  return LOG_LINE.test(line);
}

function unmatched(why: string): LineSkip {
  return { skip: "unmatched", why };
}

/**
 * Compiles a route: a regular expression with at least one capture group. Throws RangeError otherwise.
 */
export function compileRoute(route: string): RegExp {
  let pattern: RegExp;
  try {
    pattern = new RegExp(route);
  } catch (error) {
    throw new RangeError(
      `Cannot read the route: ${(error as Error).message}: received ${JSON.stringify(route)}`,
    );
  }
  // An alternative that matches "" makes exec return one slot per group: the group count.
  const groups = (new RegExp(`${route}|`).exec("") as RegExpExecArray).length - 1;
  if (groups < 1)
    throw new RangeError(
      `Cannot read the route: it has no capture group for the key, e.g. '^/api/products/(\\d+)': received ${JSON.stringify(route)}`,
    );
  return pattern;
}

/** The access-log reader for one compiled route. */
export function accessLogParser(route: RegExp): LineParser {
  return (line) => {
    if (isBlank(line)) return BLANK;
    const parts = LOG_LINE.exec(line);
    if (parts === null) return bad("not a common or combined log line");
    const [, day, monthName, year, hour, minute, second, sign, zoneHours, zoneMinutes] =
      parts as unknown as string[];
    const request = parts[10] as string;
    const status = parts[11] as string;
    const bytes = parts[12] as string;
    const month = MONTHS.indexOf(monthName as string);
    if (month < 0) return bad(`unknown month ${JSON.stringify(monthName)}`);
    if (
      Number(day) < 1 ||
      Number(day) > 31 ||
      Number(hour) > 23 ||
      Number(minute) > 59 ||
      Number(second) > 60
    )
      return bad(`no such time ${day}/${monthName}/${year}:${hour}:${minute}:${second}`);
    const zoneMs = (Number(zoneHours) * 60 + Number(zoneMinutes)) * 60_000;
    const localMs = Date.UTC(Number(year), month, Number(day), Number(hour), Number(minute), Number(second));
    const tsMs = sign === "+" ? localMs - zoneMs : localMs + zoneMs;

    const words = request.split(" ");
    if (words.length < 2 || words.length > 3)
      return unmatched(`no HTTP request line in ${JSON.stringify(request)}`);
    const [method, target] = words as [string, string];
    const op = METHODS[method];
    if (op === undefined) return unmatched(`method ${method} is not a cache operation`);
    const match = route.exec(target);
    if (match === null) return unmatched("the route does not match the path");
    const key = match[1];
    if (key === undefined || key.length === 0) return unmatched("the route matched without capturing a key");

    let sizeBytes: number | null = null;
    if (op === "read" && method !== "HEAD" && status === "200" && bytes !== "-") {
      sizeBytes = Number(bytes);
      if (sizeBytes > MAX_SIZE_BYTES) return bad(`response size ${bytes} is over ${MAX_SIZE_BYTES} bytes`);
    }
    return { key, op, sizeBytes, tsMs };
  };
}
