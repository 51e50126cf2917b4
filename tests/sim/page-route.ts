import type { OwnerApi } from '../../shared/core/outbox-api.ts';
import type { Json } from '../../shared/model/json.ts';
import type { IdSource } from '../../shared/model/ports.ts';
import { REQUESTS_COLLECTION } from '../../shared/wire/requests-handler.ts';
import type { OutboxEngine } from '../../sw/engine.ts';
import { OutboxPlugin } from '../../sw/workbox/plugin.ts';
import { ORIGIN } from './network.ts';
import type { Truth } from './oracles.ts';

/**
 * The Workbox drop-in's path (SPEC §20 "Reach", §22): a route with `OutboxPlugin` in front of a
 * network-only strategy, in the worker that controls the page. The page `PUT`s records of its
 * own straight to the server; the plugin gives each request its key before it leaves, and turns
 * one that fails into a row of the `requests` collection under that key, which the engine sends
 * as it sends any row. The callbacks run in the order Workbox's `StrategyHandler` runs them.
 */

/** What the route needs of the worker it runs in. */
export interface RouteWorker {
  name: string;
  api(owner: string): OwnerApi;
  /** The worker's own `fetch`, whose requests the network marks as the page's (direct). */
  directFetch: typeof fetch;
  ids: IdSource;
}

/** One request the page made through the route, until its answer reached the page. */
interface Flow {
  owner: string;
  record: string;
  edit?: string;
  /** The plugin let it through: it went on the wire. */
  left?: boolean;
  state: { capture?: { id: string; queued?: unknown } };
}

/** The ids of the records only the route edits, per owner (none of the app's other edits touch them). */
export function routeRecords(owner: string): string[] {
  return [`wb_${owner}_0`, `wb_${owner}_1`];
}

export class PageRoute {
  readonly #plugin: OutboxPlugin;
  readonly #flows = new Set<Flow>();

  constructor(
    readonly worker: RouteWorker,
    private readonly truth: Truth,
  ) {
    const engine = {
      forOwner: async (owner: string) => worker.api(owner),
      setAuth: async () => undefined,
      requireCredentials: async () => undefined,
      flush: async ({ owners }: { owners: string[] }) => {
        for (const owner of owners) await worker.api(owner).flush();
      },
    } as unknown as OutboxEngine;
    this.#plugin = new OutboxPlugin({
      engine,
      owner: (request) => request.headers.get('authorization')?.replace(/^Bearer /, ''),
      ids: worker.ids,
    });
  }

  /** The page `PUT`s `fields` to one of its records; resolves when the page has its answer. */
  async put(owner: string, record: string, fields: Record<string, Json>): Promise<void> {
    const made = this.truth.reserveMade();
    const url = `${ORIGIN}/api/notes/${record}`;
    const flow: Flow = { owner, record, state: {} };
    const { truth } = this;
    let capture: Flow['state']['capture'];
    // The plugin keeps what it learned of the request in Workbox's per-request `state`: its id
    // is the edit's, known from the moment the plugin took it.
    Object.defineProperty(flow.state, 'capture', {
      get: () => capture,
      set: (value: { id: string }) => {
        capture = value;
        flow.edit = value.id;
        truth.pageRequest(
          {
            id: value.id,
            owner,
            collection: REQUESTS_COLLECTION,
            kind: 'update',
            targetId: record,
            payload: fields,
            baseRevision: null,
            by: 'page',
          },
          made,
          `${owner}\u0000${REQUESTS_COLLECTION}\u0000${url}`,
        );
      },
      enumerable: true,
    });
    this.#flows.add(flow);
    const request = new Request(url, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner}` },
      body: JSON.stringify(fields),
    });
    const event = { waitUntil: (promise: Promise<unknown>) => void promise.catch(() => undefined) };
    const param = { request, event: event as unknown as ExtendableEvent, state: flow.state };
    const plugin = this.#plugin;
    try {
      let sent: Request;
      try {
        sent = await plugin.requestWillFetch(param);
      } catch (error) {
        if (flow.state.capture?.queued !== undefined)
          this.truth.reach('page-request-queued-behind');
        await plugin.handlerDidError({ ...param, error: error as Error });
        return;
      }
      let response: Response;
      flow.left = true;
      if (flow.edit !== undefined) this.truth.pageLeft.add(flow.edit);
      try {
        const headers: Record<string, string> = {};
        sent.headers.forEach((value, name) => {
          headers[name] = value;
        });
        response = await this.worker.directFetch(sent.url, {
          method: sent.method,
          headers,
          body: await sent.text(),
        });
      } catch (error) {
        await plugin.fetchDidFail({
          ...param,
          originalRequest: request,
          request: sent,
          error: error as Error,
        });
        await plugin.handlerDidError({ ...param, error: error as Error });
        return;
      }
      response = await plugin.fetchDidSucceed({ ...param, request: sent, response });
      await plugin.handlerDidComplete({ ...param, response });
    } finally {
      this.#settled(flow);
    }
  }

  /** The page has its answer: a request the plugin did not queue ends there (§22). */
  #settled(flow: Flow): void {
    this.#flows.delete(flow);
    if (flow.edit === undefined) return;
    if (flow.state.capture?.queued === undefined) this.truth.pageAnswered.add(flow.edit);
    else if (flow.left) this.truth.reach('page-request-queued-after-attempt');
  }

  /**
   * The worker was killed: each page still waiting sees a network error. A request it had let
   * through may still land, wherever the network puts it, and the worker after it never knew it.
   */
  killed(): void {
    for (const flow of this.#flows) {
      // Not yet taken by the plugin, or already a row: nothing of it is on the wire.
      if (flow.edit === undefined || flow.state.capture?.queued !== undefined) continue;
      this.truth.pageAnswered.add(flow.edit);
      this.truth.pagePlaced.add(flow.edit);
      this.truth.legacyReordered.add(`${flow.owner}\u0000${flow.record}`);
    }
    this.#flows.clear();
  }
}
