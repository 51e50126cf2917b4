import { proxy } from 'comlink';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { NOTICE_GRACE_MS, WorkerChannel } from '../../client/channel.ts';
import { Subscriptions } from '../../client/subscriptions.ts';
import {
  CONNECT_MESSAGE,
  type EndpointApi,
  FLUSH_MESSAGE,
  isOutboxMessage,
  PING_MESSAGE,
  STARTED_MESSAGE,
  type StartedMessage,
} from '../../shared/model/connection.ts';
import type { RowView } from '../../shared/model/page-api.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import { installComlinkErrors } from '../../shared/runtime/comlink-errors.ts';
import { createSender } from '../../shared/runtime/sender.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { createOutboxEngine } from '../../sw/engine.ts';

/**
 * SPEC §13.1: worker restarts are invisible to pages. The real worker side (`createOutboxEngine`
 * attached to a stand-in global scope) and the real page side (`WorkerChannel`, `Subscriptions`,
 * wired as `connectOutbox` wires them) talk over real MessagePorts. The stand-in browser does what
 * TOOLING measured: a stopped instance's ports stay open and drop every message silently, and
 * only an event posted to the worker starts a new instance.
 */

const OWNER = 'alice';
const TIMEOUT_MS = 2000;
const ORIGIN = 'http://localhost';

/** `source instanceof WindowClient` is how the worker accepts a connection. */
class FakeWindowClient {
  readonly id = 'window-1';
  readonly url = `${ORIGIN}/app/`;
  constructor(private readonly deliver: (message: unknown) => void) {}
  postMessage(message: unknown): void {
    setTimeout(() => this.deliver(message), 0);
  }
}
(globalThis as unknown as { WindowClient: unknown }).WindowClient = FakeWindowClient;

/** The reference server's behaviour for these tests: every request is logged with its key. */
class Server {
  mode: 'ok' | 'refuse' = 'ok';
  readonly sent: Array<{ key: string | null; auth: string | null }> = [];
  readonly fetch = (async (_url: string, init: RequestInit) => {
    const headers = new Headers(init.headers);
    this.sent.push({ key: headers.get('idempotency-key'), auth: headers.get('authorization') });
    if (this.mode === 'refuse')
      return new Response(null, { status: 503, headers: { 'retry-after': '3600' } });
    return new Response(JSON.stringify({ id: `n${this.sent.length}`, revision: 1 }), {
      status: 201,
      headers: { 'content-type': 'application/json', etag: '"1"' },
    });
  }) as typeof globalThis.fetch;
}

type Listener = (event: Record<string, unknown>) => void;

/** One worker start: the engine on a stand-in global scope with its own store connection. */
class Instance {
  readonly holderId: string;
  readonly #listeners = new Map<string, Listener[]>();
  readonly #ports: MessagePort[] = [];
  readonly #store: OutboxStore;
  #dead = false;

  constructor(browser: FakeBrowser) {
    this.#store = createMemoryStore({ name: browser.dbName });
    const fetch = ((url: string, init: RequestInit) =>
      this.#dead
        ? new Promise<Response>(() => {})
        : browser.server.fetch(url, init)) as typeof globalThis.fetch;
    const engine = createOutboxEngine({
      collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
      store: async () => this.#store,
      fetch,
      backoff: { baseMs: 3_600_000, maxMs: 3_600_000 },
    });
    this.holderId = engine.holderId;
    const on = (type: string, listener: Listener) =>
      this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
    const scope = {
      location: { origin: ORIGIN },
      navigator: { onLine: true },
      registration: { addEventListener: () => undefined },
      clients: {
        matchAll: async () => [browser.client],
        get: async () => browser.client,
        claim: async () => undefined,
      },
      skipWaiting: async () => undefined,
      addEventListener: on,
    };
    engine.attach(scope as unknown as ServiceWorkerGlobalScope);
  }

