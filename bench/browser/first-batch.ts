import type { FirstBatchSample } from './app/protocol.ts';
import { outboxHooks, wakeWorker, withProfile } from './chromium.ts';
import type { BenchServer } from './server.ts';
import { connectOutbox, freshUser, round } from './session.ts';
import { median } from './stats.ts';

/** Rows seeded per call: a few seconds of work, well within a worker's 30 s without events. */
const SEED_CHUNK = 10_000;

export interface FirstBatchResult {
  queued: number;
  firstClaimMs: number;
  batchClaimMs: number;
  flushMs: number;
  samples: FirstBatchSample[];
}

/**
 * Time to select and claim the first batch, with `sizes[0]` rows queued and then with the queue
 * grown to each later size: rows are copied straight into IndexedDB in big transactions, then
 * forced flushes run offline, so each one selects and claims the head of the queue, fails its
 * sends at once and leaves the queue as it was.
 */
export async function measureFirstBatch(
  server: BenchServer,
  options: { sizes: number[]; reps: number },
): Promise<FirstBatchResult[]> {
  return withProfile(
    server.url,
    async (profile) => {
      const user = freshUser('first-batch');
      const worker = await connectOutbox(server, profile, user);
      await profile.context.setOffline(true);
      await outboxHooks(worker, (hooks, owner: string) => hooks.fill(owner, 1, 0), user);
      const results: FirstBatchResult[] = [];
      let queued = 1;
      for (const size of options.sizes) {
        // In chunks, each after an event from the page: Chromium stops a worker that no event
        // kept busy for 30 s, and a call through the DevTools protocol is no event.
        while (queued < size) {
          await wakeWorker(profile.page);
          const seeded = await outboxHooks(
            worker,
            (hooks, [owner, n]: [string, number]) => hooks.seed(owner, n),
            [user, Math.min(SEED_CHUNK, size - queued)],
          );
          queued = seeded.total;
        }
        if (queued !== size) throw new Error(`seeded ${queued} rows, wanted ${size}`);
        // One flush per call, each after a ping, for the same reason as the seeding above.
        const samples: FirstBatchSample[] = [];
        for (let rep = 0; rep < options.reps; rep++) {
          await wakeWorker(profile.page);
          samples.push(
            ...(await outboxHooks(
              worker,
              (hooks, owner: string) => hooks.firstBatch(owner, 1),
              user,
            )),
          );
        }
        results.push({
          queued,
          firstClaimMs: round(median(samples.map((s) => s.firstClaimMs)), 2),
          batchClaimMs: round(median(samples.map((s) => s.batchClaimMs)), 2),
          flushMs: round(median(samples.map((s) => s.flushMs)), 2),
          samples,
        });
      }
      return results;
    },
    { offlineCapable: true },
  );
}
