import { describe, expect, it } from 'vitest';
import { type ServerStore, startSweeper } from '../../server/index.ts';

describe('ledger expiry sweep', () => {
  it('deletes in batches until a batch comes back short, with the retention cutoff', async () => {
    const calls: Array<[number, number]> = [];
    let remaining = 1_234;
    const store = {
      async sweepExpired(cutoff: number, batchSize: number) {
        calls.push([cutoff, batchSize]);
        const deleted = Math.min(batchSize, remaining);
        remaining -= deleted;
        return deleted;
      },
    } as Partial<ServerStore> as ServerStore;
    const sweeper = startSweeper({
      store,
      retentionMs: 7 * 86_400_000,
      batchSize: 500,
      now: () => 10 * 86_400_000,
    });
    try {
      expect(await sweeper.sweep()).toBe(1_234);
      expect(calls).toEqual([
        [3 * 86_400_000, 500],
        [3 * 86_400_000, 500],
        [3 * 86_400_000, 500],
      ]);
    } finally {
      sweeper.stop();
    }
  });

  it('runs one sweep at a time', async () => {
    let running = 0;
    let most = 0;
    const store = {
      async sweepExpired() {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setImmediate(resolve));
        running--;
        return 0;
      },
    } as Partial<ServerStore> as ServerStore;
    const sweeper = startSweeper({ store, retentionMs: 1 });
    try {
      await Promise.all([sweeper.sweep(), sweeper.sweep(), sweeper.sweep()]);
      expect(most).toBe(1);
    } finally {
      sweeper.stop();
    }
  });
});
