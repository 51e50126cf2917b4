import type { OutboxCore } from '../core/outbox-api.ts';
import { BUNDLE_VERSION, createOutboxCore } from '../core/outbox-core.ts';
import { DEFAULT_TUNING, type OutboxTuning } from '../core/tuning.ts';
import type { CollectionHandler, ConflictPolicy } from '../model/handler.ts';
import type { FlushReport, OutboxEvent } from '../model/page-api.ts';
import type { Clock, IdSource, Logger } from '../model/ports.ts';
import type { OutboxStore } from '../model/store.ts';
import { openIdbStore } from '../store/idb.ts';
import { systemClock } from './clock.ts';
import { type AuthHook, type Credentials, createCredentials } from './credentials.ts';
import { createFetchTransport } from './fetch-transport.ts';
import { createFlushScheduler, type FlushScheduler } from './flush-scheduler.ts';
import { cryptoIds, newHolderId } from './ids.ts';
import { lazy } from './lazy.ts';

/**
 * One sender instance wired with its real ports (SPEC §1: one dispatcher, different ports): the
 * IndexedDB store, the fetch transport with send-time credentials, the clock and ids, a fresh
 * holder id, the core and its flush scheduler. The service worker and the page sender each build
 * one; they differ only in their triggers.
 */

/** What a sender is configured with (the shared part of SPEC §14). */
export interface SenderConfig extends Partial<OutboxTuning> {
  /** One handler per collection, e.g. `{ notes: restHandler({ baseUrl: '/api/notes' }) }`. */
  collections: Record<string, CollectionHandler>;
  /** Credentials at send time for an owner (§13); null/undefined → rows wait as `held`. */
  auth?: AuthHook;
  /** Conflict policy for handlers that set none (§10). */
  conflict?: ConflictPolicy;
  /** Origins requests may go to. Default: this realm's own origin. */
  allowedOrigins?: string[];
  /** One attempt's timeout. Default: the lease, so a request does not outlive its claim. */
  requestTimeoutMs?: number;
  /** IndexedDB database name (§2). Default `sw-outbox`. */
  dbName?: string;
  onEvent?: (event: OutboxEvent) => void;
  logger?: Logger;
  /** Ports, for tests: a store, `fetch`, a clock and an id source. */
  store?: () => Promise<OutboxStore>;
  fetch?: typeof fetch;
  clock?: Clock;
  ids?: IdSource;
}

/** One sender instance: its holder id, clock, store, core, scheduler and credentials. */
export interface Sender {
  readonly holderId: string;
  readonly clock: Clock;
  store(): Promise<OutboxStore>;
  core(): Promise<OutboxCore>;
  readonly scheduler: FlushScheduler;
  readonly credentials: Credentials;
}

/** How long an enqueue's flush in the worker waits to fill a batch (SPEC §15.1). */
const DEFAULT_LINGER_MS = 5;

/**
 * The linger of an enqueue's flush. A page sender sends at once unless told otherwise: it runs
 * where no worker controls the page, and a worker starting meanwhile (activation, its start
 * flush) with none of the page's credentials would claim the rows first and hold them.
 */
function lingerOf(config: SenderConfig, kind: SenderWiring['kind']): number {
  if (config.batch === false) return 0;
  return config.batch?.lingerMs ?? (kind === 'sw' ? DEFAULT_LINGER_MS : 0);
}

/** What differs between the worker's sender and the page sender. */
export interface SenderWiring {
  kind: 'sw' | 'tab';
  /** The owners a run flushes when none are named. */
  owners(store: OutboxStore): Promise<string[]>;
  onRun?: (reports: FlushReport[], trigger: string) => void;
}

/** Builds a sender; nothing is opened until first use. */
export function createSender(config: SenderConfig, wiring: SenderWiring): Sender {
  const clock = config.clock ?? systemClock;
  const ids = config.ids ?? cryptoIds;
  const holderId = newHolderId(wiring.kind, ids);
  const origin = globalThis.location?.origin ?? 'http://localhost';
  const store = lazy(
    config.store ??
      (() => openIdbStore(config.dbName === undefined ? {} : { name: config.dbName })),
  );
  const credentials = createCredentials(store, config.auth);
  const core = lazy(async () =>
    createOutboxCore({
      ...tuning(config),
      store: await store(),
      transport: createFetchTransport({
        auth: credentials.source,
        allowedOrigins: config.allowedOrigins ?? [origin],
        baseUrl: globalThis.location?.href ?? origin,
        timeoutMs: config.requestTimeoutMs ?? config.leaseMs ?? DEFAULT_TUNING.leaseMs,
        clock,
        ...(config.batch ? { batch: config.batch } : {}),
        ...(config.fetch ? { fetch: config.fetch } : {}),
      }),
      clock,
      ids,
      handlers: withConflictDefault(config.collections, config.conflict),
      holderId,
      bundle: BUNDLE_VERSION,
      hasCredentials: async (owner) => (await credentials.source(owner)) !== null,
      ...(config.onEvent ? { onEvent: config.onEvent } : {}),
      ...(config.logger ? { logger: config.logger } : {}),
    }),
  );
  const scheduler = createFlushScheduler({
    core,
    clock,
    owners: async () => wiring.owners(await store()),
    retryDelayMs: config.backoff?.baseMs ?? 1000,
    maxWakeDelayMs: config.backoff?.maxMs ?? 300_000,
    online: () => globalThis.navigator?.onLine !== false,
    lingerMs: lingerOf(config, wiring.kind),
    ...(wiring.onRun ? { onRun: wiring.onRun } : {}),
  });
  return { holderId, clock, store, core, scheduler, credentials };
}

const TUNING_KEYS = [
  'leaseMs',
  'sendMarginMs',
  'concurrency',
  'batchSize',
  'backoff',
  'maxRowBytes',
  'receipts',
  'conflictLedgerMax',
  'maxConflictSuccessors',
  'batch',
] as const;

function tuning(config: SenderConfig): Partial<OutboxTuning> {
  const out: Record<string, unknown> = {};
  for (const key of TUNING_KEYS) if (config[key] !== undefined) out[key] = config[key];
  return out as Partial<OutboxTuning>;
}

/** Applies the sender-wide conflict policy to handlers without their own (§10). */
function withConflictDefault(
  collections: Record<string, CollectionHandler>,
  conflict: ConflictPolicy | undefined,
): Record<string, CollectionHandler> {
  if (conflict === undefined) return collections;
  const out: Record<string, CollectionHandler> = {};
  for (const [name, handler] of Object.entries(collections)) {
    // Object.create keeps the prototype methods of class-based handlers.
    out[name] =
      handler.conflict === undefined
        ? (Object.create(handler, {
            conflict: { value: conflict, enumerable: true },
          }) as CollectionHandler)
        : handler;
  }
  return out;
}
