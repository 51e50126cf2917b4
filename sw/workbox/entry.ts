import type { Json } from '../../shared/model/json.ts';
import { sha256Hex } from '../../shared/model/sha256.ts';
import {
  type CapturedRequest,
  type CaptureOptions,
  captureRequest,
} from '../../shared/wire/requests-handler.ts';
import { bodyText } from './body.ts';
import type { WorkboxQueueEntry } from './queue-db.ts';

/**
 * A Workbox queue entry as an outbox row (SPEC §22): its request captured like the plugin's, and
 * a row id derived from the entry, so importing the same entry again finds the row it made.
 */

/** Offset that makes every safe-integer entry id non-negative, for fixed-width ids. */
const ID_OFFSET = 2n ** 53n;

/**
 * The row id of a Workbox entry: `wb-<queue>-<id>-<timestamp>`, the queue name hashed, the id
 * fixed-width so ids sort in queue order, and the timestamp so an id Workbox hands out again
 * (after its database was deleted and made anew) names another row.
 */
export function importedRowId(
  entry: Pick<WorkboxQueueEntry, 'queueName' | 'id' | 'timestamp'>,
): string {
  const queue = sha256Hex(entry.queueName).slice(0, 12);
  const position = (BigInt(entry.id) + ID_OFFSET).toString(36).padStart(12, '0');
  return `wb-${queue}-${position}-${Math.max(0, Math.trunc(entry.timestamp)).toString(36)}`;
}

/** Why an entry cannot become a row as it is (it stays in Workbox's queue). */
export type UnimportableReason = 'body_not_text' | 'malformed_entry';

/** The entry's request as a row keeps it, or why it cannot be kept. */
export function capturedEntry(
  entry: WorkboxQueueEntry,
  options: CaptureOptions,
): CapturedRequest | { unimportable: UnimportableReason } {
  const data = entry.requestData as Partial<WorkboxQueueEntry['requestData']> | undefined;
  if (typeof data?.url !== 'string' || !Number.isSafeInteger(entry.id))
    return { unimportable: 'malformed_entry' };
  const body = bodyText(data.body);
  if (body === undefined) return { unimportable: 'body_not_text' };
  const headers = typeof data.headers === 'object' && data.headers !== null ? data.headers : {};
  return captureRequest(
    {
      method: typeof data.method === 'string' ? data.method : 'GET',
      url: data.url,
      headers: Object.fromEntries(
        Object.entries(headers).filter(
          (pair): pair is [string, string] => typeof pair[1] === 'string',
        ),
      ),
      body,
    },
    options,
  );
}

/** What an imported row keeps of its entry, in its `meta`. */
export function importMeta(entry: WorkboxQueueEntry): Json {
  return { workbox: { queueName: entry.queueName, id: entry.id, timestamp: entry.timestamp } };
}
