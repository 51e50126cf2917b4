import type { OutboxStore, ReplacePlan, ReplaceResult } from '../model/store.ts';

/** Submits plans to be committed together with whatever else is waiting (SPEC §4 batching). */
export interface GroupCommit {
  submit(plan: ReplacePlan): Promise<ReplaceResult>;
  /**
   * Submits several plans at once: they commit in one transaction (with whatever else waits),
   * each compared on its own; the results are in plan order. The claims of a batch, the ACKs of
   * its answers (SPEC §4, §15.1).
   */
  submitMany(plans: readonly ReplacePlan[]): Promise<ReplaceResult[]>;
}

interface Waiting {
  plan: ReplacePlan;
  resolve: (result: ReplaceResult) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit over `replaceEach`: while one transaction is running, the plans submitted
 * meanwhile wait and then go together in the next one. Each plan is still compared on its own,
 * so a claim or ACK keeps its per-row rules; only the number of IndexedDB commits per sent row
 * drops. A storage fault rejects every plan of its transaction.
 */
export function createGroupCommit(store: OutboxStore): GroupCommit {
  let queue: Waiting[] = [];
  let running = false;

  async function drain(): Promise<void> {
    running = true;
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        const results = await store.replaceEach(batch.map((w) => w.plan));
        batch.forEach((w, i) => {
          w.resolve(results[i] ?? 'stale');
        });
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    running = false;
  }

  const enqueue = (plan: ReplacePlan) =>
    new Promise<ReplaceResult>((resolve, reject) => {
      queue.push({ plan, resolve, reject });
    });
  const submitMany = (plans: readonly ReplacePlan[]): Promise<ReplaceResult[]> => {
    // Queued before the drain starts, so they reach one `replaceEach` together.
    const results = Promise.all(plans.map(enqueue));
    if (!running && queue.length > 0) void drain();
    return results;
  };

  return {
    submit(plan) {
      const result = enqueue(plan);
      if (!running) void drain();
      return result;
    },
    submitMany,
  };
}
