import type { BatchRoute } from '../model/ports.ts';
import { type BatchEndpoint, type BatchLimits, parseBatchLink } from '../wire/batch.ts';

/**
 * What a sender knows about batch endpoints, per origin (SPEC §15.1): the endpoint each origin
 * advertised with a `Link` on an answer it already sent, the origins that answered a batch with
 * "no batches here" (404, 405, 501, or an envelope it refused), and how many rows an endpoint
 * took before it answered 413. It lives as long as its transport: a new worker start learns
 * again from the first answer, and until an origin has answered it is `unknown`.
 */
export interface BatchBook {
  /**
   * The route for a request to `target`: through `configured` (the handler's endpoint) when
   * given, else through what the origin advertised; undefined when the request goes alone;
   * `'unknown'` while none is configured and the origin has not answered yet.
   */
  route(target: URL, configured: URL | undefined): BatchRoute | 'unknown' | undefined;
  /**
   * Reads the `Link` of an answer from `from`; only an endpoint on that origin counts. The
   * origin has answered from now on, with or without one.
   */
  noteLink(from: URL, link: string | undefined): void;
  /** The endpoint answered "no batches here": its origin sends one request per row from now on. */
  noteUnsupported(endpoint: string): void;
  /** The endpoint refused `rows` rows as too large (413): offer it half as many from now on. */
  noteTooLarge(endpoint: string, rows: number): void;
}

/** An origin the book has heard from: an answer, or a batch it refused. */
interface OriginEntry {
  advertised?: BatchEndpoint;
  unsupported?: true;
}

/** A book over `limits`, the largest batch this sender sends whatever a server accepts. */
export function createBatchBook(limits: BatchLimits): BatchBook {
  const origins = new Map<string, OriginEntry>();
  /** Rows an endpoint still took after a 413, by endpoint URL. */
  const learned = new Map<string, number>();
  const entry = (origin: string): OriginEntry => {
    const found = origins.get(origin) ?? {};
    origins.set(origin, found);
    return found;
  };

  return {
    route(target, configured) {
      const known = origins.get(target.origin);
      if (known === undefined && configured === undefined) return 'unknown';
      if (known?.unsupported) return undefined;
      const url = configured?.href ?? known?.advertised?.url;
      // Items carry only a path: the endpoint must be on the request's own origin.
      if (url === undefined || new URL(url).origin !== target.origin) return undefined;
      const advertised = known?.advertised?.url === url ? known.advertised : undefined;
      return {
        url,
        maxRows: Math.min(
          limits.maxItems,
          advertised?.maxItems ?? Infinity,
          learned.get(url) ?? Infinity,
        ),
        maxBytes: Math.min(limits.maxBytes, advertised?.maxBytes ?? Infinity),
      };
    },
    noteLink(from, link) {
      const known = entry(from.origin);
      const endpoint = parseBatchLink(link, from.href);
      if (endpoint === undefined || new URL(endpoint.url).origin !== from.origin) return;
      if (!known.unsupported) known.advertised = endpoint;
    },
    noteUnsupported(endpoint) {
      const known = entry(new URL(endpoint).origin);
      known.unsupported = true;
      delete known.advertised;
    },
    noteTooLarge(endpoint, rows) {
      const half = Math.max(1, rows >> 1);
      learned.set(endpoint, Math.min(learned.get(endpoint) ?? half, half));
    },
  };
}
