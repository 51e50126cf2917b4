import type {
  FetchDidFailCallbackParam,
  FetchDidSucceedCallbackParam,
  HandlerDidCompleteCallbackParam,
  HandlerDidErrorCallbackParam,
  RequestWillFetchCallbackParam,
  WorkboxPlugin,
} from 'workbox-core';
import { contentDigest } from '../../shared/model/digest.ts';
import type { EnqueueResult } from '../../shared/model/page-api.ts';
import type { IdSource } from '../../shared/model/ports.ts';
import { classifyResult } from '../../shared/plan/classify.ts';
import { newRequestId } from '../../shared/plan/request-id.ts';
import { cryptoIds } from '../../shared/runtime/ids.ts';
import { formatIdempotencyKey, HEADER } from '../../shared/wire/protocol.ts';
import {
  type CapturedRequest,
  captureRequest,
  REQUEST_KIND,
  REQUESTS_COLLECTION,
  requestTarget,
} from '../../shared/wire/requests-handler.ts';
import type { OutboxEngine } from '../engine.ts';
import { bodyText } from './body.ts';
import { askForSync } from './sync.ts';

/**
 * `OutboxPlugin`: Workbox's `BackgroundSyncPlugin` contract (a plugin on a strategy's route,
 * SPEC §22) with the outbox behind it. Every request on the route gets its idempotency key
 * before it first leaves (`requestWillFetch`), so the first attempt and every retry carry the
 * same key and bytes and a lost answer is never applied twice (G2). A network error
 * (`fetchDidFail`) or a status the classifier calls transient (`fetchDidSucceed`) turns the
 * request into a row of the `requests` collection under that same id. Order is kept per URL (G4,
 * SPEC §22): a request never leaves while an earlier request of its URL is on the wire or waits
 * in the outbox. One on the wire is waited for — should it fail, it becomes a row first and the
 * later request is queued behind it — and one behind waiting rows is queued at once.
 */

/** What the page's `fetch` gets for a request the outbox took. */
export type QueuedAnswer = 'error' | 'accepted';

/** Options of {@link OutboxPlugin}. */
export interface OutboxPluginOptions {
  /** The worker's engine; its config needs `collections: { requests: requestsHandler() }`. */
  engine: OutboxEngine;
  /**
   * Whose rows these requests become (G6): a fixed owner, or one read from the request (e.g. a
   * cookie-less session header). Undefined leaves the request to the network, without a key.
   */
  owner: string | ((request: Request) => string | undefined | Promise<string | undefined>);
  /**
   * What the page's `fetch` gets when the outbox took the request: `'error'` (the default, as
   * with `BackgroundSyncPlugin`) — the network error, or the server's own transient response —
   * or `'accepted'`: `202` with `{ "queued": true, "id": "<row id>" }`.
   */
  answer?: QueuedAnswer;
  /**
   * The header that carries the key, `Idempotency-Key` by default; null sends none (for a server
   * that cannot honour one, or a cross-origin API that does not allow the header): a lost answer
   * is then resent without a key, and the server may apply it twice.
   */
  idempotencyHeader?: string | null;
  /** More header names to keep out of storage besides Authorization, Proxy-Authorization, Cookie. */
  dropHeaders?: readonly string[];
  /**
   * Hand the `Authorization` of the requests that pass through the plugin to the engine for their
   * owner, in the worker's memory only — never stored (SPEC §2, §13) — so the rows it replays while
   * this worker lives, and the entries an import moved in, carry the page's credentials. A row
   * waiting for them (`held`, `auth_required`) goes as soon as a request hands them over. After a
   * restart the worker has none until the next request through the route (or `setAuth`): the
   * owner's rows wait `held`, never sent without credentials. Default false.
   */
  rememberCredentials?: boolean;
  /** Where the requests' ids come from; the platform's `crypto` by default. */
  ids?: IdSource;
}

/** What one request carries between its callbacks (Workbox's per-plugin `state`). */
interface Capture {
  owner: string;
  id: string;
  captured: CapturedRequest;
  queued?: EnqueueResult;
  /** Lets the next request of this URL go ahead: this one is settled (sent, queued, or failed). */
  release?: () => void;
}

/** Raised from `requestWillFetch` to keep a request behind its URL's waiting rows. */
const QUEUED_BEHIND = 'sw-outbox: queued behind earlier requests to this URL';

