import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { OutboxCore } from '../../shared/core/outbox-api.ts';
import type { FlushReport } from '../../shared/model/page-api.ts';
import { emptyFlushReport } from '../../shared/model/page-api.ts';
import {
  createFlushScheduler,
  earliestAttempt,
  needsRetry,
} from '../../shared/runtime/flush-scheduler.ts';

const report = (over: Partial<FlushReport> = {}): FlushReport => ({
  ...emptyFlushReport(),
  ...over,
});

/** A core whose flushes answer from a script, recording who was flushed when. */
function scriptedCore(script: FlushReport[]) {
  const calls: Array<{ owner: string; at: number; force: boolean }> = [];
  const core = {
    holderId: 'sw-test',
    forOwner: () => {
      throw new Error('unused');
    },
    async flush(owner: string, options: { force?: boolean } = {}) {
      calls.push({ owner, at: Date.now(), force: options.force === true });
      return script.shift() ?? report();
    },
  } satisfies OutboxCore;
  return { core, calls };
}

function scheduler(script: FlushReport[], online = () => true, lingerMs?: number) {
  const { core, calls } = scriptedCore(script);
  const s = createFlushScheduler({
    core: async () => core,
    clock: { now: () => Date.now() },
    owners: async () => ['alice', 'bob'],
    retryDelayMs: 1000,
    maxWakeDelayMs: 60_000,
    online,
    ...(lingerMs === undefined ? {} : { lingerMs }),
  });
  return { s, calls };
}

describe('the flush scheduler', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('flushes every known owner when none is named, and only the named ones otherwise', async () => {
    const { s, calls } = scheduler([]);
    await s.run('start');
    await s.run('message', { owners: ['bob'], force: true });
    expect(calls.map((c) => [c.owner, c.force])).toEqual([
      ['alice', false],
      ['bob', false],
      ['bob', true],
    ]);
  });

  it('wakes once at the earliest nextAttemptAt and the wake-up settles after that run', async () => {
    const { s, calls } = scheduler([
      report({ remaining: 1, nextAttemptAt: 1_005_000 }),
      report({ remaining: 2, nextAttemptAt: 1_003_000 }),
    ]);
    const { wake } = await s.run('start');
    expect(wake).toBeDefined();
    let woke = false;
    void wake!.then(() => {
      woke = true;
    });
    await vi.advanceTimersByTimeAsync(2_999);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(4);
    expect(calls[2]!.at).toBe(1_003_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(woke).toBe(true);
  });

  it('keeps one timer: a later nextAttemptAt does not move an earlier wake-up', async () => {
    const { s, calls } = scheduler([
      report({ remaining: 1, nextAttemptAt: 1_002_000 }),
      report(),
      report({ remaining: 1, nextAttemptAt: 1_009_000 }),
      report(),
    ]);
    await s.run('start');
    await s.run('message');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(calls.map((c) => c.at)).toEqual([
      1_000_000, 1_000_000, 1_000_000, 1_000_000, 1_002_000, 1_002_000,
    ]);
  });

  it('arms no wake-up while offline', async () => {
    const { s } = scheduler(
      [report({ remaining: 1, nextAttemptAt: 1_001_000, stopped: 'offline' })],
      () => false,
    );
    expect((await s.run('start')).wake).toBeUndefined();
  });

  it('retries a flush that stopped early after the retry delay, never sooner than a floor', async () => {
    const { s, calls } = scheduler([
      report({ stopped: 'conflict_storm' }),
      report({ remaining: 1, nextAttemptAt: 1_000_000 }),
    ]);
    await s.run('start');
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(4);
  });

  it('lets whoever waits on a wake-up go when it is released, and refuses runs once stopped', async () => {
    const { s, calls } = scheduler([report({ remaining: 1, nextAttemptAt: 1_050_000 })]);
    const { wake } = await s.run('start');
    s.releaseWake();
    await expect(wake).resolves.toBeUndefined();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toHaveLength(2);
    s.stop();
    expect(await s.run('message')).toEqual({ reports: [], wake: undefined });
  });

  it('tells from reports whether work waits, and when the earliest is due', () => {
    expect(needsRetry([report()])).toBe(false);
    expect(needsRetry([report({ remaining: 1 })])).toBe(true);
    expect(needsRetry([report({ stopped: 'storage' })])).toBe(true);
    expect(
      earliestAttempt([
        report({ remaining: 1, nextAttemptAt: 9 }),
        report({ remaining: 1, nextAttemptAt: 5 }),
      ]),
    ).toBe(5);
    expect(earliestAttempt([report({ nextAttemptAt: 5 })])).toBeUndefined();
  });

  it('skips flushes offline that could only fail, but not forced ones nor the browser’s sync events', async () => {
    const { s, calls } = scheduler([], () => false);
    expect(await s.run('message')).toEqual({ reports: [], wake: undefined });
    expect(calls).toHaveLength(0);
    await s.run('message', { force: true });
    await s.run('sync');
    expect(calls.map((c) => [c.owner, c.force])).toEqual([
      ['alice', true],
      ['bob', true],
      ['alice', false],
      ['bob', false],
    ]);
  });

  it('lets an enqueue’s run linger to fill a batch: every enqueue of the window shares one flush (SPEC §15.1)', async () => {
    const { s, calls } = scheduler([], () => true, 5);
    const runs = [1, 2, 3].map(() => s.run('message', { owners: ['alice'], linger: true }));
    await vi.advanceTimersByTimeAsync(4);
    expect(calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    const [first, ...others] = await Promise.all(runs);
    expect(calls).toEqual([{ owner: 'alice', at: 1_000_005, force: false }]);
    for (const other of others) expect(other).toBe(first);
    // The next enqueue after the flush began lingers on its own.
    void s.run('message', { owners: ['alice'], linger: true });
    await vi.advanceTimersByTimeAsync(5);
    expect(calls.map((c) => c.at)).toEqual([1_000_005, 1_000_010]);
  });

  it('never lingers on an explicit flush, nor without a lingerMs', async () => {
    const lingering = scheduler([], () => true, 5);
    await lingering.s.run('message', { owners: ['alice'] });
    expect(lingering.calls.map((c) => c.at)).toEqual([1_000_000]);
    const plain = scheduler([]);
    await plain.s.run('message', { owners: ['alice'], linger: true });
    expect(plain.calls.map((c) => c.at)).toEqual([1_000_000]);
  });
});
