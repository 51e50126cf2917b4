import type { FlushOptions, FlushReport, OutboxEvent } from '../model/page-api.ts';
import { checkedStore } from './checked-store.ts';
import type { OutboxCoreConfig } from './config.ts';
import { runFlush } from './dispatcher.ts';
import type { OutboxCore, OwnerApi } from './outbox-api.ts';
import { createOwnerApi } from './owner-api.ts';
import { createRetentionBook } from './retention-book.ts';
import { checkTuning, DEFAULT_TUNING } from './tuning.ts';

/** Library version written to `writer.bundle` unless a config says otherwise. */
export const BUNDLE_VERSION = 'sw-outbox@0.1.0';

/**
 * Creates one holder's outbox over a store: the per-owner page API and the flush loop. The
 * service worker, the page sender and the tests all run this, with different ports (SPEC §1).
 */
export function createOutboxCore(config: OutboxCoreConfig): OutboxCore {
  checkTuning(config);
  const { onEvent } = config;
  const store = checkedStore(config.store);
  const deps = {
    ...DEFAULT_TUNING,
    ...config,
    store,
    retention: createRetentionBook(store, config.logger),
    // Telemetry is the app's code: a listener that throws must not strand a claim or a commit.
    ...(onEvent && {
      onEvent: (event: OutboxEvent) => {
        try {
          onEvent(event);
        } catch (error) {
          config.logger?.warn('onEvent threw', { type: event.type, error: String(error) });
        }
      },
    }),
  };
  const running = new Map<string, Promise<FlushReport>>();
  const queued = new Map<string, { promise: Promise<FlushReport>; force: boolean }>();

  const start = (owner: string, force: boolean): Promise<FlushReport> => {
    const run = runFlush(deps, owner, force).finally(() => {
      if (running.get(owner) === run) running.delete(owner);
    });
    running.set(owner, run);
    return run;
  };

  // One flush loop per owner at a time; triggers during a flush coalesce into one more pass (§12).
  const flush = (owner: string, options: FlushOptions = {}): Promise<FlushReport> => {
    const force = options.force === true;
    const current = running.get(owner);
    if (current === undefined) return start(owner, force);
    const next = queued.get(owner);
    if (next !== undefined) {
      next.force ||= force;
      return next.promise;
    }
    const entry = { force, promise: Promise.resolve() as unknown as Promise<FlushReport> };
    entry.promise = current
      .catch(() => undefined)
      .then(() => {
        queued.delete(owner);
        return start(owner, entry.force);
      });
    queued.set(owner, entry);
    return entry.promise;
  };

  const apis = new Map<string, OwnerApi>();
  return {
    holderId: deps.holderId,
    flush,
    forOwner(owner: string): OwnerApi {
      let api = apis.get(owner);
      if (api === undefined) {
        api = createOwnerApi(deps, owner, (options) => flush(owner, options));
        apis.set(owner, api);
      }
      return api;
    },
  };
}
