import {
  FLUSH_MESSAGE,
  FLUSHED_MESSAGE,
  type FlushMessage,
  type FlushReply,
  isOutboxMessage,
} from '../shared/model/connection.ts';
import { isErrorCodeShaped, OutboxError } from '../shared/model/errors.ts';
import type { FlushOptions, FlushReport } from '../shared/model/page-api.ts';
import { withTimeout } from './timeout.ts';

/**
 * Asks the worker to flush one owner with a message to the worker itself, not over the Comlink
 * port: a worker event keeps the worker alive (`waitUntil`) for the whole flush, and posting to a
 * stopped worker starts it, so this never meets a dead port (SPEC §12).
 */
export function flushViaWorker(
  worker: ServiceWorker,
  owner: string,
  options: FlushOptions & { linger?: boolean },
  timeoutMs: number,
): Promise<FlushReport[]> {
  const { port1, port2 } = new MessageChannel();
  const reply = new Promise<FlushReport[]>((resolve, reject) => {
    port1.onmessage = (event: MessageEvent) => {
      const data: unknown = event.data;
      if (!isOutboxMessage<FlushReply>(data, FLUSHED_MESSAGE)) return;
      if (data.ok) resolve(data.reports);
      else
        reject(
          new OutboxError(
            isErrorCodeShaped(data.error.code) ? data.error.code : 'storage',
            data.error.message,
          ),
        );
    };
  });
  const message: FlushMessage = { type: FLUSH_MESSAGE, owner, ...options };
  worker.postMessage(message, [port2]);
  return withTimeout(reply, timeoutMs).finally(() => port1.close());
}
