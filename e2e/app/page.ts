import {
  connectOutbox,
  type OutboxClient,
  type OutboxHealth,
  type OutboxHeld,
  observeHealth,
  type RowView,
  restHandler,
  type WatchUpdate,
} from '../../client/index.ts';
import { defineOutboxInspector } from '../../client/inspector.ts';

/**
 * The e2e test page. Tests drive it through `window.e2e` with `page.evaluate`: connect, call any
 * page-API method (errors come back as data with their `code`), log in, and read what the page
 * saw (subscription snapshots, watch updates, engine events broadcast by the worker).
 */

interface ConnectParams {
  owner: string;
  timeoutMs?: number;
  /** Run the page sender while no worker controls the page. */
  pageSender?: boolean;
  /** Worker script parameters (`lease`, `timeout`, `version`). */
  sw?: Record<string, string>;
  classic?: boolean;
  leaseMs?: number;
  /** Another script than the test worker's (a missing one, say), registered as `type`. */
  swUrl?: string;
  type?: WorkerType;
}

type CallResult =
  | { ok: true; value: unknown }
  | { ok: false; error: { name: string; code?: string; message: string; details?: unknown } };

const events: unknown[] = [];
/** The last heartbeat of each worker instance (`sw.js?heartbeat=<ms>`), by holder id. */
const heartbeats: Record<string, number> = {};
new BroadcastChannel('e2e-events').onmessage = (event) => {
  const data = event.data as { type?: string; holder?: string; at?: number };
  if (data.type === 'heartbeat') heartbeats[data.holder!] = data.at!;
  else events.push(event.data);
};
/** Every `outbox-held` the page heard (SPEC §23), with when it arrived (`Date.now()`). */
const helds: Array<OutboxHeld & { at: number }> = [];
window.addEventListener('outbox-held', (event) => helds.push({ ...event.detail, at: Date.now() }));
const snapshots: RowView[][] = [];
/** When each snapshot arrived (`Date.now()`, comparable with the worker's event times). */
const snapshotTimes: number[] = [];
const watched: WatchUpdate[] = [];
const healths: OutboxHealth[] = [];
let outbox: OutboxClient | undefined;
/** The token of the last login, for the inspector's reads of the server's history. */
let token: string | undefined;

const notes = () => ({ notes: restHandler({ baseUrl: '/api/notes' }) });

async function settle(work: () => Promise<unknown>): Promise<CallResult> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    const e = error as { name?: string; code?: string; message?: string; details?: unknown };
    return {
      ok: false,
      error: {
        name: e.name ?? 'Error',
        code: e.code,
        message: e.message ?? String(error),
        details: e.details,
      },
    };
  }
}

/** A value no page API should take: built here, since it cannot cross from the test. */
function hostile(kind: string, depth = 1500): unknown {
  switch (kind) {
    case 'cyclic': {
      const value: Record<string, unknown> = { title: 'loop' };
      value.self = value;
      return value;
    }
    case 'deep': {
      const root: Record<string, unknown> = {};
      let at = root;
      for (let i = 0; i < depth; i++) at = at.x = {} as Record<string, unknown>;
      return root;
    }
    case 'function':
      return () => 1;
    case 'promise':
      return Promise.resolve(1);
    case 'weakmap':
      return new WeakMap();
    case 'node':
      return document.body;
    case 'proxy':
      return new Proxy({ title: 'x' }, {});
    case 'revoked': {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    }
    case 'getter':
      return Object.defineProperty({}, 'title', {
        enumerable: true,
        get() {
          throw new Error('boom');
        },
      });
    case 'date':
      return new Date(0);
    case 'regexp':
      return /x/;
    case 'symbol':
      return Symbol('x');
    case 'bigint':
      return 10n;
    default:
      throw new Error(`no hostile value ${kind}`);
  }
}

/** Replaces every `{ hostile: kind, depth? }` placeholder inside `value` by the hostile value. */
function withHostile(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const mark = value as { hostile?: unknown; depth?: unknown };
  if (typeof mark.hostile === 'string')
    return hostile(mark.hostile, typeof mark.depth === 'number' ? mark.depth : undefined);
  if (Array.isArray(value)) return value.map(withHostile);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withHostile(v)]));
}

