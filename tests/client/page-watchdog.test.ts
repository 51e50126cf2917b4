import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OutboxClient } from '../../client/connect.ts';
import { observeHealth } from '../../client/observable.ts';
import type { OutboxHealth, StallCause } from '../../shared/model/page-api.ts';
import { emptyFlushReport } from '../../shared/model/page-api.ts';

/**
 * SPEC §23, the page's watchdog: while an app observes health, a queue whose due rows are not
 * being attempted, or a worker that does not answer, gets a flush from the page (a message that
 * starts a stopped worker, or the page sender's flush); a healthy or empty queue gets none, and
 * an empty one is not read again until its rows change.
 */

function health(total: number, stalled: StallCause | null): OutboxHealth {
  return {
    at: 0,
    counts: {} as OutboxHealth['counts'],
    total,
    oldestPendingAgeMs: null,
    lastSuccessAt: null,
    nextAttemptAt: null,
    senders: {},
    storage: {},
    stalled,
    causes: stalled === null ? [] : [stalled],
  };
}

function fakeOutbox(answers: Array<OutboxHealth | Error>) {
  let change: (() => void) | undefined;
  const outbox = {
    // The live view answers later (after a call on the port); `change` delivers a snapshot.
    subscribe: vi.fn((listener: () => void) => {
      change = listener;
      return () => {
        change = undefined;
      };
    }),
    health: vi.fn(async () => {
      const next = answers.length > 1 ? answers.shift() : answers[0];
      if (next instanceof Error) throw next;
      return next as OutboxHealth;
    }),
    flush: vi.fn(async () => emptyFlushReport()),
  };
  return { outbox: outbox as unknown as OutboxClient & typeof outbox, change: () => change?.() };
}

describe('the page watchdog (SPEC §23)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('flushes when due rows are not being attempted, once per read', async () => {
    const { outbox } = fakeOutbox([health(2, 'not_attempted'), health(2, null)]);
    const stop = observeHealth(outbox, { intervalMs: 1_000 }).subscribe(() => undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(outbox.flush).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(outbox.flush).toHaveBeenCalledTimes(1);
    expect(outbox.health.mock.calls.length).toBeGreaterThan(4);
    stop();
  });

  it('flushes when the worker does not answer: the message starts a stopped worker', async () => {
    const { outbox } = fakeOutbox([new Error('timeout'), health(1, null)]);
    const stop = observeHealth(outbox, { intervalMs: 1_000 }).subscribe(() => undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(outbox.flush).toHaveBeenCalledTimes(1);
    stop();
  });

  it('leaves causes only the app can fix to the app, and can be turned off', async () => {
    for (const [answers, heal] of [
      [[health(1, 'held')], true],
      [[health(1, 'not_attempted')], false],
    ] as const) {
      const { outbox } = fakeOutbox([...answers]);
      const stop = observeHealth(outbox, { intervalMs: 1_000, heal }).subscribe(() => undefined);
      await vi.advanceTimersByTimeAsync(3_000);
      expect(outbox.flush).not.toHaveBeenCalled();
      stop();
    }
  });

  it('reads an empty queue at once and when its rows change, and nothing after the last subscriber', async () => {
    const { outbox, change } = fakeOutbox([health(0, null)]);
    const stop = observeHealth(outbox, { intervalMs: 1_000 }).subscribe(() => undefined);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(outbox.health).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
    change();
    await vi.advanceTimersByTimeAsync(0);
    expect(outbox.health).toHaveBeenCalledTimes(2);
    stop();
    change();
    expect(outbox.health).toHaveBeenCalledTimes(2);
  });
});
