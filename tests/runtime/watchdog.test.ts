import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FlushReport, OutboxEvent } from '../../shared/model/page-api.ts';
import { emptyFlushReport } from '../../shared/model/page-api.ts';
import { createWatchdog } from '../../shared/runtime/watchdog.ts';

/**
 * SPEC §23: the watchdog sees each stall within its bound and reports it once; it heals what
 * the library can (rows due and no flush since) and arms nothing while nothing waits.
 */

const report = (over: Partial<FlushReport> = {}): FlushReport => ({
  ...emptyFlushReport(),
  ...over,
});
const BOUNDS = { stallAfterMs: 30_000, unreachableAfterMs: 300_000 };

function watchdog(online = () => true) {
  const events: OutboxEvent[] = [];
  const heal = vi.fn();
  const warn = vi.fn();
  const dog = createWatchdog({
    clock: { now: () => Date.now() },
    bounds: BOUNDS,
    online,
    heal,
    emit: (event) => events.push(event),
    logger: { debug: () => undefined, warn, error: () => undefined },
  });
  return { dog, events, heal, warn };
}

describe('the watchdog (SPEC §23)', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('arms no timer while nothing waits: an idle queue costs nothing', () => {
    const { dog } = watchdog();
    dog.observe([report({ claimed: 2, succeeded: 2 })]);
    expect(vi.getTimerCount()).toBe(0);
    dog.observe([report()]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('heals rows due with no flush since, once the bound past their time has gone by', () => {
    const { dog, heal, events, warn } = watchdog();
    dog.observe([report({ transient: 1, remaining: 1, nextAttemptAt: Date.now() + 10_000 })]);
    expect(vi.getTimerCount()).toBe(1);
    // The wake-up timer that should have flushed at +10 s is lost: nothing runs.
    vi.advanceTimersByTime(10_000 + BOUNDS.stallAfterMs - 1);
    expect(heal).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(heal).toHaveBeenCalledTimes(1);
    expect(events).toEqual([{ type: 'stalled', cause: 'not_attempted', action: 'healed' }]);
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('stays quiet while runs keep coming: each run moves the check on', () => {
    const { dog, heal } = watchdog();
    for (let i = 0; i < 10; i++) {
      dog.observe([report({ transient: 1, remaining: 1, nextAttemptAt: Date.now() + 5_000 })]);
      vi.advanceTimersByTime(20_000);
    }
    expect(heal).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(1);
    dog.observe([report({ succeeded: 1 })]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('waits offline: the online event and Background Sync bring the loop back', () => {
    let online = true;
    const { dog, heal } = watchdog(() => online);
    dog.observe([report({ remaining: 1, nextAttemptAt: Date.now() })]);
    online = false;
    vi.advanceTimersByTime(BOUNDS.stallAfterMs * 2);
    expect(heal).not.toHaveBeenCalled();
  });

  it('reports what only the app can fix once each, until a row goes out again', () => {
    const { dog, events, heal } = watchdog();
    dog.observe([report({ claimed: 1, held: 1 })]);
    dog.observe([report({ claimed: 1, held: 1, blocked: 1 })]);
    dog.observe([report({ stopped: 'storage' })]);
    dog.observe([report({ stopped: 'storage', blocked: 1 })]);
    expect(events).toEqual([
      { type: 'stalled', cause: 'held', action: 'reported' },
      { type: 'stalled', cause: 'blocked', action: 'reported' },
      { type: 'stalled', cause: 'quota', action: 'reported' },
    ]);
    expect(dog.progress().quota).toBe(true);
    dog.observe([report({ succeeded: 1 })]);
    expect(dog.progress().quota).toBe(false);
    dog.observe([report({ held: 1 })]);
    expect(events.at(-1)).toEqual({ type: 'stalled', cause: 'held', action: 'reported' });
    expect(events).toHaveLength(4);
    expect(heal).not.toHaveBeenCalled();
  });

  it('names the server unreachable once failures outlast their bound, and forgets it on a success', () => {
    const { dog, events } = watchdog();
    const failing = () =>
      dog.observe([report({ transient: 1, remaining: 1, nextAttemptAt: Date.now() + 600_000 })]);
    failing();
    const since = Date.now();
    vi.advanceTimersByTime(BOUNDS.unreachableAfterMs);
    failing();
    expect(events).toEqual([]);
    vi.advanceTimersByTime(1);
    failing();
    expect(dog.progress().unreachableSince).toBe(since);
    expect(events).toEqual([{ type: 'stalled', cause: 'unreachable', action: 'reported' }]);
    dog.observe([report({ succeeded: 1 })]);
    expect(dog.progress()).toMatchObject({ unreachableSince: null, lastSuccessAt: Date.now() });
  });
});