const e2e = {
  events,
  helds,
  heartbeats,
  snapshots,
  snapshotTimes,
  watched,
  async connect(params: ConnectParams): Promise<CallResult> {
    const query = new URLSearchParams(params.sw ?? {}).toString();
    const swUrl =
      params.swUrl ?? `/${params.classic ? 'sw-classic' : 'sw'}.js${query ? `?${query}` : ''}`;
    return settle(async () => {
      outbox = await connectOutbox({
        swUrl,
        scope: '/app/',
        type: params.type ?? (params.classic ? 'classic' : 'module'),
        owner: params.owner,
        ...(params.timeoutMs ? { timeoutMs: params.timeoutMs } : {}),
        ...(params.pageSender
          ? {
              pageSender: {
                collections: notes(),
                leaseMs: params.leaseMs ?? 1500,
                backoff: { baseMs: 250, maxMs: 2000 },
                // Page-sender events join the log, tagged like the worker's.
                onEvent: (event: object) =>
                  events.push({ ...event, holder: 'page', at: Date.now() }),
              },
            }
          : {}),
      });
      return outbox.mode;
    });
  },
  mode: () => outbox?.mode,
  controlled: () =>
    navigator.serviceWorker?.controller !== null &&
    navigator.serviceWorker?.controller !== undefined,
  call(method: string, ...args: unknown[]): Promise<CallResult> {
    return settle(async () => {
      if (!outbox) throw new Error('not connected');
      const fn = (outbox as unknown as Record<string, (...a: unknown[]) => unknown>)[method];
      if (typeof fn !== 'function') throw new Error(`no method ${method}`);
      return fn.apply(outbox, args);
    });
  },
  /** Like `call`, with the call's duration as the page measured it. */
  async timed(method: string, ...args: unknown[]): Promise<CallResult & { ms: number }> {
    const started = performance.now();
    const result = await e2e.call(method, ...args);
    return { ...result, ms: performance.now() - started };
  },
  /** Calls a page-API method with hostile values put in for `{ hostile }` placeholders. */
  async callHostile(method: string, args: unknown[]): Promise<CallResult & { ms: number }> {
    const started = performance.now();
    const result = await e2e.call(method, ...(args.map(withHostile) as unknown[]));
    return { ...result, ms: performance.now() - started };
  },
  /** Writes a raw value straight into the outbox's IndexedDB, as a corrupt writer would. */
  async plant(raw: Record<string, unknown>): Promise<void> {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const open = indexedDB.open('sw-outbox');
      open.onsuccess = () => resolve(open.result);
      open.onerror = () => reject(open.error);
    });
    await new Promise<void>((resolve, reject) => {
      const tx = db.transaction('rows', 'readwrite');
      tx.objectStore('rows').put(withHostile(raw));
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
    });
    db.close();
  },
  subscribe(filter?: { collection?: string; targetId?: string }) {
    outbox?.subscribe((rows) => {
      snapshots.push(rows);
      snapshotTimes.push(Date.now());
    }, filter);
  },
  watch(id: string) {
    outbox?.watch(id, (update) => watched.push(update));
  },
  /** Observes health as an app's banner would, which makes the page's watchdog run (§23). */
  watchHealth(intervalMs: number) {
    if (outbox) observeHealth(outbox, { intervalMs }).subscribe((h) => h && healths.push(h));
  },
  healths: () => healths.map((h) => ({ total: h.total, stalled: h.stalled })),
  /**
   * Mounts `<outbox-inspector>` (`sw-outbox/inspector`) on the page as an app does in
   * development, reading older versions of notes from the server's history for its ledger.
   */
  inspect() {
    defineOutboxInspector();
    const inspector = document.createElement('outbox-inspector');
    inspector.readVersion = async (entry, revision) => {
      const path = `/api/notes/${encodeURIComponent(entry.targetId)}/history/${revision}`;
      const response = await fetch(path, { headers: { authorization: `Bearer ${token}` } });
      if (response.status === 404) return null;
      if (!response.ok) throw new Error(`history: ${response.status}`);
      const { value } = (await response.json()) as { value: { title?: string; body?: string } };
      return [value.title, value.body].filter((part) => part !== undefined).join('\n');
    };
    inspector.outbox = outbox;
    document.body.append(inspector);
  },
  /** Logs in on the reference server and hands the token to the outbox. */
  async login(user: string, persist = false): Promise<CallResult> {
    return settle(async () => {
      const response = await fetch('/auth/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user }),
      });
      ({ token } = (await response.json()) as { token: string });
      await outbox?.setAuth({ authorization: `Bearer ${token}` }, { persist });
      return token;
    });
  },
};

(globalThis as unknown as { e2e: typeof e2e }).e2e = e2e;
