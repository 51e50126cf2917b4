import { knownOwners, rememberOwner } from '../shared/core/known-owners.ts';
import type { WorkerEnqueueOptions } from '../shared/core/outbox-api.ts';
import { SYNC_TAG } from '../shared/model/connection.ts';
import type {
  EnqueueInput,
  EnqueueResult,
  FlushOptions,
  FlushReport,
  OutboxApi,
} from '../shared/model/page-api.ts';
import { handOverCredentials } from '../shared/runtime/credentials.ts';
import { traceLines } from '../shared/runtime/flight-recorder.ts';
import type { FlushRun } from '../shared/runtime/flush-scheduler.ts';
import { createSender } from '../shared/runtime/sender.ts';
import { acceptConnections } from './connections.ts';
import type { EngineContext, EngineEvent, OutboxEngineConfig } from './context.ts';
import { attachTriggers } from './triggers.ts';

/** The page API as code in the worker gets it, with what only worker code may ask for (§22). */
export interface WorkerOutboxApi extends OutboxApi {
  enqueue(input: EnqueueInput, options?: WorkerEnqueueOptions): Promise<EnqueueResult>;
}

/** The engine of one worker start. */
export interface OutboxEngine {
  /** This worker start's holder id (a new one each start, §4). */
  readonly holderId: string;
  /** Wires install/activate, sync, periodicsync, push and message (§12). Call at top level. */
  attach(scope: ServiceWorkerGlobalScope): void;
  /** Flushes the named owners, or every known owner. */
  flush(options?: FlushOptions & { owners?: string[] }): Promise<FlushRun>;
  /**
   * The page API for one owner, for code running in the worker itself. The owner is remembered
   * like a page's, so what this code enqueues is flushed with every tab closed (§12).
   */
  forOwner(owner: string): Promise<WorkerOutboxApi>;
  /**
   * Marks an owner whose requests were made with credentials: its rows wait `held` until
   * credentials for it come, never sent without (§13). The secret itself is never stored.
   */
  requireCredentials(owner: string): Promise<void>;
  /** This worker start's recent events as JSON lines, without credentials or payloads (§23). */
  exportTrace(): string;
  /** Hands over credentials for an owner, as a page's `setAuth` does. */
  setAuth(
    owner: string,
    headers: Record<string, string> | null,
    options?: { persist?: boolean },
  ): Promise<void>;
}

/** Creates the outbox engine for a service worker (SPEC §14). */
export function createOutboxEngine(config: OutboxEngineConfig): OutboxEngine {
  const emit = (event: EngineEvent) => {
    try {
      config.onEvent?.(event);
    } catch (error) {
      config.logger?.warn('onEvent threw', { error: String(error) });
    }
  };
  const observers = new Set<(reports: FlushReport[], trigger: string) => void>();
  let scope: ServiceWorkerGlobalScope | undefined;
  const sender = createSender(
    { ...config, onEvent: emit },
    {
      kind: 'sw',
      owners: knownOwners,
      onRun: (reports, trigger) => {
        for (const observer of observers) observer(reports, trigger);
      },
      // A stall (§23): the browser may have dropped the sync registration with rows still due.
      heal: () => void scope?.registration.sync?.register(SYNC_TAG).catch(() => undefined),
    },
  );
  const context: EngineContext = {
    ...sender,
    config,
    observeRuns: (observer) => observers.add(observer),
  };
  return {
    holderId: sender.holderId,
    attach(target) {
      scope = target;
      attachTriggers(target, context);
      acceptConnections(target, context);
    },
    flush: (options) => sender.scheduler.run('api', options),
    async forOwner(owner) {
      await rememberOwner(await sender.store(), owner);
      return (await sender.core()).forOwner(owner);
    },
    requireCredentials: (owner) => sender.credentials.require(owner),
    exportTrace: () => traceLines(sender.recorder.entries()),
    setAuth: async (owner, headers, options) => {
      const api = (await sender.core()).forOwner(owner);
      await handOverCredentials(sender.credentials, api, owner, headers, options);
    },
  };
}
