import type { OutboxCore } from '../core/outbox-api.ts';
import type { FlushOptions, FlushReport } from '../model/page-api.ts';
import type { Clock } from '../model/ports.ts';

/**
 * Runs flushes for a set of owners and keeps one wake-up timer at the earliest `nextAttemptAt`
 * (SPEC §12). Overlapping triggers need no queue here: `core.flush` already runs one loop per
 * owner and folds calls made during a pass into one more pass. Used by the worker (which keeps
 * the wake-up inside `waitUntil`) and by the page sender.
 */

export interface FlushRun {
  reports: FlushReport[];
  /** Settles after the wake-up this run armed has flushed again; undefined when none is due. */
  wake: Promise<void> | undefined;
}

/** What a trigger asks of a run: which owners, forced or not, and whether it may linger. */
export interface RunOptions extends FlushOptions {
  owners?: string[];
  /**
   * The run was triggered by an enqueue: wait `lingerMs` first, so rows enqueued back to back
   * go in one batch (SPEC §15.1). Runs that linger together share one flush.
   */
  linger?: boolean;
}

/** Options of {@link createFlushScheduler}. */
export interface FlushSchedulerOptions {
  core: () => Promise<OutboxCore>;
  clock: Clock;
  /** The owners a run flushes when none are named (the worker's known owners, §12). */
  owners: () => Promise<string[]>;
  /** Delay before trying again after a flush that stopped early without a `nextAttemptAt`. */
  retryDelayMs: number;
  /** The longest a wake-up is allowed to wait; later rows are found by the next trigger. */
  maxWakeDelayMs: number;
  /**
   * Whether the device is online. No wake-up is armed while offline: retrying then only fails;
   * `online` in a page and Background Sync in a worker bring the loop back (§12).
   */
  online?: () => boolean;
  /** Called with each run's reports (telemetry, sync registration). */
  onRun?: (reports: FlushReport[], trigger: string) => void;
  /** How long a lingering run waits before it flushes (§15.1). Default 0: it does not wait. */
  lingerMs?: number;
}

/** Runs flushes for a sender's owners and keeps its one wake-up timer. */
export interface FlushScheduler {
  run(trigger: string, options?: RunOptions): Promise<FlushRun>;
  /** Cancels the wake-up timer and lets whoever waits on it go; later runs may arm a new one. */
  releaseWake(): void;
  /** Cancels the wake-up timer and refuses later runs (a page sender that handed over). */
  stop(): void;
  /** When the wake-up timer fires, or null when none is armed (`health()`, §23). */
  wakeAt(): number | null;
}

/** Whether a run left work that a later attempt should pick up (transient failures, backoff). */
export function needsRetry(reports: readonly FlushReport[]): boolean {
  return reports.some((report) => report.remaining > 0 || report.stopped !== undefined);
}

/** The earliest `nextAttemptAt` among reports that still wait, if any. */
export function earliestAttempt(reports: readonly FlushReport[]): number | undefined {
  let at: number | undefined;
  for (const report of reports) {
    if (
      report.remaining > 0 &&
      report.nextAttemptAt !== null &&
      (at === undefined || report.nextAttemptAt < at)
    ) {
      at = report.nextAttemptAt;
    }
  }
  return at;
}

/** Triggers the browser sends when it believes the device is connected. */
const CONNECTED_TRIGGERS = new Set(['sync', 'periodicsync', 'push']);

/** Creates the flush scheduler of one sender. */
export function createFlushScheduler(options: FlushSchedulerOptions): FlushScheduler {
  let timer:
    | {
        at: number;
        handle: ReturnType<typeof setTimeout>;
        done: Promise<void>;
        resolve: (v: Promise<void>) => void;
      }
    | undefined;
  let stopped = false;
  /** Runs waiting out their linger, by what they flush. */
  const lingering = new Map<string, Promise<FlushRun>>();

  function arm(at: number): Promise<void> {
    if (timer !== undefined && timer.at <= at) return timer.done;
    // A floor keeps a `Retry-After: 0` from turning the wake-up into a tight loop.
    const floor = Math.min(options.retryDelayMs, 1000);
    const delay = Math.min(Math.max(floor, at - options.clock.now()), options.maxWakeDelayMs);
    let done: Promise<void>;
    let resolve: (v: Promise<void>) => void;
    if (timer === undefined) {
      ({ done, resolve } = deferred());
    } else {
      clearTimeout(timer.handle);
      ({ done, resolve } = timer);
    }
    const handle = setTimeout(() => {
      timer = undefined;
      // The next run arms the next wake-up; chaining keeps the caller's waitUntil alive through it.
      // A failed run ends the chain; the next trigger starts a new one.
      resolve(
        run('timer').then(
          (next) => next.wake,
          () => undefined,
        ),
      );
    }, delay);
    timer = { at, handle, done, resolve };
    return done;
  }

  function wakeFor(reports: FlushReport[]): Promise<void> | undefined {
    if (options.online?.() === false) return undefined;
    let at: number | undefined;
    for (const report of reports) {
      const due =
        report.remaining > 0 && report.nextAttemptAt !== null
          ? report.nextAttemptAt
          : report.stopped !== undefined || report.remaining > 0
            ? options.clock.now() + options.retryDelayMs
            : undefined;
      if (due !== undefined && (at === undefined || due < at)) at = due;
    }
    return at === undefined ? undefined : arm(at);
  }

  async function run(trigger: string, runOptions: RunOptions = {}): Promise<FlushRun> {
    const { linger, ...flushOptions } = runOptions;
    const lingerMs = options.lingerMs ?? 0;
    if (linger && lingerMs > 0 && !stopped) {
      // Every enqueue of the window joins the first one's run: one flush, full batches.
      const key = `${flushOptions.force === true}:${flushOptions.owners?.join('\u0000') ?? '*'}`;
      let waiting = lingering.get(key);
      if (waiting === undefined) {
        waiting = new Promise((resolve) => setTimeout(resolve, lingerMs)).then(() => {
          lingering.delete(key);
          return run(trigger, flushOptions);
        });
        lingering.set(key, waiting);
      }
      return waiting;
    }
    if (stopped) return { reports: [], wake: undefined };
    // Offline, a flush can only fail, and it would compete with the enqueue that triggered it.
    // `online` and Background Sync bring the loop back; a forced flush, and the browser's own
    // sync, periodic sync and push events (which come with connectivity), still run (§12).
    if (!flushOptions.force && !CONNECTED_TRIGGERS.has(trigger) && options.online?.() === false) {
      return { reports: [], wake: undefined };
    }
    const { owners: named, ...rest } = flushOptions;
    const [core, owners] = await Promise.all([
      options.core(),
      named ? Promise.resolve(named) : options.owners(),
    ]);
    const reports = await Promise.all(owners.map((owner) => core.flush(owner, rest)));
    options.onRun?.(reports, trigger);
    return { reports, wake: stopped ? undefined : wakeFor(reports) };
  }

  function releaseWake(): void {
    if (timer === undefined) return;
    clearTimeout(timer.handle);
    timer.resolve(Promise.resolve());
    timer = undefined;
  }

  return {
    run,
    releaseWake,
    stop() {
      stopped = true;
      releaseWake();
    },
    wakeAt: () => timer?.at ?? null,
  };
}

function deferred(): { done: Promise<void>; resolve: (v: Promise<void>) => void } {
  let resolve!: (v: Promise<void>) => void;
  const done = new Promise<void>((r) => {
    resolve = r;
  });
  return { done, resolve };
}
