import {
  connectOutbox,
  type OutboxClient,
  type RowView,
  restHandler,
  type WatchUpdate,
} from '../../client/index.ts';

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
const snapshots: RowView[][] = [];
/** When each snapshot arrived (`Date.now()`, comparable with the worker's event times). */
const snapshotTimes: number[] = [];
const watched: WatchUpdate[] = [];
let outbox: OutboxClient | undefined;

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

const e2e = {
  events,
  heartbeats,
  snapshots,
  snapshotTimes,
  watched,
  async connect(params: ConnectParams): Promise<CallResult> {
    const query = new URLSearchParams(params.sw ?? {}).toString();
    const swUrl = `/${params.classic ? 'sw-classic' : 'sw'}.js${query ? `?${query}` : ''}`;
    return settle(async () => {
      outbox = await connectOutbox({
        swUrl,
        scope: '/app/',
        type: params.classic ? 'classic' : 'module',
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
  subscribe(filter?: { collection?: string; targetId?: string }) {
    outbox?.subscribe((rows) => {
      snapshots.push(rows);
      snapshotTimes.push(Date.now());
    }, filter);
  },
  watch(id: string) {
    outbox?.watch(id, (update) => watched.push(update));
  },
  /** Logs in on the reference server and hands the token to the outbox. */
  async login(user: string, persist = false): Promise<CallResult> {
    return settle(async () => {
      const response = await fetch('/auth/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user }),
      });
      const { token } = (await response.json()) as { token: string };
      await outbox?.setAuth({ authorization: `Bearer ${token}` }, { persist });
      return token;
    });
  },
};

(globalThis as unknown as { e2e: typeof e2e }).e2e = e2e;