/** A Workbox plugin that puts a route's failed writes into the outbox (SPEC §22). */
export class OutboxPlugin implements WorkboxPlugin {
  readonly #options: OutboxPluginOptions;
  /** Per URL, the last request of it that has not settled yet (this worker's). */
  readonly #unsettled = new Map<string, Promise<void>>();
  /** Per owner, the `Authorization` last seen: handed to the engine, or only marked as needed. */
  readonly #handed = new Map<string, string>();

  constructor(options: OutboxPluginOptions) {
    this.#options = options;
  }

  /** Gives the request its key (and `Content-Digest`), or queues it behind its URL's rows. */
  requestWillFetch = async ({
    request,
    event,
    state,
  }: RequestWillFetchCallbackParam): Promise<Request> => {
    // The turn is taken before the first await: requests of a URL keep the order the page made
    // them in, whatever each one's capture costs (G4).
    const { earlier, release } = this.#takeTurn(request.url);
    let capture: Capture | undefined;
    try {
      capture = await this.#capture(request);
    } finally {
      if (capture === undefined || state === undefined) release();
    }
    if (capture === undefined || state === undefined) return request;
    capture.release = release;
    state.capture = capture;
    try {
      await this.#takeCredentials(request, capture.owner);
      // An earlier request of this URL still on the wire may yet fail and become a row: this one
      // waits for it, so it never lands first and is never queued ahead of it (G4).
      await earlier;
      const api = await this.#options.engine.forOwner(capture.owner);
      const waiting = await api.rows({
        collection: REQUESTS_COLLECTION,
        targetId: requestTarget(capture.captured.url),
      });
      if (waiting.length > 0) {
        capture.queued = await this.#enqueue(capture, event);
        throw new Error(QUEUED_BEHIND);
      }
    } catch (error) {
      capture.release?.();
      throw error;
    }
    const headers = new Headers(request.headers);
    const keyHeader = keyHeaderOf(this.#options.idempotencyHeader);
    if (keyHeader !== null) {
      headers.set(keyHeader, formatIdempotencyKey(capture.id));
      const { body } = capture.captured;
      if (body !== null) headers.set(HEADER.contentDigest, contentDigest(body));
    }
    return new Request(request, { headers });
  };

  /** A network error: the request becomes a row under the key it went out with. */
  fetchDidFail = async ({ event, state }: FetchDidFailCallbackParam): Promise<void> => {
    const capture = state?.capture as Capture | undefined;
    if (capture === undefined || capture.queued !== undefined) return;
    try {
      // It left: it may have been applied, under the key its row keeps (§6, §15).
      capture.queued = await this.#enqueue(capture, event, 'network');
    } catch {
      // Not stored (quota, a row too large): the page sees the network error, as without us.
    } finally {
      capture.release?.();
    }
  };

  /** A transient status (§11): the request becomes a row; the page gets the configured answer. */
  fetchDidSucceed = async ({
    response,
    event,
    state,
  }: FetchDidSucceedCallbackParam): Promise<Response> => {
    const capture = state?.capture as Capture | undefined;
    if (capture === undefined) return response;
    try {
      return await this.#settle(capture, response, event);
    } finally {
      capture.release?.();
    }
  };

  /** Whatever became of the request, the next one of its URL may go (after any row it left). */
  handlerDidComplete = async ({ state }: HandlerDidCompleteCallbackParam): Promise<void> => {
    (state?.capture as Capture | undefined)?.release?.();
  };

  /** What a response makes of a request: a transient status queues it (§11). */
  async #settle(capture: Capture, response: Response, event: ExtendableEvent): Promise<Response> {
    if (response.ok) return response;
    let transient: string | undefined;
    try {
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        headers[name.toLowerCase()] = value;
      });
      // The body matters only for a 409's problem type (request in progress).
      const body = response.status === 409 ? await response.clone().text() : '';
      const outcome = classifyResult(
        { kind: 'response', status: response.status, headers, body },
        0,
      );
      transient = outcome.kind === 'transient' ? outcome.code : undefined;
    } catch {
      return response;
    }
    if (transient === undefined) return response;
    try {
      capture.queued = await this.#enqueue(capture, event, transient);
    } catch {
      // Not stored: the page sees the server's answer, as it would without the plugin.
      return response;
    }
    return this.#options.answer === 'accepted' ? accepted(capture.queued) : response;
  }

  /** The strategy found no response: answer for a queued request as configured. */
  handlerDidError = async ({
    state,
  }: HandlerDidErrorCallbackParam): Promise<Response | undefined> => {
    const queued = (state?.capture as Capture | undefined)?.queued;
    if (queued === undefined || this.#options.answer !== 'accepted') return undefined;
    return accepted(queued);
  };

  /**
   * A request made with credentials marks its owner as needing them, so its replays never go
   * without (§13: a row is never sent anonymously — a cookie of whoever signed in would do
   * otherwise). With `rememberCredentials` it also hands its `Authorization` to the engine for
   * the owner, in memory only, when it changed; the rows held for want of it go at once.
   */
  async #takeCredentials(request: Request, owner: string): Promise<void> {
    const authorization = request.headers.get('authorization');
    if (authorization === null || this.#handed.get(owner) === authorization) return;
    this.#handed.set(owner, authorization);
    const { engine } = this.#options;
    // The request itself still carries its credentials: a hand-over that failed only means the
    // replays wait for the next one.
    await (this.#options.rememberCredentials === true
      ? engine.setAuth(owner, { authorization })
      : engine.requireCredentials(owner)
    ).catch(() => {
      this.#handed.delete(owner);
    });
  }

  /**
   * Takes a request's turn on its URL: `earlier` settles when every earlier request of it has,
   * and `release` lets the next one go.
   */
  #takeTurn(url: string): { earlier: Promise<void>; release: () => void } {
    const key = requestTarget(url);
    const earlier = this.#unsettled.get(key) ?? Promise.resolve();
    let settled!: () => void;
    const mine = new Promise<void>((resolve) => {
      settled = resolve;
    });
    const turn = earlier.then(() => mine);
    this.#unsettled.set(key, turn);
    const release = () => {
      settled();
      if (this.#unsettled.get(key) === turn) this.#unsettled.delete(key);
    };
    return { earlier, release };
  }

  async #capture(request: Request): Promise<Capture | undefined> {
    // A no-cors request cannot carry the key header; a navigation cannot be rebuilt by script.
    if (request.mode === 'no-cors' || request.mode === 'navigate') return undefined;
    const { owner } = this.#options;
    const who = typeof owner === 'function' ? await owner(request) : owner;
    if (who === undefined || who === '') return undefined;
    const body = bodyText(await request.clone().arrayBuffer());
    if (body === undefined) return undefined;
    const idempotencyHeader = this.#options.idempotencyHeader;
    const captured = captureRequest(
      { method: request.method, url: request.url, headers: request.headers, body },
      {
        ...(this.#options.dropHeaders ? { dropHeaders: this.#options.dropHeaders } : {}),
        ...(idempotencyHeader === undefined ? {} : { idempotencyHeader }),
      },
    );
    const id = newRequestId(this.#options.ids ?? cryptoIds, REQUESTS_COLLECTION);
    return { owner: who, id, captured };
  }

  /** The request as a row; `attempted`, the code its own attempt ended with, if it left. */
  async #enqueue(
    capture: Capture,
    event: ExtendableEvent,
    attempted?: string,
  ): Promise<EnqueueResult> {
    const { engine } = this.#options;
    const api = await engine.forOwner(capture.owner);
    const result = await api.enqueue(
      {
        id: capture.id,
        collection: REQUESTS_COLLECTION,
        kind: REQUEST_KIND,
        targetId: requestTarget(capture.captured.url),
        payload: { ...capture.captured },
      },
      attempted === undefined ? undefined : { attempted: { code: attempted } },
    );
    // Send soon, and have the browser wake the worker when it is back online (§12).
    event.waitUntil(
      Promise.all([askForSync(), engine.flush({ owners: [capture.owner] }).catch(() => undefined)]),
    );
    return result;
  }
}

function keyHeaderOf(option: string | null | undefined): string | null {
  return option === undefined ? HEADER.idempotencyKey : option;
}

/** The `'accepted'` answer: 202 with the row id. */
function accepted(result: EnqueueResult): Response {
  return new Response(JSON.stringify({ queued: true, id: result.id }), {
    status: 202,
    headers: { 'content-type': 'application/json' },
  });
}
