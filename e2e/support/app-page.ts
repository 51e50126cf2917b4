import { type BrowserContext, expect, type Page } from '@playwright/test';

/**
 * A test page (e2e/app/page.ts) driven from the test: connect, call the page API, read what the
 * page saw. Errors thrown by the API come back as data (`{ ok: false, error: { code } }`).
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
}

interface E2eWindow {
  e2e: {
    connect(params: ConnectParams): Promise<CallResult>;
    call(method: string, ...args: unknown[]): Promise<CallResult>;
    timed(method: string, ...args: unknown[]): Promise<CallResult & { ms: number }>;
    login(user: string, persist?: boolean): Promise<CallResult>;
    subscribe(filter?: Record<string, string>): void;
    watch(id: string): void;
    mode(): string | undefined;
    controlled(): boolean;
    events: unknown[];
    snapshots: unknown[][];
    snapshotTimes: number[];
    watched: unknown[];
  };
}

export class AppPage {
  constructor(readonly page: Page) {}

  /** Opens `path` (`/app/` is in the worker's scope, `/outside/` is not) and connects. */
  static async open(
    context: BrowserContext,
    baseURL: string,
    params: ConnectParams & { path?: string; login?: string | { user: string; persist: boolean } },
  ): Promise<AppPage> {
    const page = await context.newPage();
    await page.goto(`${baseURL}${params.path ?? '/app/'}`);
    await page.waitForFunction(() => 'e2e' in globalThis);
    const app = new AppPage(page);
    const { path: _path, login, ...connect } = params;
    const connected = await page.evaluate(
      (p) => (globalThis as unknown as E2eWindow).e2e.connect(p),
      connect,
    );
    if (!connected.ok) throw new Error(`connect failed: ${JSON.stringify(connected.error)}`);
    if (login !== undefined) {
      const who = typeof login === 'string' ? { user: login, persist: false } : login;
      const result = await app.login(who.user, who.persist);
      if (!result.ok) throw new Error(`login failed: ${JSON.stringify(result.error)}`);
    }
    return app;
  }

  call(method: string, ...args: unknown[]): Promise<CallResult> {
    return this.page.evaluate(([m, a]) => (globalThis as unknown as E2eWindow).e2e.call(m, ...a), [
      method,
      args,
    ] as [string, unknown[]]);
  }

  /** Calls and returns the result with the call's duration as the page measured it. */
  timed(method: string, ...args: unknown[]): Promise<CallResult & { ms: number }> {
    return this.page.evaluate(([m, a]) => (globalThis as unknown as E2eWindow).e2e.timed(m, ...a), [
      method,
      args,
    ] as [string, unknown[]]);
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

  /** Asks for a flush until the outbox is empty (rows may first wait out another holder's lease). */
  async flushUntilEmpty(timeout = 20_000): Promise<void> {
    await expect
      .poll(
        async () => {
          await this.call('flush');
          return (await this.value<{ total: number }>('stats')).total;
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
    return this.page.evaluate(([u, p]) => (globalThis as unknown as E2eWindow).e2e.login(u, p), [
      user,
      persist,
    ] as const);
  }

  mode(): Promise<string | undefined> {
    return this.page.evaluate(() => (globalThis as unknown as E2eWindow).e2e.mode());
  }

  subscribe(filter?: Record<string, string>): Promise<void> {
    return this.page.evaluate((f) => (globalThis as unknown as E2eWindow).e2e.subscribe(f), filter);
  }

  snapshots<T = unknown>(): Promise<T[][]> {
    return this.page.evaluate(() => (globalThis as unknown as E2eWindow).e2e.snapshots) as Promise<
      T[][]
    >;
  }

  /** Each snapshot with when the page got it (`Date.now()`). */
  async timedSnapshots<T = unknown>(): Promise<Array<{ at: number; rows: T[] }>> {
    const [rows, times] = await this.page.evaluate(() => {
      const { e2e } = globalThis as unknown as E2eWindow;
      return [e2e.snapshots, e2e.snapshotTimes] as const;
    });
    return rows.map((r, i) => ({ at: times[i]!, rows: r as T[] }));
  }

  watch(id: string): Promise<void> {
    return this.page.evaluate((i) => (globalThis as unknown as E2eWindow).e2e.watch(i), id);
  }

  watched<T = unknown>(): Promise<T[]> {
    return this.page.evaluate(() => (globalThis as unknown as E2eWindow).e2e.watched) as Promise<
      T[]
    >;
  }

  /** Engine events broadcast by every worker instance while this page was open. */
  events<T = Record<string, unknown>>(): Promise<T[]> {
    return this.page.evaluate(() => (globalThis as unknown as E2eWindow).e2e.events) as Promise<
      T[]
    >;
  }
}
