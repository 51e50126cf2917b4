import { OutboxError } from '../../client/index.ts';
import {
  type DemoMessage,
  EVENTS_CHANNEL,
  EVENTS_MESSAGE,
  HOLDER_MESSAGE,
  type HolderInfo,
  type LoggedEvent,
  STOP_HOLDER_MESSAGE,
  type StopHolderReply,
} from '../protocol.ts';

/**
 * The demo's own requests to its worker (not part of the library): who holds the outbox now,
 * stop that holder, and the engine's event log. Each is a message with a reply port and a
 * timeout, like the library's calls, so a stopped worker never leaves a button hanging.
 */

const TIMEOUT_MS = 5000;

async function ask<T>(message: DemoMessage): Promise<T> {
  const registration = await navigator.serviceWorker.ready;
  const worker = navigator.serviceWorker.controller ?? registration.active;
  if (worker === null) throw new OutboxError('worker_unavailable');
  const { port1, port2 } = new MessageChannel();
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      port1.close();
      reject(new OutboxError('timeout', `the worker did not answer ${message.type}`));
    }, TIMEOUT_MS);
    port1.onmessage = (event) => {
      clearTimeout(timer);
      port1.close();
      resolve(event.data as T);
    };
    worker.postMessage(message, [port2]);
  });
}

export const currentHolder = () => ask<HolderInfo>({ type: HOLDER_MESSAGE });
export const stopHolder = () => ask<StopHolderReply>({ type: STOP_HOLDER_MESSAGE });
export const workerEvents = () => ask<LoggedEvent[]>({ type: EVENTS_MESSAGE });

/** Calls `listener` with every engine event the worker publishes from now on. */
export function onWorkerEvent(listener: (event: LoggedEvent) => void): () => void {
  const channel = new BroadcastChannel(EVENTS_CHANNEL);
  channel.onmessage = (event) => listener(event.data as LoggedEvent);
  return () => channel.close();
}
