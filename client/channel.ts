import { type Remote, releaseProxy, wrap } from 'comlink';
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

/**
 * The Comlink connection to a service worker (SPEC §13). A stopped worker leaves its port dead:
 * calls on it never settle and nothing says so (TOOLING). So every call has a timeout, and a
 * call that timed out reconnects (a new handshake) and is tried once more, which bounds any
 * call to about twice the timeout. After each new handshake `onConnect` restores what the old
 * connection carried (subscriptions, credentials).
 */

export interface Link {
  readonly remote: Remote<EndpointApi>;
  readonly hello: Hello;
  readonly worker: ServiceWorker;
  readonly port: MessagePort;
}

/** Options of a {@link WorkerChannel}. */
export interface WorkerChannelOptions {
  owner: string;
  timeoutMs: number;
  /** The worker to talk to now: the controller, else the registration's active worker. */
  target(): Promise<ServiceWorker | null>;
  onConnect(link: Link): void;
}

/** The page's Comlink connection to its worker, with timeouts and reconnects. */
export class WorkerChannel {
  readonly #options: WorkerChannelOptions;
  #link: Promise<Link> | undefined;
  #closed = false;

  constructor(options: WorkerChannelOptions) {
    this.#options = options;
  }

  /** Runs `call` on the live connection, reconnecting and retrying once after a timeout. */
  async call<T>(call: (remote: Remote<EndpointApi>) => Promise<T>): Promise<T> {
    const used: { link?: Promise<Link> } = {};
    try {
      return await this.#attempt(call, used);
    } catch (error) {
      if (!(error instanceof OutboxError) || error.code !== 'timeout' || this.#closed) throw error;
      // Drop the connection this call used, unless a concurrent call already replaced it.
      if (used.link !== undefined && this.#link === used.link) this.drop();
      return this.#attempt(call, {});
    }
  }

  /** Forgets the current connection (worker restarted, controller changed). */
  drop(): void {
    const link = this.#link;
    this.#link = undefined;
    link?.then((l) => l.port.close()).catch(() => undefined);
  }

  /** Connects now if not connected (after a controller change, to restore subscriptions). */
  async ensure(): Promise<Link> {
    return withTimeout(this.#connect(), this.#options.timeoutMs, 'worker_unavailable');
  }

  close(): void {
    this.#closed = true;
    const link = this.#link;
    this.#link = undefined;
    void link
      ?.then((l) => {
        // Comlink's release makes the worker dispose the endpoint (its finalizer) and closes the
        // port on the answer; a dead port never answers, so close it anyway a little later.
        l.remote[releaseProxy]();
        setTimeout(() => l.port.close(), 1000);
      })
      .catch(() => undefined);
  }

  /** One attempt within one timeout: connect if needed, then the call. */
  async #attempt<T>(
    call: (remote: Remote<EndpointApi>) => Promise<T>,
    used: { link?: Promise<Link> },
  ): Promise<T> {
    if (this.#closed) throw new OutboxError('closed');
    const deadline = performance.now() + this.#options.timeoutMs;
    used.link = this.#connect();
    const link = await withTimeout(used.link, this.#options.timeoutMs, 'timeout');
    return withTimeout(call(link.remote), deadline - performance.now(), 'timeout');
  }

  #connect(): Promise<Link> {
    if (this.#link === undefined) {
      const link = this.#handshake();
      this.#link = link;
      link.then(
        (l) => this.#options.onConnect(l),
        () => {
          if (this.#link === link) this.#link = undefined;
        },
      );
    }
    return this.#link;
  }

  async #handshake(): Promise<Link> {
    const worker = await this.#options.target();
    if (worker === null)
      throw new OutboxError('worker_unavailable', 'No service worker is active for this page.');
    const { port1, port2 } = new MessageChannel();
    const refused = new Promise<never>((_, reject) => {
      port1.addEventListener('message', (event: MessageEvent) => {
        if (!isOutboxMessage<RefusedMessage>(event.data, REFUSED_MESSAGE)) return;
        const code = isErrorCodeShaped(event.data.code) ? event.data.code : 'worker_unavailable';
        reject(new OutboxError(code, event.data.message));
      });
    });
    const remote = wrap<EndpointApi>(port1);
    worker.postMessage(
      { type: CONNECT_MESSAGE, owner: this.#options.owner } satisfies ConnectMessage,
      [port2],
    );
    try {
      const hello = await withTimeout(
        Promise.race([remote.hello(), refused]),
        this.#options.timeoutMs,
        'timeout',
      );
      return { remote, hello, worker, port: port1 };
    } catch (error) {
      port1.close();
      throw error;
    }
  }
}
