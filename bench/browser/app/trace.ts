import type { TraceEvent, TraceTx } from './protocol.ts';

/**
 * The bench worker's tracer (`?trace=1` on the worker URL): a timeline of what the worker does
 * while a page enqueues, to find where an enqueue's time goes. It wraps the platform, not the
 * engine, so the engine runs exactly as shipped:
 *
 * - page calls arriving and answered on Comlink ports (`MessagePort` listeners and `postMessage`);
 * - every IndexedDB transaction: when it was opened, when its first request succeeded (it was
 *   running by then: the wait before it is the browser's scheduling behind other transactions
 *   on the same stores), when it completed, its stores, mode and durability, the rows it put;
 * - messages and `sync` events to the worker itself (pings, flush messages), `fetch` calls,
 *   change notices posted on BroadcastChannel;
 * - stalls of the worker's event loop: a timer asked to run every 4 ms that ran late.
 *
 * Times are `performance.timeOrigin + performance.now()`, comparable with the page's.
 */

const now = () => performance.timeOrigin + performance.now();
/** A heartbeat later than this is recorded as a stall of the worker's event loop. */
const STALL_MS = 10;
const HEARTBEAT_MS = 4;

export interface Tracer {
  /** Events since the last call, in the order they were recorded. */
  take(): TraceEvent[];
  /** Records an event of the engine (`onEvent`) or the bench. */
  note(type: string, detail?: string): void;
}

export function installTrace(scope: ServiceWorkerGlobalScope): Tracer {
  let events: TraceEvent[] = [];
  const push = (event: TraceEvent) => events.push(event);

  traceTransactions(push);
  tracePorts(push);
  const fetchOriginal = scope.fetch.bind(scope);
  scope.fetch = async (input, init) => {
    const start = now();
    const url = input instanceof Request ? input.url : String(input);
    try {
      const response = await fetchOriginal(input, init);
      push({ kind: 'fetch', start, end: now(), url, status: response.status });
      return response;
    } catch (error) {
      push({ kind: 'fetch', start, end: now(), url, status: 0 });
      throw error;
    }
  };
  const broadcast = BroadcastChannel.prototype.postMessage;
  BroadcastChannel.prototype.postMessage = function (message: unknown) {
    const ids = (message as { ids?: unknown[] } | null)?.ids?.length ?? 0;
    push({ kind: 'event', at: now(), type: 'notice', detail: String(ids) });
    broadcast.call(this, message);
  };
  // Registered first, so each is recorded before the engine's own listener runs.
  scope.addEventListener('message', (event) => {
    const type = (event.data as { type?: unknown } | null)?.type;
    push({ kind: 'event', at: now(), type: `message:${String(type)}` });
  });
  scope.addEventListener('sync', () => push({ kind: 'event', at: now(), type: 'sync' }));

  let last = now();
  setInterval(() => {
    const at = now();
    if (at - last > STALL_MS) push({ kind: 'stall', at: last, ms: at - last });
    last = at;
  }, HEARTBEAT_MS);

  return {
    take() {
      const taken = events;
      events = [];
      return taken;
    },
    note: (type, detail) => push({ kind: 'event', at: now(), type, ...(detail ? { detail } : {}) }),
  };
}

/** Wraps `IDBDatabase.transaction` and the request methods, whichever library calls them. */
function traceTransactions(push: (event: TraceEvent) => void): void {
  const open = new WeakMap<IDBTransaction, TraceTx>();
  const transaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (
    this: IDBDatabase,
    stores: string | string[],
    mode?: IDBTransactionMode,
    options?: IDBTransactionOptions,
  ) {
    const tx = transaction.call(this, stores, mode, options);
    const record: TraceTx = {
      kind: 'tx',
      open: now(),
      end: 0,
      mode: mode ?? 'readonly',
      durability: options?.durability ?? 'default',
      stores: typeof stores === 'string' ? [stores] : [...stores],
      requests: 0,
      puts: [],
      deletes: 0,
    };
    open.set(tx, record);
    const done = (aborted: boolean) => () => {
      record.end = now();
      if (aborted) record.aborted = true;
      push(record);
    };
    tx.addEventListener('complete', done(false));
    tx.addEventListener('abort', done(true));
    return tx;
  } as typeof transaction;

  const wrap = (
    proto: object,
    method: string,
    onCall?: (record: TraceTx, arg: unknown) => void,
  ) => {
    const target = proto as Record<string, (...args: unknown[]) => IDBRequest>;
    const original = target[method]!;
    target[method] = function (this: IDBObjectStore | IDBIndex, ...args: unknown[]) {
      const request = original.apply(this, args);
      const tx = 'objectStore' in this ? this.objectStore.transaction : this.transaction;
      const record = open.get(tx);
      if (record !== undefined) {
        record.requests++;
        onCall?.(record, args[0]);
        request.addEventListener('success', () => {
          record.start ??= now();
        });
      }
      return request;
    };
  };
  for (const method of ['get', 'getAll', 'getAllKeys', 'count', 'openCursor']) {
    wrap(IDBObjectStore.prototype, method);
    wrap(IDBIndex.prototype, method);
  }
  wrap(IDBObjectStore.prototype, 'put', (record, value) => {
    const row = value as { id?: unknown; state?: unknown; claim?: unknown } | null;
    if (typeof row?.id === 'string' && typeof row.state === 'string')
      record.puts.push({ id: row.id, state: row.state, claimed: row.claim !== undefined });
    else record.puts.push({ id: '', state: 'other', claimed: false });
  });
  wrap(IDBObjectStore.prototype, 'delete', (record) => {
    record.deletes++;
  });
}

/** Wraps Comlink's port listeners and replies: when each page call arrived and was answered. */
function tracePorts(push: (event: TraceEvent) => void): void {
  const wrapped = new WeakMap<object, EventListener>();
  const add = MessagePort.prototype.addEventListener;
  const remove = MessagePort.prototype.removeEventListener;
  MessagePort.prototype.addEventListener = function (
    this: MessagePort,
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | AddEventListenerOptions,
  ) {
    if (type !== 'message' || typeof listener !== 'function')
      return add.call(this, type, listener, options);
    const tracing: EventListener = (event) => {
      const data = (event as MessageEvent).data as {
        id?: unknown;
        type?: unknown;
        path?: unknown[];
        argumentList?: Array<{ value?: { id?: unknown } }>;
      } | null;
      if (typeof data?.id === 'string' && data.type === 'APPLY') {
        const id = data.argumentList?.[0]?.value?.id;
        push({
          kind: 'call-in',
          at: now(),
          callId: data.id,
          method: String(data.path?.join('.')),
          ...(typeof id === 'string' ? { id } : {}),
        });
      }
      listener.call(this, event);
    };
    wrapped.set(listener, tracing);
    add.call(this, type, tracing, options);
  } as typeof add;
  MessagePort.prototype.removeEventListener = function (
    this: MessagePort,
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | EventListenerOptions,
  ) {
    const tracing = wrapped.get(listener);
    remove.call(this, type, tracing ?? listener, options);
  } as typeof remove;
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (this: MessagePort, ...args: unknown[]) {
    const data = args[0] as { id?: unknown } | null;
    if (typeof data?.id === 'string') push({ kind: 'call-out', at: now(), callId: data.id });
    return (post as (...a: unknown[]) => void).apply(this, args);
  } as typeof post;
}
