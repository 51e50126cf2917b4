import {
  FLUSH_MESSAGE,
  FLUSHED_MESSAGE,
  type FlushMessage,
  type FlushReply,
  isOutboxMessage,
  PERIODIC_SYNC_TAG,
  PUSH_FLUSH_TYPE,
  SYNC_TAG,
} from '../shared/model/connection.ts';
import {
  earliestAttempt,
  type FlushRun,
  needsRetry,
  type RunOptions,
} from '../shared/runtime/flush-scheduler.ts';
import type { EngineContext } from './context.ts';

/**
 * The worker's triggers (SPEC §12): every event that may find work ends in one scheduler run,
 * kept alive with `waitUntil` together with the backoff wake-up it arms. Triggers that overlap
 * fold into the core's one loop per owner.
 */

/** Passes one sync event may make, and how long it may wait for a retry due soon. */
const SYNC_PASSES = 3;
const SYNC_WAIT_MS = 10_000;

/**
 * Wires the worker's events to the scheduler (§12): install, activate, sync, periodicsync, push
 * and the page's flush messages; each run stays alive in `waitUntil` with its wake-up.
 */
export function attachTriggers(scope: ServiceWorkerGlobalScope, ctx: EngineContext): void {
  const { config } = ctx;

  ctx.observeRuns((reports, trigger) => {
    const remaining = reports.reduce((sum, report) => sum + report.remaining, 0);
    const stopped = reports.find((report) => report.stopped)?.stopped;
    ctx.emit({
      type: 'flushed',
      trigger,
      holderId: ctx.holderId,
      remaining,
      ...(stopped ? { stopped } : {}),
    });
    // Offline failures: let the browser wake us when connectivity returns, even with no tab.
    if (needsRetry(reports) && scope.navigator.onLine === false) {
      scope.registration.sync?.register(SYNC_TAG).catch(() => undefined);
    }
  });

  const run = (trigger: string, options: RunOptions = {}): Promise<FlushRun> =>
    ctx.scheduler.run(trigger, options).catch((error: unknown) => {
      ctx.emit({ type: 'trigger_failed', trigger, holderId: ctx.holderId, error: String(error) });
      throw error;
    });
  /** A run plus its wake-up, for triggers whose event may stay alive until then. */
  const runAndWake = (trigger: string, options?: RunOptions) =>
    run(trigger, options).then(
      (result) => result.wake,
      () => undefined,
    );

  // Chromium activates an update only once the old worker's extended events have settled: a
  // wake-up held in waitUntil would hold the update back for as long as the backoff (§17).
  scope.registration.addEventListener('updatefound', () => ctx.scheduler.releaseWake());

  scope.addEventListener('install', (event) => {
    if (config.skipWaiting !== false) event.waitUntil(scope.skipWaiting());
  });

  scope.addEventListener('activate', (event) => {
    if (config.clientsClaim !== false) event.waitUntil(scope.clients.claim());
    // Not inside activate's waitUntil: a long flush would hold back activation and every fetch.
    void runAndWake('activate');
  });

  /**
   * A sync respects backoff (it also fires right after every enqueue, so forcing it would ignore
   * a server's Retry-After), but waits inside the event for a retry due soon — the usual case
   * when connectivity returns after a few failed attempts — before asking the browser for another.
   */
  const syncFlush = async (lastChance: boolean) => {
    // The client registers a sync with every enqueue: it may wait to fill a batch (§15.1).
    let result = await run('sync', { linger: true });
    for (let pass = 1; pass < SYNC_PASSES && needsRetry(result.reports); pass++) {
      const at = earliestAttempt(result.reports);
      const wait = at === undefined ? undefined : at - ctx.clock.now();
      if (wait === undefined || wait > SYNC_WAIT_MS) break;
      await new Promise((resolve) => setTimeout(resolve, Math.max(wait, 0)));
      result = await run('sync');
    }
    if (lastChance || !needsRetry(result.reports)) return;
    const remaining = result.reports.reduce((sum, report) => sum + report.remaining, 0);
    ctx.emit({ type: 'sync_retry', holderId: ctx.holderId, remaining });
    // Rejecting asks the browser to schedule another sync (§12).
    throw new Error(`sw-outbox: ${remaining} rows wait for a retry`);
  };

  scope.addEventListener('sync', (event) => {
    if (event.tag === SYNC_TAG) event.waitUntil(syncFlush(event.lastChance));
  });

  scope.addEventListener('periodicsync', (event) => {
    // Periodic sync fires at most a few times a day: whatever waits by then should go.
    if (event.tag === PERIODIC_SYNC_TAG)
      event.waitUntil(runAndWake('periodicsync', { force: true }));
  });

  scope.addEventListener('push', (event) => {
    if (config.flushOnEveryPush || isFlushPush(event.data)) {
      event.waitUntil(runAndWake('push', { force: true }));
    }
  });

  scope.addEventListener('message', (event) => {
    const data: unknown = event.data;
    if ((data as { type?: unknown } | null)?.type === 'SKIP_WAITING') {
      // workbox-window's messageSkipWaiting() (an app that prompts before updating).
      event.waitUntil(scope.skipWaiting());
      return;
    }
    if (!isOutboxMessage<FlushMessage>(data, FLUSH_MESSAGE)) return;
    const reply = event.ports[0];
    const options: RunOptions = { force: data.force === true, linger: data.linger === true };
    if (typeof data.owner === 'string') options.owners = [data.owner];
    const done = run('message', options).then(
      (result) => {
        reply?.postMessage({
          type: FLUSHED_MESSAGE,
          ok: true,
          reports: result.reports,
        } satisfies FlushReply);
        return result.wake;
      },
      (error: unknown) => {
        const code = (error as { code?: unknown }).code;
        const failure: FlushReply = {
          type: FLUSHED_MESSAGE,
          ok: false,
          error: {
            message: String((error as Error).message ?? error),
            ...(typeof code === 'string' ? { code } : {}),
          },
        };
        reply?.postMessage(failure);
      },
    );
    event.waitUntil(done);
  });

  // Worker start: the fallback where Background Sync is missing (§12).
  void runAndWake('start');
}

function isFlushPush(data: PushMessageData | null): boolean {
  if (data === null) return false;
  try {
    return (data.json() as { type?: unknown } | null)?.type === PUSH_FLUSH_TYPE;
  } catch {
    return false;
  }
}
