import { type Remote, wrap } from 'comlink';
import {
  CONNECT_MESSAGE,
  type ConnectMessage,
  type EndpointApi,
  type Hello,
  isOutboxMessage,
  REFUSED_MESSAGE,
  type RefusedMessage,
} from '../shared/model/connection.ts';
import { isErrorCodeShaped, OutboxError } from '../shared/model/errors.ts';
import { withTimeout } from './timeout.ts';

/** One handshake's result: the API, who answered, and the port it lives on. */
export interface Link {
  readonly remote: Remote<EndpointApi>;
  readonly hello: Hello;
  readonly worker: ServiceWorker;
  readonly port: MessagePort;
}

/** What a handshake needs: who connects, how long to wait, and which worker to ask. */
export interface HandshakeOptions {
  owner: string;
  timeoutMs: number;
  /**
   * The worker to talk to now: the controller, else the registration's active worker; rejects
   * when none can come (the registration failed).
   */
  target(): Promise<ServiceWorker>;
}

/**
 * Opens a Comlink connection to the worker (SPEC §13): posts a connect message with a new port
 * to the worker itself and waits, within the timeout, for its hello on that port — or for its
 * refusal, whose code it fails with. `heard` is called for every message on the port.
 */
export async function handshake(options: HandshakeOptions, heard: () => void): Promise<Link> {
  const worker = await options.target();
  const { port1, port2 } = new MessageChannel();
  const refused = new Promise<never>((_, reject) => {
    port1.addEventListener('message', (event: MessageEvent) => {
      heard();
      if (!isOutboxMessage<RefusedMessage>(event.data, REFUSED_MESSAGE)) return;
      const code = isErrorCodeShaped(event.data.code) ? event.data.code : 'worker_unavailable';
      reject(new OutboxError(code, event.data.message));
    });
  });
  const remote = wrap<EndpointApi>(port1);
  worker.postMessage({ type: CONNECT_MESSAGE, owner: options.owner } satisfies ConnectMessage, [
    port2,
  ]);
  try {
    const hello = await withTimeout(Promise.race([remote.hello(), refused]), options.timeoutMs);
    return { remote, hello, worker, port: port1 };
  } catch (error) {
    port1.close();
    throw error;
  }
}
