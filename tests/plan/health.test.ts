import { describe, expect, it } from 'vitest';
import type { RowView, StallCause } from '../../shared/model/page-api.ts';
import type { RowStatus } from '../../shared/model/row.ts';
import { type HealthInputs, planHealth, type SenderProgress } from '../../shared/plan/health.ts';
import { NOW, updateRow } from './fixtures.ts';

/**
 * SPEC §23: the health verdict as a pure function of the rows, the sender's progress and the
 * bounds. Each row of the table is one situation and the causes it must name, most urgent first.
 */

const BOUNDS = { stallAfterMs: 30_000, unreachableAfterMs: 300_000 };
const SW = 'sw-000000000000000000000001';

/** A view of a row saved `age` ms ago with the given status (and retry time, if deferred). */
function view(status: RowStatus, age: number, nextAttemptAt?: number, holderId?: string): RowView {
  const row = updateRow({
    id: `notes-${String(age).padStart(24, '0')}`,
    savedAt: NOW - age,
    ...(nextAttemptAt === undefined ? {} : { nextAttemptAt }),
  });
  return { row, id: row.id, status, ...(holderId === undefined ? {} : { holderId }) };
}

const progress = (over: Partial<SenderProgress> = {}): SenderProgress => ({
  lastRunAt: NOW - 1_000,
  lastSuccessAt: NOW - 1_000,
  unreachableSince: null,
  quota: false,
  wakeAt: null,
  ...over,
});

function inputs(over: Partial<HealthInputs> = {}): HealthInputs {
  return {
    now: NOW,
    views: [],
    progress: progress(),
    senders: { worker: SW },
    storage: {},
    bounds: BOUNDS,
    ...over,
  };
}

const TABLE: Array<{ name: string; input: Partial<HealthInputs>; causes: StallCause[] }> = [
  { name: 'an empty queue is healthy', input: {}, causes: [] },
  {
    name: 'a row due for less than the bound is healthy (a flush is on its way)',
    input: { views: [view('queued', 10_000)], progress: progress({ lastRunAt: NOW - 60_000 }) },
    causes: [],
  },
  {
    name: 'a row due past the bound with a flush within the bound is healthy',
    input: { views: [view('queued', 60_000)], progress: progress({ lastRunAt: NOW - 5_000 }) },
    causes: [],
  },
  {
    name: 'a row due past the bound and no flush for as long is not being attempted',
    input: { views: [view('queued', 60_000)], progress: progress({ lastRunAt: NOW - 60_000 }) },
    causes: ['not_attempted'],
  },
  {
    name: 'a deferred row whose retry passed the bound ago, with no flush since, is a stall',
    input: {
      views: [view('deferred', 600_000, NOW - 40_000)],
      progress: progress({ lastRunAt: NOW - 45_000 }),
    },
    causes: ['not_attempted'],
  },
  {
    name: 'a deferred row whose retry is still ahead is healthy, and its retry is the next attempt',
    input: {
      views: [view('deferred', 600_000, NOW + 20_000)],
      progress: progress({ lastRunAt: NOW - 600_000 }),
    },
    causes: [],
  },
  {
    name: 'due rows with no sender alive name that',
    input: {
      views: [view('queued', 60_000)],
      progress: progress({ lastRunAt: null }),
      senders: {},
    },
    causes: ['no_sender'],
  },
  {
    name: 'a held row waits for credentials',
    input: { views: [view('held', 5_000)] },
    causes: ['held'],
  },
  {
    name: 'a blocked row waits for the app',
    input: { views: [view('blocked', 5_000)] },
    causes: ['blocked'],
  },
  {
    name: 'a flush stopped by storage names the quota',
    input: { progress: progress({ quota: true }) },
    causes: ['quota'],
  },
  {
    name: 'failures for less than the bound are not yet unreachable',
    input: {
      views: [view('deferred', 60_000, NOW + 5_000)],
      progress: progress({ unreachableSince: NOW - 60_000 }),
    },
    causes: [],
  },
  {
    name: 'failures for longer than the bound name the server unreachable',
    input: {
      views: [view('deferred', 600_000, NOW + 5_000)],
      progress: progress({ unreachableSince: NOW - 400_000 }),
    },
    causes: ['unreachable'],
  },
  {
    name: 'every cause at once, the one the library heals first',
    input: {
      views: [view('queued', 60_000), view('held', 1), view('blocked', 2)],
      progress: progress({ lastRunAt: NOW - 60_000, quota: true, unreachableSince: 0 }),
    },
    causes: ['not_attempted', 'quota', 'held', 'blocked', 'unreachable'],
  },
];

describe('the health verdict (SPEC §23)', () => {
  it.each(TABLE)('$name', ({ input, causes }) => {
    const health = planHealth(inputs(input));
    expect(health.causes).toEqual(causes);
    expect(health.stalled).toBe(causes[0] ?? null);
  });

  it('counts rows by status, the oldest row’s age and the earliest planned attempt', () => {
    const health = planHealth(
      inputs({
        views: [
          view('queued', 2_000),
          view('deferred', 90_000, NOW + 7_000),
          view('deferred', 5_000, NOW + 3_000),
          view('sending', 1_000, undefined, 'tab-000000000000000000000002'),
        ],
        progress: progress({ wakeAt: NOW + 4_000, lastSuccessAt: NOW - 10 }),
        storage: { persisted: true, usage: 10, quota: 100 },
      }),
    );
    expect(health).toMatchObject({
      at: NOW,
      total: 4,
      oldestPendingAgeMs: 90_000,
      lastSuccessAt: NOW - 10,
      nextAttemptAt: NOW + 3_000,
      senders: { worker: SW, page: 'tab-000000000000000000000002' },
      storage: { persisted: true, usage: 10, quota: 100 },
      stalled: null,
    });
    expect(health.counts).toMatchObject({ queued: 1, deferred: 2, sending: 1, held: 0 });
  });

  it('an empty queue has no age and no planned attempt but the timer', () => {
    const health = planHealth(inputs({ progress: progress({ wakeAt: NOW + 1 }) }));
    expect(health).toMatchObject({ total: 0, oldestPendingAgeMs: null, nextAttemptAt: NOW + 1 });
  });
});
