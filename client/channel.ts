import { type Remote, releaseProxy } from 'comlink';
import {
  type EndpointApi,
  isOutboxMessage,
  PING_MESSAGE,
  type PingMessage,
  PONG_MESSAGE,
  type PongMessage,
} from '../shared/model/connection.ts';
import { OutboxError } from '../shared/model/errors.ts';
import { type HandshakeOptions, handshake, type Link } from './handshake.ts';
import { withTimeout } from './timeout.ts';

/**
 * The Comlink connection to a service worker (SPEC §13, §13.1). A stopped worker leaves its port
 * dead: calls on it never settle, and no browser fires an event on the page's end (TOOLING). A
 * page learns that its worker instance is gone in three ways, none of which waits for a timeout:
 *
 * - **A start announcement.** Every worker start posts its holder id to the origin's windows;
 *   a connection to another holder id is dead and is replaced at once (the worker runs anyway,
 *   so the new handshake starts nothing). This covers restarts caused by any event: sync, push,
 *   another tab's flush.
 * - **A ping beside every call on an established port.** Only an event starts a stopped worker,
 *   and port messages are not events, so each call also posts a ping to the worker itself. A
 *   live instance answers it with the holder id the port already knows (nothing changes, and
 *   the event keeps a worker in use from idling out); after a stop, the browser starts a new
 *   instance for the ping, its other holder id says the port is dead, and the call is sent again
 *   on a new connection: one worker start, not the timeout. Each call has its own ping: one
 *   sent before the call was made cannot vouch for it (its instance may have stopped since).
 *   Pinging only after the port sat idle would miss stops: the browser's idle clock counts
 *   events, not port messages, so a page busy on its port still sees its worker stopped, and
 *   DevTools, memory pressure or a crash stop it at any moment.
 * - **A change notice nobody delivered.** The store announces every commit on a
 *   BroadcastChannel (§3). While live views are open, a notice that no message from the worker
 *   follows within a short grace means no live instance feeds them — the worker was stopped and
 *   another holder (a page sender, a tab of an older bundle's writer) changed rows — so the page
 *   pings, which restarts the worker and re-subscribes the views.
 *
 * A connection found dead is replaced only when there is something to do (a call, open views, a
 * running instance): reconnecting by itself would start a stopped worker again after every idle
 * stop. After each new handshake `onConnect` restores what the old connection carried
 * (credentials, subscriptions). The timeout is left for a worker that does not answer at all: a
 * timed-out call reconnects and is tried once more, which bounds any call to about twice it.
 */

/** How long after a change notice the worker must have spoken before the page asks if it runs. */
export const NOTICE_GRACE_MS = 250;

/** What {@link WorkerChannel} needs from the page. */
export interface WorkerChannelOptions extends HandshakeOptions {
  onConnect(link: Link): void;
}

/** One connection attempt and what is known about it. */
interface Connection {
  readonly link: Promise<Link>;
  /** Rejects once the connection is known to be dead; calls on it are then sent again. */
  readonly lost: Promise<never>;
  /** The handshake's answer, once it came. */
  ready?: Link;
  /** A worker start announced while the handshake was under way: checked once it answers. */
  announced?: string;
  /** Messages received on the port and live-view deliveries: evidence that its instance runs. */
  heard: number;
  dead: boolean;
  kill(): void;
}

const noop = () => undefined;

/** The page's connection to its worker, kept alive across worker restarts (SPEC §13.1). */
export class WorkerChannel {
  readonly #options: WorkerChannelOptions;
  #current: Connection | undefined;
  #noticeCheck: ReturnType<typeof setTimeout> | undefined;
  /** A change notice came while a check was pending: it is checked on its own after it. */
  #noticedAgain = false;
  #closed = false;

  constructor(options: WorkerChannelOptions) {
    this.#options = options;
  }

