import { attempt, notify } from './messages.ts';
import * as server from './server-api.ts';
import type { FaultActions } from './state.ts';

/** What the fault controls need from the app. */
export interface FaultHost {
  user(): string;
  /** Called after every rule change, to show the server's rules and counters again. */
  changed(): Promise<void>;
  /** Called when "offline" ends: what the browser's `online` event would set off. */
  online(): Promise<void>;
}

/**
 * The demo's fault controls: each adds or removes a fault rule on the reference server for this
 * user only (server/faults.ts), so two people trying the demo on one server do not disturb each
 * other. A page cannot switch the browser's network, so "offline" is a server that refuses.
 */
export class FaultControls implements FaultActions {
  constructor(private readonly host: FaultHost) {}

  #apply(doing: string, done: string, work: (user: string) => Promise<unknown>): void {
    void attempt(doing, async () => {
      await work(this.host.user());
      notify('ok', done);
      await this.host.changed();
    });
  }

  goOffline(): void {
    this.#apply(
      'go offline',
      'Offline: the server now answers 503 to every request of yours.',
      (user) => server.addFault({ kind: 'unavailable', status: 503, retryAfter: 3, user }),
    );
  }

  goOnline(): void {
    this.#apply('go online', 'Online: your requests reach the server again.', async (user) => {
      await server.removeFaults(user, server.isOfflineRule);
      await this.host.online();
    });
  }

  clearFaults(): void {
    this.#apply('clear the fault rules', 'Your fault rules are gone.', (user) =>
      server.removeFaults(user),
    );
  }

  dropResponses(): void {
    this.#apply(
      'drop responses',
      'The next 2 writes will commit, then lose their response.',
      (user) => server.addFault({ kind: 'drop-after-commit', route: 'write', count: 2, user }),
    );
  }

  slowServer(): void {
    this.#apply(
      'slow the server down',
      'Your next write is held 8 s before it commits: longer than the 5 s lease.',
      (user) =>
        server.addFault({
          kind: 'delay',
          ms: 8000,
          phase: 'before-commit',
          route: 'write',
          count: 1,
          user,
        }),
    );
  }

  burst503(): void {
    this.#apply('start a 503 burst', 'The next 3 requests get 503 with Retry-After: 1.', (user) =>
      server.addFault({ kind: 'unavailable', status: 503, retryAfter: 1, count: 3, user }),
    );
  }

  expireToken(): void {
    this.#apply(
      'expire the token',
      'Your token expired: the next write gets 401 and waits as held until you sign in again.',
      (user) => server.expireToken(user),
    );
  }
}
