import {
  checkAuthOptions,
  checkEnqueueInput,
  checkFilter,
  checkFlushOptions,
  checkHeaders,
  checkId,
  checkLimit,
} from '../shared/model/arguments.ts';
import type { EndpointApi, SetAuthOptions } from '../shared/model/connection.ts';
import { isObject } from '../shared/model/is-object.ts';
import {
  emptyFlushReport,
  type OutboxApi,
  type OutboxDiagnostics,
} from '../shared/model/page-api.ts';
import { newRequestId } from '../shared/plan/request-id.ts';
import { cryptoIds } from '../shared/runtime/ids.ts';
import type { OutboxConnection } from './outbox-connection.ts';
import { type Registered, requestBackgroundSync } from './registration.ts';

/**
 * The page API's calls (SPEC §13): each argument checked in the page before anything is posted
 * (G7), then the call made on whatever serves the page; a write is followed by a flush.
 */

/** The calls of the page API: the worker's API plus credentials. */
export interface OutboxCalls extends OutboxApi, OutboxDiagnostics {
  /** Hands credentials to the sender (§13); they are restored after every reconnect. */
  setAuth(headers: Record<string, string> | null, options?: SetAuthOptions): Promise<void>;
  /**
   * Asks the browser to keep this origin's storage (`navigator.storage.persist()`, §23); its
   * answer, false where the API is missing. `health().storage.persisted` tells it later.
   */
  requestPersistence(): Promise<boolean>;
}

/** Asks for persistent storage (every browser of SPEC §21 has `navigator.storage.persist`). */
const requestPersistence = (): Promise<boolean> => navigator.storage.persist();

/**
 * When the page asks for persistent storage (§23): never (the default), with the first enqueue
 * of this page, or when the app is installed (the browser's `appinstalled`).
 */
export type PersistWhen = 'never' | 'first-enqueue' | 'install';

/** The page API's calls over `connection`; `registered` is asked for Background Sync after writes. */
export function outboxCalls(
  connection: OutboxConnection,
  registered: Registered | undefined,
  persist?: PersistWhen,
): OutboxCalls {
  const { call: api, flush, flushSoon } = connection;
  let ask = persist;
  if (ask === 'install') addEventListener('appinstalled', requestPersistence);
  /**
   * After a write: flush soon — after the worker's linger, so writes made back to back go in one
   * batch (§15.1) — and ask for Background Sync should the flush not get through.
   */
  const written = <T>(result: T): T => {
    flushSoon({ linger: true });
    if (ask === 'first-enqueue') requestPersistence().catch(String);
    ask = undefined;
    void registered?.registration.then(requestBackgroundSync);
    return result;
  };
  /** A call whose argument is checked here, before anything is posted (G7). */
  const checked =
    <A, R>(check: (value: unknown) => unknown, call: (a: EndpointApi, arg: A) => Promise<R>) =>
    async (arg: A): Promise<R> => {
      check(arg);
      return api((a) => call(a, arg));
    };

  return {
    async enqueue(input) {
      checkEnqueueInput(input);
      // An id made here makes the retry after a reconnect safe: enqueue is idempotent by id (§9).
      const withId =
        isObject(input) && input.id === undefined && typeof input.collection === 'string'
          ? { ...input, id: newRequestId(cryptoIds, input.collection) }
          : input;
      return written(await api((a) => a.enqueue(withId)));
    },
    async flush(flushOptions) {
      const reports = await flush(checkFlushOptions(flushOptions));
      return reports[0] ?? emptyFlushReport();
    },
    rows: checked(checkFilter, (a, filter) => a.rows(filter)),
    row: checked(checkId, (a, id) => a.row(id)),
    stats: () => api((a) => a.stats()),
    async resumeHeld() {
      const resumed = await api((a) => a.resumeHeld());
      if (resumed > 0) flushSoon({ force: true });
      return resumed;
    },
    async retry(id) {
      checkId(id);
      await api((a) => a.retry(id));
      flushSoon({ force: true });
    },
    discard: checked(checkId, (a, id) => a.discard(id)),
    conflicts: checked(checkLimit, (a, o) => a.conflicts(o)),
    async restore(conflictId) {
      checkId(conflictId, 'conflictId');
      // Safe to retry after a reconnect: a conflict's restore is one row, by a derived id.
      return written(await api((a) => a.restore(conflictId)));
    },
    receipts: checked(checkLimit, (a, o) => a.receipts(o)),
    receipt: checked(
      (v) => checkId(v, 'requestId'),
      (a, requestId) => a.receipt(requestId),
    ),
    health: () => api((a) => a.health()),
    exportTrace: (o) => api((a) => a.exportTrace(o)),
    requestPersistence,
    async setAuth(headers, authOptions = {}) {
      checkHeaders(headers);
      checkAuthOptions(authOptions);
      await connection.setAuth(headers, authOptions);
    },
  };
}