  /** Runs `call` on the live connection; sends it once more on a new one if that one died. */
  async call<T>(call: (remote: Remote<EndpointApi>) => Promise<T>): Promise<T> {
    let used: Connection | undefined;
    try {
      return await this.#attempt(call, (connection) => {
        used = connection;
      });
    } catch (error) {
      if (!isRetryable(error) || this.#closed) throw error;
      // A timed-out connection is dropped, unless a concurrent call already replaced it.
      if (used !== undefined) this.#lose(used);
      return this.#attempt(call, noop);
    }
  }

  /** Forgets the current connection (controller changed); calls on it are sent again. */
  drop(): void {
    if (this.#current !== undefined) this.#lose(this.#current);
  }

  /** Connects now if not connected (after a controller change, to restore subscriptions). */
  async ensure(): Promise<Link> {
    return withTimeout(this.#connect().link, this.#options.timeoutMs, 'worker_unavailable');
  }

  /**
   * A worker instance announced its start. Another holder id than the connection's means the
   * connection is dead: it is replaced at once, so live views and credentials follow.
   */
  noteStart(holderId: string): void {
    if (this.#closed) return;
    const current = this.#current;
    if (current === undefined) {
      void this.ensure().catch(noop);
    } else if (current.ready === undefined) {
      current.announced = holderId;
    } else if (current.ready.hello.holderId !== holderId) {
      this.#replace(current);
    }
  }

  /**
   * The store committed a change of this owner's rows while live views are open, or a view was
   * opened (its subscribe goes over the port with no ping beside it). If the worker says nothing
   * within {@link NOTICE_GRACE_MS}, no instance is feeding the views: ask.
   */
  noteChange(): void {
    if (this.#closed) return;
    // Word from the worker during a pending check may answer only the notice before this one.
    if (this.#noticeCheck !== undefined) {
      this.#noticedAgain = true;
      return;
    }
    const current = this.#current;
    if (current === undefined) {
      void this.ensure().catch(noop);
      return;
    }
    const heard = current.heard;
    this.#noticeCheck = setTimeout(() => {
      this.#noticeCheck = undefined;
      const again = this.#noticedAgain;
      this.#noticedAgain = false;
      if (this.#current === current && current.heard === heard) this.#probe(current);
      else if (again) this.noteChange();
    }, NOTICE_GRACE_MS);
  }

  /**
   * Wraps a live view's listener so that each delivery counts as word from the worker: the
   * feeds call back on ports of their own (Comlink proxies), not on the connection's port.
   */
  heard<F extends (value: never) => unknown>(listener: F): F {
    return ((value: never) => {
      if (this.#current !== undefined) this.#current.heard++;
      return listener(value);
    }) as F;
  }

  /** Ends the connection; every later call fails with `closed`. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#noticeCheck);
    const current = this.#current;
    this.#current = undefined;
    void current?.link
      .then((l) => {
        // Comlink's release makes the worker dispose the endpoint (its finalizer) and closes the
        // port on the answer; a dead port never answers, so close it anyway a little later.
        l.remote[releaseProxy]();
        setTimeout(() => l.port.close(), 1000);
      })
      .catch(noop);
  }

  /** One attempt within one timeout: connect if needed, then the call, unless the link dies. */
  async #attempt<T>(
    call: (remote: Remote<EndpointApi>) => Promise<T>,
    use: (connection: Connection) => void,
  ): Promise<T> {
    if (this.#closed) throw new OutboxError('closed');
    const connection = this.#connect();
    use(connection);
    // A handshake is itself an event the live worker answered; a port set up earlier may have
    // outlived its instance, so the call is checked with a ping beside it.
    const established = connection.ready !== undefined;
    const answered = connection.link.then((link) => {
      if (established) this.#probe(connection);
      return call(link.remote);
    });
    return withTimeout(Promise.race([answered, connection.lost]), this.#options.timeoutMs);
  }

  #connect(): Connection {
    if (this.#current !== undefined) return this.#current;
    let kill: () => void = noop;
    // Its code's own hint says what to do; a call sent again on a new connection never shows it.
    const lost = new Promise<never>((_, reject) => {
      kill = () => reject(new OutboxError('worker_unavailable'));
    });
    lost.catch(noop);
    const connection: Connection = {
      link: handshake(this.#options, () => {
        connection.heard++;
      }),
      lost,
      heard: 0,
      dead: false,
      kill,
    };
    const { link } = connection;
    this.#current = connection;
    link.then(
      (l) => {
        connection.ready = l;
        if (connection.dead) return;
        if (connection.announced !== undefined && connection.announced !== l.hello.holderId) {
          // The instance that answered is older than the one that announced itself meanwhile.
          this.#replace(connection);
          return;
        }
        this.#options.onConnect(l);
      },
      () => {
        if (this.#current === connection) this.#current = undefined;
      },
    );
    return connection;
  }

  /** Marks a connection dead: calls waiting on it are sent again, its port is closed. */
  #lose(connection: Connection): void {
    if (this.#current === connection) this.#current = undefined;
    if (connection.dead) return;
    connection.dead = true;
    connection.kill();
    void connection.link.then((l) => l.port.close()).catch(noop);
  }

  /** A newer instance runs: connect to it now, so live views and credentials move over. */
  #replace(connection: Connection): void {
    this.#lose(connection);
    if (!this.#closed) void this.ensure().catch(noop);
  }

  /** Asks the worker which instance runs; another holder id than the link's replaces the link. */
  #probe(connection: Connection): void {
    const link = connection.ready;
    if (link === undefined || connection.dead) return;
    pingWorker(link.worker, this.#options.timeoutMs).then(
      (holderId) => {
        if (holderId !== link.hello.holderId) this.#replace(connection);
      },
      // No answer at all: the call's own timeout decides.
      noop,
    );
  }
}

/** Whether a failed attempt may be sent again on a new connection (§13: once). */
function isRetryable(error: unknown): boolean {
  return (
    error instanceof OutboxError &&
    (error.code === 'timeout' || error.code === 'worker_unavailable')
  );
}

/**
 * Posts a ping to the worker itself — an event, so a stopped worker is started to answer it —
 * and resolves with the holder id of the instance that answered.
 */
function pingWorker(worker: ServiceWorker, timeoutMs: number): Promise<string> {
  const { port1, port2 } = new MessageChannel();
  const pong = new Promise<string>((resolve) => {
    port1.onmessage = (event: MessageEvent) => {
      if (isOutboxMessage<PongMessage>(event.data, PONG_MESSAGE)) resolve(event.data.holderId);
    };
  });
  worker.postMessage({ type: PING_MESSAGE } satisfies PingMessage, [port2]);
  return withTimeout(pong, timeoutMs).finally(() => port1.close());
}
