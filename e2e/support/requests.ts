import type { BrowserContext, Request, Route } from '@playwright/test';

/**
 * Every API request the browser makes — from pages and from the service worker — seen through
 * `context.route` (which also intercepts the worker's fetches, TOOLING): a log to assert "sent
 * once, in this order", and gates that hold a matching request open until the test releases it.
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
}

export interface Gate {
  /** Resolves when a matching request arrived and is being held. */
  readonly reached: Promise<LoggedRequest>;
  /** Lets the held request go on to the server. */
  release(): void;
}

type Match = (request: LoggedRequest) => boolean;

export class RequestLog {
  readonly entries: LoggedRequest[] = [];
  readonly #gates: Array<{
    match: Match;
    reached: (r: LoggedRequest) => void;
    released: Promise<void>;
  }> = [];

  static async attach(context: BrowserContext): Promise<RequestLog> {
    const log = new RequestLog();
    await context.route('**/api/**', (route) => log.#handle(route));
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
    const entry = toLogged(route.request());
    this.entries.push(entry);
    const index = this.#gates.findIndex((gate) => gate.match(entry));
    if (index >= 0) {
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
