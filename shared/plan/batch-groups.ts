import type { BatchRoute } from '../model/ports.ts';
import type { Observed, RowRequest } from '../model/row.ts';

/**
 * How rows are grouped into batches (SPEC §15.1): which route a row may travel by, with every
 * limit that applies, and which groups are full. Pure: the transport's offer of a route and the
 * limits arrive as data. The dispatcher hands in at most one row of a record (G4): a record with
 * a row in flight, or already in a group, gives none.
 */

/** Defaults of SPEC §15.1. */
export const DEFAULT_BATCH = { maxRows: 50, maxBytes: 256 * 1024 } as const;

/** Limits on a batch, each optional: the engine's tuning or a collection's handler. */
export interface BatchLimits {
  maxRows?: number;
  maxBytes?: number;
}

/** Rows gathered for one batch route. */
export interface BatchGroup {
  route: BatchRoute;
  rows: Observed[];
  bytes: number;
}

/**
 * The rows one scan reads at least (§15.1): a full selection batch, and a full request batch
 * when batches are on, so a scan never stops short of filling one.
 */
export function scanLimit(batchSize: number, batch: BatchLimits | false): number {
  return Math.max(batchSize, batch === false ? 0 : (batch.maxRows ?? DEFAULT_BATCH.maxRows));
}

/**
 * The route a row travels by in a batch, with the tightest of every limit that applies (the
 * endpoint's `offered`, the engine's, the handler's), or undefined when it goes alone: a batch
 * of fewer than two rows is none, and a row that alone fills a batch goes by itself.
 */
export function planBatchRoute(
  request: RowRequest,
  offered: BatchRoute,
  engine: BatchLimits,
  handler: BatchLimits = {},
): BatchRoute | undefined {
  const maxRows = Math.min(
    offered.maxRows,
    engine.maxRows ?? DEFAULT_BATCH.maxRows,
    handler.maxRows ?? Infinity,
  );
  const maxBytes = Math.min(
    offered.maxBytes,
    engine.maxBytes ?? DEFAULT_BATCH.maxBytes,
    handler.maxBytes ?? Infinity,
  );
  if (maxRows < 2 || requestBytes(request) > maxBytes) return undefined;
  return { url: offered.url, maxRows, maxBytes };
}

/**
 * About the bytes a request takes in a batch: its body, URL and headers, and the item's own
 * punctuation. The transport measures exactly and sends what does not fit separately.
 */
export function requestBytes(request: RowRequest): number {
  let bytes = 64 + request.url.length + (request.body?.length ?? 0);
  for (const [name, value] of Object.entries(request.headers))
    bytes += name.length + value.length + 6;
  return bytes;
}

/**
 * Adds a row to the open group of its route, and returns the groups that are ready: the open
 * one when the row would overflow it (the row then opens the next), or the one it filled.
 */
export function gather(
  groups: Map<string, BatchGroup>,
  route: BatchRoute,
  observed: Observed,
): BatchGroup[] {
  const ready: BatchGroup[] = [];
  const bytes = requestBytes(observed.row.request!);
  let group = groups.get(route.url);
  if (group !== undefined) {
    // The tightest limits of the rows inside: their handlers may differ.
    const limits = {
      url: route.url,
      maxRows: Math.min(group.route.maxRows, route.maxRows),
      maxBytes: Math.min(group.route.maxBytes, route.maxBytes),
    };
    if (group.rows.length >= limits.maxRows || group.bytes + bytes > limits.maxBytes) {
      ready.push(group);
      group = undefined;
    } else group.route = limits;
  }
  if (group === undefined) {
    group = { route, rows: [], bytes: 0 };
    groups.set(route.url, group);
  }
  group.rows.push(observed);
  group.bytes += bytes;
  if (group.rows.length >= group.route.maxRows) {
    ready.push(group);
    groups.delete(route.url);
  }
  return ready;
}
