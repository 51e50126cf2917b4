import type { BrowserContext, Request, Route } from '@playwright/test';

/**
 * Every API request the browser makes — from pages and from the service worker — seen through
 * `context.route` (which also intercepts the worker's fetches, TOOLING): a log to assert "sent
 * once, in this order", and gates that hold a matching request open until the test releases it.
 * A batch request (SPEC §15.1) is logged as its items, each the request it stands for.
 */

export interface LoggedRequest {
  method: string;
  path: string;
  /** The `Idempotency-Key` value without its quotes. */
  key: string | undefined;
  body: string | null;
  from: 'worker' | 'page';
  /** Whether it carried an `Authorization` header. */
  authorized: boolean;
  /** An item of a batch request (SPEC §15.1): the index of that batch in `batches`. */
  batch?: number;
}

/** A batch request (SPEC §15.1): its items are logged in `entries` as requests of their own. */
export interface LoggedBatch {
  from: 'worker' | 'page';
  /** The items' idempotency keys, in item order. */
  keys: Array<string | undefined>;
}

export interface Gate {
  /** Resolves when a matching request arrived and is being held. */
  readonly reached: Promise<LoggedRequest>;
  /** Lets the held request go on to the server. */
  release(): void;
}

type Match = (request: LoggedRequest) => boolean;

export class RequestLog {
  /** Every request, and every item of a batch as the request it stands for. */
  readonly entries: LoggedRequest[] = [];
  readonly batches: LoggedBatch[] = [];
  readonly #gates: Array<{
    match: Match;
    reached: (r: LoggedRequest) => void;
    released: Promise<void>;
  }> = [];

  static async attach(context: BrowserContext): Promise<RequestLog> {
    const log = new RequestLog();
    await context.route('**/api/**', (route) => log.#handle(route));
    await context.route('**/sync/batch', (route) => log.#handle(route));
    return log;
  }

  /** Writes with an idempotency key (reads are not part of any assertion). */
  writes(): LoggedRequest[] {
    return this.entries.filter((entry) => entry.key !== undefined);
  }

  /** How often each idempotency key went out. */
  keyCounts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const entry of this.writes()) counts[entry.key!] = (counts[entry.key!] ?? 0) + 1;
    return counts;
  }

  /** Holds the next request that matches until `release()`. */
  hold(match: Match): Gate {
    let reached!: (r: LoggedRequest) => void;
    let release!: () => void;
    const gate = {
      match,
      reached: (r: LoggedRequest) => reached(r),
      released: new Promise<void>((resolve) => {
        release = resolve;
      }),
    };
    const reachedPromise = new Promise<LoggedRequest>((resolve) => {
      reached = resolve;
    });
    this.#gates.push(gate);
    return { reached: reachedPromise, release };
  }

  async #handle(route: Route): Promise<void> {
    const logged = toLogged(route.request());
    let entries = [logged];
    if (logged.path.endsWith('/sync/batch') && logged.method === 'POST') {
      entries = batchItems(logged, this.batches.length);
      this.batches.push({ from: logged.from, keys: entries.map((item) => item.key) });
    }
    this.entries.push(...entries);
    // A gate that matches one item holds the whole batch.
    const index = this.#gates.findIndex((gate) => entries.some((entry) => gate.match(entry)));
    const entry = entries.find((e) => this.#gates[index]?.match(e));
    if (index >= 0 && entry) {
      const [gate] = this.#gates.splice(index, 1);
      gate!.reached(entry);
      await gate!.released;
    }
    // The requester may be gone (a stopped worker); then there is nothing to continue.
    await route.continue().catch(() => undefined);
  }
}

function toLogged(request: Request): LoggedRequest {
  const key = request.headers()['idempotency-key']?.replaceAll('"', '');
  return {
    method: request.method(),
    path: new URL(request.url()).pathname,
    key,
    body: request.postData(),
    authorized: request.headers().authorization !== undefined,
    from: request.serviceWorker() ? 'worker' : 'page',
  };
}

/** The items of a batch request, each as the request it stands for. */
function batchItems(batch: LoggedRequest, index: number): LoggedRequest[] {
  const { items } = JSON.parse(batch.body ?? '{}') as {
    items?: Array<{
      method: string;
      path: string;
      headers: Record<string, string>;
      body: string | null;
    }>;
  };
  return (items ?? []).map((item) => ({
    method: item.method,
    path: item.path.split('?')[0] ?? item.path,
    key: item.headers['idempotency-key']?.replaceAll('"', ''),
    body: item.body,
    authorized: batch.authorized,
    from: batch.from,
    batch: index,
  }));
}
