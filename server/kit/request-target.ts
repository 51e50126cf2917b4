/**
 * A request line's target as the kit reads it (SPEC §15.1): parsed as a URL path, so dot
 * segments are resolved and percent-encoding is kept, as every adapter hands a request alone to
 * the kit — and as a batch item's path is read, so an item reaches the route, and the ledger
 * entry, its request alone would. A target that starts with `//` is a path (`/.//x` parses to
 * `//x`), not a network-path reference naming another host, which would route `//x/api/todos`
 * to `/api/todos`. Undefined when no URL can be made of it.
 */
export function targetUrl(target: string, base: string): URL | undefined {
  const path = target.startsWith('//') ? `/.${target}` : target;
  try {
    return new URL(path, base);
  } catch {
    return undefined;
  }
}

/**
 * The path and query a URL makes of a request line's target (`/api/./todos?x` is `/api/todos?x`),
 * or the target as sent when none can be made: for a router that matches paths as sent (Fastify),
 * so a request alone reaches the route its batch item does (SPEC §15.1).
 */
export function normalizedTarget(target: string): string {
  return pathAndQuery(target) ?? target;
}

/** The path and query a URL makes of a request line's target; undefined when none can be made. */
export function pathAndQuery(target: string): string | undefined {
  const url = targetUrl(target, 'http://localhost');
  return url === undefined ? undefined : url.pathname + url.search;
}
