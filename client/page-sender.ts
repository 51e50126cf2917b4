import type { EndpointApi } from '../shared/model/connection.ts';
import { OutboxError } from '../shared/model/errors.ts';
import type { FlushOptions, FlushReport } from '../shared/model/page-api.ts';
import type { ChangeNotice, OutboxStore } from '../shared/model/store.ts';
import type { Endpoint } from '../shared/runtime/endpoint.ts';
import { openEndpoint } from '../shared/runtime/open-endpoint.ts';
import { createSender, type SenderConfig } from '../shared/runtime/sender.ts';
import { announceHeld } from './held-event.ts';

/**
 * The page sender (SPEC §12, §1): when no service worker controls the page, the same core runs
 * in the tab with its own holder id, the same IndexedDB store and a page fetch transport. Every
 * send still goes through the per-row claim, so a worker flushing at the same time never causes
 * a second request. It serves the page API locally and flushes on enqueue, `online` and becoming
 * visible (the client wires those); it stops once a worker controls the page.
 */

/** Configuration of the page sender: the sender part of the worker's config (§14). */
export type PageSenderConfig = SenderConfig;

/**
 * The page sender's configuration, or a function that loads it when a page sender starts: a
 * page that a worker controls then never loads the handlers, nor any code of the app's that
 * they import (SPEC §22: only what an enqueue needs is in the page's first load).
 */
export type PageSenderOption = PageSenderConfig | (() => Promise<PageSenderConfig>);

/** The outbox running in a tab that no worker controls. */
export interface PageSender {
  readonly holderId: string;
  /**
   * The page API served in the tab, bound to the owner. An outbox that cannot open fails with
   * `storage`, as a worker refuses a connection then, not with the browser's bare error.
   */
  api(): Promise<EndpointApi>;
  /** `linger`: an enqueue's flush, which may wait to fill a batch (§15.1). */
  flush(options?: FlushOptions & { linger?: boolean }): Promise<FlushReport[]>;
  /** Stops flushing (a worker took over); a flush in progress finishes under its claims. */
  stop(): void;
}

/** Starts the page sender for one owner; nothing opens until its API or a flush is used. */
export function startPageSender(config: PageSenderConfig, owner: string): PageSender {
  const sender = createSender(
    {
      ...config,
      // A row this tab held for credentials: the page hears of it at once (§23).
      onEvent(event) {
        if (event.type === 'held') announceHeld({ owner, ids: [event.id], reason: 'held' });
        config.onEvent?.(event);
      },
    },
    { kind: 'tab', owners: async () => [owner] },
  );
  let endpoint: Promise<Endpoint> | undefined;
  let stopped = false;
  let unlisten: (() => void) | undefined;
  // A row another holder (a worker started without this tab's token) held for want of
  // credentials goes with this tab at once when it has them (§13), not at the watchdog's bound.
  const onHeld = async (notice: ChangeNotice) => {
    if (stopped || notice.reason !== 'held' || notice.owner !== owner) return;
    if ((await sender.credentials.source(owner)) === null || stopped) return;
    await sender.scheduler.run('held', { owners: [owner] });
  };
  const listen = (store: OutboxStore) => {
    if (stopped) return;
    unlisten ??= store.onChange((notice) => void onHeld(notice).catch(() => undefined));
  };

  return {
    holderId: sender.holderId,
    async api() {
      if (endpoint === undefined) void sender.store().then(listen, () => undefined);
      endpoint ??= openEndpoint(sender, owner).catch((error: unknown) => {
        endpoint = undefined;
        throw error instanceof OutboxError
          ? error
          : new OutboxError('storage', `the outbox could not open: ${String(error)}`);
      });
      return (await endpoint).api;
    },
    async flush(options = {}) {
      if (stopped) return [];
      return (await sender.scheduler.run('page', { ...options, owners: [owner] })).reports;
    },
    stop() {
      stopped = true;
      unlisten?.();
      sender.scheduler.stop();
      void endpoint?.then((e) => e.dispose()).catch(() => undefined);
    },
  };
}