  dispatch(type: string, data: unknown, ports: MessagePort[], source: unknown): void {
    if (this.#dead) return;
    this.#ports.push(...ports);
    const event = { data, ports, source, waitUntil: (p: Promise<unknown>) => p.catch(() => {}) };
    for (const listener of this.#listeners.get(type) ?? []) listener(event);
  }

  /** The browser stops the instance: its ports go silent, its store connection closes. */
  kill(): void {
    this.#dead = true;
    for (const port of this.#ports) port.close();
    this.#store.close();
  }
}

/** One origin's worker registration, as the browser runs it. */
class FakeBrowser {
  readonly dbName = `channel-${Math.random().toString(36).slice(2)}`;
  readonly server = new Server();
  readonly instances: Instance[] = [];
  handshakes = 0;
  pings = 0;
  /** A worker that takes messages and never answers (hung, not stopped). */
  hung = false;
  live: Instance | undefined;
  readonly client: FakeWindowClient;
  /** The page's `navigator.serviceWorker.controller`. */
  readonly worker = {
    state: 'activated',
    postMessage: (data: unknown, transfer: MessagePort[] = []) => this.event(data, transfer),
  } as unknown as ServiceWorker;

  constructor(deliver: (message: unknown) => void) {
    this.client = new FakeWindowClient(deliver);
  }

  /** An event for the worker: it starts an instance when none runs. */
  event(data: unknown, ports: MessagePort[] = []): void {
    if (isOutboxMessage(data, CONNECT_MESSAGE)) this.handshakes++;
    if (isOutboxMessage(data, PING_MESSAGE)) this.pings++;
    if (this.hung) return;
    if (this.live === undefined) {
      this.live = new Instance(this);
      this.instances.push(this.live);
    }
    const live = this.live;
    setTimeout(() => live.dispatch('message', data, ports, this.client), 0);
  }

  stop(): void {
    this.live?.kill();
    this.live = undefined;
  }
}

/** A page connected the way `connectOutbox` connects it, with one live view. */
function openPage() {
  installComlinkErrors();
  const subscriptions = new Subscriptions();
  let auth: Record<string, string> | undefined;
  const browser = new FakeBrowser((message) => {
    if (isOutboxMessage<StartedMessage>(message, STARTED_MESSAGE))
      channel.noteStart(message.holderId);
  });
  const channel = new WorkerChannel({
    owner: OWNER,
    timeoutMs: TIMEOUT_MS,
    target: async () => browser.worker,
    onConnect(link) {
      const api = link.remote as unknown as EndpointApi;
      if (auth !== undefined) api.setAuth(auth).catch(() => undefined);
      subscriptions.attach(
        api,
        (listener) => proxy(channel.heard(listener)),
        () => channel.noteChange(),
      );
    },
  });
  const call = <T>(fn: (api: EndpointApi) => Promise<T>) =>
    channel.call((remote) => fn(remote as unknown as EndpointApi));
  const views: RowView[][] = [];
  subscriptions.rows(undefined, (rows) => views.push(rows));
  const setAuth = async (headers: Record<string, string>) => {
    auth = headers;
    await call((api) => api.setAuth(headers));
  };
  /** Enqueues a create, then asks the worker to flush, as the client's `enqueue` does. */
  const enqueue = async (title: string) => {
    const result = await call((api) =>
      api.enqueue({ collection: 'notes', kind: 'create', payload: { title }, id: `n_${title}_00` }),
    );
    browser.event({ type: FLUSH_MESSAGE, owner: OWNER });
    return result;
  };
  pages.push({ channel, subscriptions });
  return {
    browser,
    channel,
    subscriptions,
    call,
    views,
    setAuth,
    enqueue,
    latest: () => views.at(-1),
  };
}

const pages: Array<{ channel: WorkerChannel; subscriptions: Subscriptions }> = [];
afterEach(() => {
  for (const { channel, subscriptions } of pages.splice(0)) {
    subscriptions.clear();
    channel.close();
  }
});

/** A page sender in another tab of the origin flushes the owner's rows (a forced flush). */
async function flushInAnotherTab(browser: FakeBrowser): Promise<void> {
  const tab = createSender(
    {
      collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
      store: async () => createMemoryStore({ name: browser.dbName }),
      fetch: browser.server.fetch,
    },
    { kind: 'tab', owners: async () => [OWNER] },
  );
  await (await tab.core()).flush(OWNER, { force: true });
}

const statuses = (rows: RowView[] | undefined) => rows?.map((view) => view.status);

describe('worker restarts are invisible to pages (SPEC §13.1)', () => {
  it('a call made after the worker was stopped costs one worker start, not the timeout', async () => {
    const page = openPage();
    await page.channel.ensure();
    await page.call((api) => api.stats());
    const first = page.browser.live!.holderId;
    page.browser.stop();

    const started = performance.now();
    const stats = await page.call((api) => api.stats());
    expect(stats.total).toBe(0);
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS / 4);
    expect(page.browser.instances.map((instance) => instance.holderId)).toEqual([
      first,
      page.browser.live!.holderId,
    ]);
  });

  it('calls to a live worker keep their connection: the ping is answered by the same instance', async () => {
    const page = openPage();
    for (let i = 0; i < 5; i++) await page.call((api) => api.stats());
    await Promise.all([1, 2, 3].map(() => page.call((api) => api.stats())));
    expect(page.browser.handshakes).toBe(1);
    expect(page.browser.instances).toHaveLength(1);
  });

  it('live views move to a new instance that announces its start, and its credentials go with them, without a call', async () => {
    const page = openPage();
    await page.setAuth({ authorization: 'Bearer memory-only' });
    page.browser.server.mode = 'refuse';
    const { id } = await page.enqueue('first');
    await vi.waitFor(() => expect(statuses(page.latest())).toEqual(['deferred']));
    page.browser.stop();

    // Something else starts the worker (a sync, a push, another tab): its start flush finds no
    // token (the page gave it to the old instance's memory) and holds the row...
    page.browser.server.mode = 'ok';
    page.browser.event({ type: 'sw-outbox.flush', force: true });
    // ...until the page, told of the start, reconnects and hands the token over again; the view,
    // subscribed again on the new instance, sees the row settle.
    await vi.waitFor(() => expect(page.latest()).toEqual([]), { timeout: 1000 });
    expect(page.browser.server.sent).toEqual([
      { key: `"${id}"`, auth: 'Bearer memory-only' },
      { key: `"${id}"`, auth: 'Bearer memory-only' },
    ]);
    expect(page.browser.handshakes).toBe(2);
  });

  it('live views stay live when another holder settles rows while the worker is stopped', async () => {
    const page = openPage();
    page.browser.server.mode = 'refuse';
    const { id } = await page.enqueue('elsewhere');
    await vi.waitFor(() => expect(statuses(page.latest())).toEqual(['deferred']));
    page.browser.stop();

    // A page sender in another tab sends the row; the store announces its commits, which this
    // page hears (BroadcastChannel in a browser) and reports to its channel.
    const notices = createMemoryStore({ name: page.browser.dbName });
    notices.onChange((notice) => {
      if (notice.owner === OWNER) page.channel.noteChange();
    });
    page.browser.server.mode = 'ok';
    await flushInAnotherTab(page.browser);
    expect(page.browser.server.sent.map((sent) => sent.key)).toEqual([`"${id}"`, `"${id}"`]);

    await vi.waitFor(() => expect(page.latest()).toEqual([]), { timeout: 1000 });
    expect(page.browser.instances).toHaveLength(2);
  });

  it('a change notice the live worker feeds to the views costs no ping', async () => {
    const page = openPage();
    page.browser.server.mode = 'refuse';
    await page.enqueue('fed');
    await vi.waitFor(() => expect(statuses(page.latest())).toEqual(['deferred']));
    const pings = page.browser.pings;
    const seen = page.views.length;

    // The worker commits (a flush it was asked for by an event, not over the port) and its
    // views deliver the change; the page hears the store's notice of the same commit.
    page.channel.noteChange();
    page.browser.event({ type: FLUSH_MESSAGE, owner: OWNER, force: true });
    await vi.waitFor(() => expect(page.views.length).toBeGreaterThan(seen));
    await new Promise((resolve) => setTimeout(resolve, NOTICE_GRACE_MS + 150));
    expect(page.browser.pings).toBe(pings);
    expect(page.browser.instances).toHaveLength(1);
  });

  it('a live view opened after the worker was stopped gets its rows: the new view asks whether the instance runs', async () => {
    const page = openPage();
    page.browser.server.mode = 'refuse';
    await page.enqueue('opened-late');
    await vi.waitFor(() => expect(statuses(page.latest())).toEqual(['deferred']));
    page.browser.stop();

    // An app's outbox panel opens while the worker is stopped: its subscribe alone goes over the
    // old port, which the stopped instance drops without a word.
    const panel: RowView[][] = [];
    page.subscriptions.rows(undefined, (rows) => panel.push(rows));
    await vi.waitFor(() => expect(statuses(panel.at(-1))).toEqual(['deferred']), {
      timeout: TIMEOUT_MS / 2,
    });
    expect(page.browser.instances).toHaveLength(2);
  });

  it('a change notice that comes while the check of an earlier one is pending is checked in its turn', async () => {
    const page = openPage();
    page.browser.server.mode = 'refuse';
    const { id } = await page.enqueue('twice');
    await vi.waitFor(() => expect(statuses(page.latest())).toEqual(['deferred']));

    // Notice A: the live worker commits and feeds the views, so A's check hears it...
    const seen = page.views.length;
    page.channel.noteChange();
    page.browser.event({ type: FLUSH_MESSAGE, owner: OWNER, force: true });
    await vi.waitFor(() => expect(page.views.length).toBeGreaterThan(seen));
    // ...and notice B, of a commit by another holder after the worker stopped, comes before A's
    // check ran: the word A's check heard was not about B.
    page.browser.stop();
    page.channel.noteChange();
    page.browser.server.mode = 'ok';
    await flushInAnotherTab(page.browser);
    expect(page.browser.server.sent.map((sent) => sent.key)).toEqual([
      `"${id}"`,
      `"${id}"`,
      `"${id}"`,
    ]);

    await vi.waitFor(() => expect(page.latest()).toEqual([]), { timeout: 1000 });
    expect(page.browser.instances).toHaveLength(2);
  });

  it('an announcement from the instance already connected changes nothing', async () => {
    const page = openPage();
    await page.call((api) => api.stats());
    page.channel.noteStart(page.browser.live!.holderId);
    await page.call((api) => api.stats());
    expect(page.browser.handshakes).toBe(1);
  });

  it('a worker that answers nothing at all still fails with timeout within about twice the timeout', async () => {
    const page = openPage();
    await page.call((api) => api.stats());
    page.browser.stop();
    page.browser.hung = true;
    const started = performance.now();
    await expect(page.call((api) => api.stats())).rejects.toMatchObject({ code: 'timeout' });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS * 2 - 50);
    expect(elapsed).toBeLessThan(TIMEOUT_MS * 2 + 1000);
  });
});
