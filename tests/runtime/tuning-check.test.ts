import { describe, expect, it } from 'vitest';
import { checkTuning, type OutboxTuning } from '../../shared/core/tuning.ts';
import { OutboxError } from '../../shared/model/errors.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { createOutboxEngine } from '../../sw/engine.ts';
import { World } from '../support/harness.ts';
import { createNote } from '../support/intents.ts';

/**
 * SPEC §14, G7: tuning no flush could run with is refused where the engine is made, with a code
 * and the option's name, instead of an engine whose flushes never answer.
 */

function refusal(tuning: Partial<OutboxTuning>): { argument: unknown; message: string } | null {
  try {
    checkTuning(tuning);
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(OutboxError);
    expect((error as OutboxError).code).toBe('invalid_argument');
    const { details, message } = error as OutboxError;
    return { argument: details?.argument, message };
  }
}

describe('tuning a flush cannot run with', () => {
  it.each([
    [{ concurrency: 0 }, 'concurrency', 'a whole number from 1'],
    [{ concurrency: Number.NaN }, 'concurrency', 'a whole number from 1'],
    [{ concurrency: 2.5 }, 'concurrency', 'a whole number from 1'],
    [{ batchSize: 0 }, 'batchSize', 'a whole number from 1'],
    [{ plansPerCommit: -1 }, 'plansPerCommit', 'a whole number from 1'],
    [{ leaseMs: 0 }, 'leaseMs', 'a number from 1'],
    [{ leaseMs: Number.POSITIVE_INFINITY }, 'leaseMs', 'a number from 1'],
    [{ maxRowBytes: '256k' as unknown as number }, 'maxRowBytes', 'a number from 1'],
    [{ backoff: { baseMs: -1, maxMs: 10 } }, 'backoff.baseMs', 'a number from 0'],
    [{ receipts: { maxCount: 1.5, maxAgeMs: 0 } }, 'receipts.maxCount', 'a whole number from 0'],
    [{ maxConflictSuccessors: -1 }, 'maxConflictSuccessors', 'a whole number from 0'],
    [{ batch: { maxRows: 0 } }, 'batch.maxRows', 'a whole number from 1'],
    [{ batch: { lingerMs: -5 } }, 'batch.lingerMs', 'a number from 0'],
    [{ sendMarginMs: 10_000 }, 'sendMarginMs', 'less than leaseMs (10000)'],
    [{ leaseMs: 1_000, sendMarginMs: 1_000 }, 'sendMarginMs', 'less than leaseMs (1000)'],
  ])('refuses %o, naming %s', (tuning, argument, expected) => {
    expect(refusal(tuning as Partial<OutboxTuning>)).toEqual({
      argument,
      message: `invalid ${argument}: expected ${expected}`,
    });
  });

  it.each([
    [{}],
    [{ concurrency: 1, batchSize: 1, plansPerCommit: 1 }],
    [{ leaseMs: 1, sendMarginMs: 0 }],
    [{ receipts: { maxCount: 0, maxAgeMs: 0 }, conflictLedgerMax: 0, maxConflictSuccessors: 0 }],
    [{ batch: false as const }],
    [{ batch: { maxRows: 1, maxBytes: 1, lingerMs: 0 } }],
  ])('takes %o', (tuning) => {
    expect(refusal(tuning)).toBeNull();
  });

  it('createOutboxEngine refuses a concurrency of 0 when it is called, not at the first flush', () => {
    expect(() =>
      createOutboxEngine({
        collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
        store: async () => createMemoryStore({ name: `tuning-${Math.random()}` }),
        concurrency: 0,
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'invalid_argument',
        message: 'invalid concurrency: expected a whole number from 1',
      }),
    );
  });

  it('a core with a concurrency of 0 is never made, so no flush waits on a send that never starts', async () => {
    const world = await World.create('memory');
    try {
      await expect(world.holder('A', { concurrency: 0 })).rejects.toMatchObject({
        code: 'invalid_argument',
        details: { argument: 'concurrency' },
      });
      const holder = await world.holder('B', { concurrency: 1 });
      await holder.api.enqueue(createNote({ title: 'x' }));
      await expect(holder.api.flush()).resolves.toMatchObject({ succeeded: 1 });
      expect(await world.rows()).toEqual([]);
      expect(world.server.effects).toHaveLength(1);
    } finally {
      world.close();
    }
  });
});
