import type { OutboxCore } from '../core/outbox-api.ts';
import { BUNDLE_VERSION, createOutboxCore } from '../core/outbox-core.ts';
import {
  checkTuning,
  DEFAULT_TUNING,
  type OutboxTuning,
  WORKER_LINGER_MS,
} from '../core/tuning.ts';
import type { CollectionHandler, ConflictPolicy } from '../model/handler.ts';
import type { FlushReport, OutboxEvent } from '../model/page-api.ts';
import type { Clock, IdSource, Logger } from '../model/ports.ts';
import type { OutboxStore } from '../model/store.ts';
import type { HealthBounds, SenderProgress } from '../plan/health.ts';
import { openIdbStore } from '../store/idb.ts';
import { systemClock } from './clock.ts';
import { type AuthHook, type Credentials, createCredentials } from './credentials.ts';
import { createFetchTransport } from './fetch-transport.ts';
import { createFlightRecorder, type FlightRecorder } from './flight-recorder.ts';
import { createFlushScheduler, type FlushScheduler } from './flush-scheduler.ts';
import { cryptoIds } from './ids.ts';
import { lazy } from './lazy.ts';
import { createWatchdog, DEFAULT_HEALTH_BOUNDS, type Watchdog } from './watchdog.ts';

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
  /**
   * The watchdog's bounds (§23): rows due with no flush for `stallAfterMs` (default 30 s) are a
   * stall it heals; failed attempts with no answer for `unreachableAfterMs` (default 5 min) are
   * reported as `unreachable`.
   */
  watchdog?: Partial<HealthBounds>;
  /** How many recent events the flight recorder keeps (§23). Default 500. */
  traceSize?: number;
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
  /** Records an event and hands it to the app's `onEvent`. */
  emit(event: { type: string }): void;
  readonly recorder: FlightRecorder;
  readonly watchdog: Watchdog;
  readonly bounds: HealthBounds;
  /** The sender's progress for `health()` (§23). */
  progress(): SenderProgress;
}

/**
 * The linger of an enqueue's flush. A page sender sends at once unless told otherwise: it runs
 * where no worker controls the page, and a worker starting meanwhile (activation, its start
 * flush) with none of the page's credentials would claim the rows first and hold them.
 */
function lingerOf(config: SenderConfig, kind: SenderWiring['kind']): number {
  if (config.batch === false) return 0;
  return config.batch?.lingerMs ?? (kind === 'sw' ? WORKER_LINGER_MS : 0);
}

/** What differs between the worker's sender and the page sender. */
export interface SenderWiring {
  kind: 'sw' | 'tab';
  /** The owners a run flushes when none are named. */
  owners(store: OutboxStore): Promise<string[]>;
  onRun?: (reports: FlushReport[], trigger: string) => void;
  /** What else heals a stall besides a flush (the worker registers Background Sync, §23). */
  heal?: () => void;
}

/** Builds a sender; nothing is opened until first use. */
export function createSender(config: SenderConfig, wiring: SenderWiring): Sender {
  // Tuning no flush could run with is refused here, where the app makes the engine (§14).
  checkTuning(tuning(config));
  const clock = config.clock ?? systemClock;
  const ids = config.ids ?? cryptoIds;
  const holderId = newHolderId(wiring.kind, ids);
  const origin = globalThis.location?.origin ?? 'http://localhost';
  const store = lazy(
    config.store ??
      (() => openIdbStore(config.dbName === undefined ? {} : { name: config.dbName })),
  );
  const credentials = createCredentials(store, config.auth);
  const recorder = createFlightRecorder(clock, config.traceSize);
  const emit = (event: { type: string }) => {
    recorder.record(event);
    // The app's handler must not stop a flush or the watchdog.
    try {
      config.onEvent?.(event as OutboxEvent);
    } catch (error) {
      config.logger?.warn('onEvent threw', { type: event.type, error: String(error) });
    }
  };
  const bounds = { ...DEFAULT_HEALTH_BOUNDS, ...config.watchdog };
  const online = () => globalThis.navigator?.onLine !== false;
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
      onEvent: emit,
      ...(config.logger ? { logger: config.logger } : {}),
    }),
  );
  const scheduler = createFlushScheduler({
    core,
    clock,
    owners: async () => wiring.owners(await store()),
    retryDelayMs: config.backoff?.baseMs ?? DEFAULT_TUNING.backoff.baseMs,
    maxWakeDelayMs: config.backoff?.maxMs ?? DEFAULT_TUNING.backoff.maxMs,
    online,
    lingerMs: lingerOf(config, wiring.kind),
    onRun(reports, trigger) {
      watchdog.observe(reports);
      wiring.onRun?.(reports, trigger);
    },
  });
  const watchdog = createWatchdog({
    clock,
    bounds,
    online,
    emit,
    heal() {
      scheduler.run('watchdog').catch(() => undefined);
      wiring.heal?.();
    },
    ...(config.logger ? { logger: config.logger } : {}),
  });
  return {
    holderId,
    clock,
    store,
    core,
    scheduler,
    credentials,
    emit,
    recorder,
    watchdog,
    bounds,
    progress: () => ({ ...watchdog.progress(), wakeAt: scheduler.wakeAt() }),
  };
}

const TUNING_KEYS = [
  'leaseMs',
  'sendMarginMs',
  'concurrency',
  'batchSize',
  'plansPerCommit',
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

/** A fresh holder id for one sender instance (SPEC §4): a worker start or one tab. */
function newHolderId(kind: 'sw' | 'tab', ids: IdSource): string {
  return `${kind}-${ids.hex24()}`;
}
