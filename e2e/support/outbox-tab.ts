import { expect } from '@playwright/test';

/**
 * The test page (e2e/app/page.ts) as any browser driver sees it: connect, call the page API,
 * read what the page saw. Errors thrown by the API come back as data (`{ ok: false, error:
 * { code } }`). Chromium's {@link AppPage}, Firefox's and WebKit's tabs differ only in how they
 * run a function in the page.
 */

export type CallResult =
  | { ok: true; value: unknown }
  | { ok: false; error: { name: string; code?: string; message: string; details?: unknown } };

export interface ConnectParams {
  owner: string;
  timeoutMs?: number;
  pageSender?: boolean;
  sw?: Record<string, string>;
  classic?: boolean;
  leaseMs?: number;
  /** Another script than the test worker's (a missing one, say), registered as `type`. */
  swUrl?: string;
  type?: WorkerType;
}

/** Where to open a test page and as whom. */
export type OpenParams = ConnectParams & {
  /** `/app/` (the default) is in the worker's scope, `/outside/` is not. */
  path?: string;
  login?: string | { user: string; persist: boolean };
};

/** What e2e/app/page.ts puts on `window`. */
export interface E2eWindow {
  e2e: {
    connect(params: ConnectParams): Promise<CallResult>;
    call(method: string, ...args: unknown[]): Promise<CallResult>;
    timed(method: string, ...args: unknown[]): Promise<CallResult & { ms: number }>;
    callHostile(method: string, args: unknown[]): Promise<CallResult & { ms: number }>;
    plant(raw: Record<string, unknown>): Promise<void>;
    login(user: string, persist?: boolean): Promise<CallResult>;
    subscribe(filter?: Record<string, string>): void;
    watch(id: string): void;
    mode(): string | undefined;
    controlled(): boolean;
    events: unknown[];
    heartbeats: Record<string, number>;
    snapshots: unknown[][];
    snapshotTimes: number[];
    watched: unknown[];
  };
}

/** Runs `fn(arg)` in the page and returns its (JSON) result. `fn` must be self-contained. */
export type Evaluate = <A, R>(fn: (arg: A) => R | Promise<R>, arg: A) => Promise<R>;

export class OutboxTab {
  /** Runs a self-contained function in the page (for what the helpers below do not cover). */
  constructor(readonly evaluate: Evaluate) {}

  /** Waits for the page script, then connects (and logs in) as `params` say. */
  async start(params: OpenParams): Promise<void> {
    await expect
      .poll(() => this.evaluate(() => 'e2e' in globalThis, undefined), { timeout: 15_000 })
      .toBe(true);
    const { path: _path, login, ...connect } = params;
    const connected = await this.evaluate(
      (p) => (globalThis as unknown as E2eWindow).e2e.connect(p),
      connect,
    );
    if (!connected.ok) throw new Error(`connect failed: ${JSON.stringify(connected.error)}`);
    if (login !== undefined) {
      const who = typeof login === 'string' ? { user: login, persist: false } : login;
      const result = await this.login(who.user, who.persist);
      if (!result.ok) throw new Error(`login failed: ${JSON.stringify(result.error)}`);
    }
  }

  call(method: string, ...args: unknown[]): Promise<CallResult> {
    return this.evaluate(([m, a]) => (globalThis as unknown as E2eWindow).e2e.call(m, ...a), [
      method,
      args,
    ] as [string, unknown[]]);
  }

  /** Calls and returns the result with the call's duration as the page measured it. */
  timed(method: string, ...args: unknown[]): Promise<CallResult & { ms: number }> {
    return this.evaluate(([m, a]) => (globalThis as unknown as E2eWindow).e2e.timed(m, ...a), [
      method,
      args,
    ] as [string, unknown[]]);
  }

  /**
   * Calls with hostile values built in the page for `{ hostile: kind, depth? }` placeholders
   * (cyclic, deep, function, promise, weakmap, node, proxy, revoked, getter, date, regexp,
   * symbol, bigint), and how long the call took.
   */
  callHostile(method: string, ...args: unknown[]): Promise<CallResult & { ms: number }> {
    return this.evaluate(([m, a]) => (globalThis as unknown as E2eWindow).e2e.callHostile(m, a), [
      method,
      args,
    ] as [string, unknown[]]);
  }

