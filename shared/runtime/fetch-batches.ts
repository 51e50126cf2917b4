import type { BatchRoute, TransportResult } from '../model/ports.ts';
import type { RowRequest } from '../model/row.ts';
import { decodeBatchAnswer, encodeBatch } from '../wire/batch.ts';
import type { BatchBook } from './batch-book.ts';

/** What sending batches needs from the fetch transport, bound to one owner and deadline. */
export interface BatchWire {
  book: BatchBook;
  /** Base of relative request URLs. */
  baseUrl: string;
  /** POSTs one batch body with the owner's credentials: the answer, as a single send's. */
  post(url: string, body: string): Promise<TransportResult>;
  /** Sends one request alone. */
  single(request: RowRequest): Promise<TransportResult>;
}

/**
 * Sends `requests` through `route` (SPEC §15.1) and returns one result per request, in order,
 * each what the request alone would have got. What one batch cannot carry goes in the next;
 * a request larger than a batch may be goes alone. A batch-level answer (401, 429, 5xx, a lost
 * answer, a deadline that passed) is every item's; a 2xx that is no answer for the items is a
 * lost answer for each (the items may have run: their keys are resent). 413 halves the rows
 * per batch, for this endpoint from now on, and tries again. An endpoint without batches (404,
 * 405, 501) is remembered for the origin; it and an envelope the server refused (400) ran
 * nothing, so the rows go alone: `'unsupported'` when nothing had been sent yet.
 */
export async function fetchBatches(
  wire: BatchWire,
  route: BatchRoute,
  requests: readonly RowRequest[],
): Promise<TransportResult[] | 'unsupported'> {
  const results: TransportResult[] = [];
  let maxRows = route.maxRows;
  const alone = async (rest: readonly RowRequest[]) => {
    for (const request of rest) results.push(await wire.single(request));
  };
  while (results.length < requests.length) {
    const rest = requests.slice(results.length);
    const encoded =
      rest.length > 1
        ? encodeBatch(rest, {
            endpoint: route.url,
            baseUrl: wire.baseUrl,
            maxItems: maxRows,
            maxBytes: route.maxBytes,
          })
        : undefined;
    if (encoded === undefined || encoded.count < 2) {
      await alone(rest.slice(0, 1));
      continue;
    }
    const { count } = encoded;
    const answer = await wire.post(route.url, encoded.body);
    if (answer.kind !== 'response') {
      results.push(...repeat(answer, count));
      continue;
    }
    const read = decodeBatchAnswer(answer.status, answer.headers, answer.body, count);
    switch (read.kind) {
      case 'items':
        results.push(...read.results);
        break;
      case 'all':
        results.push(...repeat(read.result, count));
        break;
      case 'malformed':
        results.push(
          ...repeat({ kind: 'network_error', message: `batch answer: ${read.message}` }, count),
        );
        break;
      case 'too_large':
        wire.book.noteTooLarge(route.url, count);
        maxRows = Math.max(1, count >> 1);
        break;
      case 'unsupported':
        wire.book.noteUnsupported(route.url);
        if (results.length === 0) return 'unsupported';
        await alone(rest);
        break;
      case 'refused':
        if (results.length === 0 && count === requests.length) return 'unsupported';
        await alone(rest.slice(0, count));
        break;
    }
  }
  return results;
}

function repeat(result: TransportResult, count: number): TransportResult[] {
  return Array.from({ length: count }, () => result);
}
