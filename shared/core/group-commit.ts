import type { OutboxStore, ReplacePlan, ReplaceResult } from '../model/store.ts';

/** Submits plans to be committed together with whatever else is waiting (SPEC §4 batching). */
export interface GroupCommit {
  submit(plan: ReplacePlan): Promise<ReplaceResult>;
  /**
   * Submits several plans at once: they commit together (with whatever else waits), each
   * compared on its own, in as few transactions as the bound allows; the results are in plan
   * order. The claims of a batch, the ACKs of its answers (SPEC §4, §15.1).
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
 * drops. Plans submitted together (a batch's claims, its ACKs) always share one transaction
 * (SPEC §15.1); other submissions join it only while it holds at most `maxPlans`. The bound keeps
 * each transaction short: an enqueue that arrives while the drain writes waits behind one such
 * transaction, not behind every claim and ACK a busy drain has gathered (IndexedDB runs
 * overlapping readwrite transactions in the order they were created). A storage fault rejects
 * every plan of its transaction.
 */
export function createGroupCommit(store: OutboxStore, maxPlans = Infinity): GroupCommit {
  const queue: Waiting[][] = [];
  let running = false;

  /** The next transaction's submissions: the first whole, then others while they fit. */
  function next(): Waiting[] {
    let taken = 1;
    let size = queue[0]!.length;
    while (taken < queue.length && size + queue[taken]!.length <= maxPlans)
      size += queue[taken++]!.length;
    return queue.splice(0, taken).flat();
  }

  async function drain(): Promise<void> {
    running = true;
    while (queue.length > 0) {
      const batch = next();
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

  /** Queues plans to commit together; their results resolve as their transaction ends. */
  const submitGroup = (plans: readonly ReplacePlan[]): Promise<ReplaceResult>[] => {
    const group: Waiting[] = [];
    const results = plans.map(
      (plan) =>
        new Promise<ReplaceResult>((resolve, reject) => {
          group.push({ plan, resolve, reject });
        }),
    );
    if (group.length > 0) queue.push(group);
    if (!running && queue.length > 0) void drain();
    return results;
  };

  return {
    submit: (plan) => submitGroup([plan])[0]!,
    submitMany: (plans) => Promise.all(submitGroup(plans)),
  };
}