  /** Writes a raw row straight into IndexedDB (placeholders as in {@link callHostile}). */
  plant(raw: Record<string, unknown>): Promise<void> {
    return this.evaluate((r) => (globalThis as unknown as E2eWindow).e2e.plant(r), raw);
  }

  /**
   * Reads one row straight from the outbox database, as the page sees IndexedDB (the worker's
   * database); null when there is none.
   */
  storedRow(id: string): Promise<Record<string, unknown> | null> {
    return this.evaluate(
      (rowId: string) =>
        new Promise<Record<string, unknown> | null>((resolve, reject) => {
          const open = indexedDB.open('sw-outbox');
          open.onerror = () => reject(open.error);
          open.onsuccess = () => {
            const db = open.result;
            const get = db.transaction('rows').objectStore('rows').get(rowId);
            get.onsuccess = () => {
              db.close();
              resolve((get.result as Record<string, unknown> | undefined) ?? null);
            };
            get.onerror = () => reject(get.error);
          };
        }),
      id,
    );
  }

  /** Calls and returns the value, throwing with the error's code when the call failed. */
  async value<T = unknown>(method: string, ...args: unknown[]): Promise<T> {
    const result = await this.call(method, ...args);
    if (!result.ok)
      throw new Error(
        `${method} failed: ${result.error.code ?? result.error.name}: ${result.error.message}`,
      );
    return result.value as T;
  }

  /** How many rows the outbox holds (`stats().total`). */
  async total(): Promise<number> {
    return (await this.value<{ total: number }>('stats')).total;
  }

  /** Asks for a flush until the outbox is empty (rows may first wait out another holder's lease). */
  async flushUntilEmpty(timeout = 20_000): Promise<void> {
    await expect
      .poll(
        async () => {
          await this.call('flush');
          return this.total();
        },
        { timeout },
      )
      .toBe(0);
  }

  /** Enqueues a create in the `notes` collection and returns its row id. */
  async createNote(title: unknown): Promise<string> {
    const { id } = await this.value<{ id: string }>('enqueue', {
      collection: 'notes',
      kind: 'create',
      payload: { title },
    });
    return id;
  }

  login(user: string, persist = false): Promise<CallResult> {
    return this.evaluate(([u, p]) => (globalThis as unknown as E2eWindow).e2e.login(u, p), [
      user,
      persist,
    ] as const);
  }

  mode(): Promise<string | undefined> {
    return this.evaluate(() => (globalThis as unknown as E2eWindow).e2e.mode(), undefined);
  }

  /** Whether a service worker controls the page. */
  controlled(): Promise<boolean> {
    return this.evaluate(() => (globalThis as unknown as E2eWindow).e2e.controlled(), undefined);
  }

  subscribe(filter?: Record<string, string>): Promise<void> {
    return this.evaluate((f) => (globalThis as unknown as E2eWindow).e2e.subscribe(f), filter);
  }

  snapshots<T = unknown>(): Promise<T[][]> {
    return this.evaluate(
      () => (globalThis as unknown as E2eWindow).e2e.snapshots,
      undefined,
    ) as Promise<T[][]>;
  }

  /** Each snapshot with when the page got it (`Date.now()`). */
  async timedSnapshots<T = unknown>(): Promise<Array<{ at: number; rows: T[] }>> {
    const [rows, times] = await this.evaluate(() => {
      const page = (globalThis as unknown as E2eWindow).e2e;
      return [page.snapshots, page.snapshotTimes] as const;
    }, undefined);
    return rows.map((r, i) => ({ at: times[i]!, rows: r as T[] }));
  }

  watch(id: string): Promise<void> {
    return this.evaluate((i) => (globalThis as unknown as E2eWindow).e2e.watch(i), id);
  }

  watched<T = unknown>(): Promise<T[]> {
    return this.evaluate(
      () => (globalThis as unknown as E2eWindow).e2e.watched,
      undefined,
    ) as Promise<T[]>;
  }

  /** The last heartbeat of each worker instance, by holder id (`sw: { heartbeat }`). */
  heartbeats(): Promise<Record<string, number>> {
    return this.evaluate(() => (globalThis as unknown as E2eWindow).e2e.heartbeats, undefined);
  }

  /** Engine events broadcast by every worker instance while this page was open. */
  events<T = Record<string, unknown>>(): Promise<T[]> {
    return this.evaluate(
      () => (globalThis as unknown as E2eWindow).e2e.events,
      undefined,
    ) as Promise<T[]>;
  }
}
