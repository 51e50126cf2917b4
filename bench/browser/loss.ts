import type { BenchRequest } from './app/protocol.ts';
import { outboxHooks, withProfile, workboxHooks } from './chromium.ts';
import type { BenchServer } from './server.ts';
import {
  connectOutbox,
  connectWorkbox,
  freshUser,
  round,
  SEND_MODE_WORKER,
  type SendMode,
  type System,
} from './session.ts';

export interface LossResult {
  system: System;
  /** Ours only: how it sent. */
  mode?: SendMode;
  rows: number;
  dropRate: number;
  effects: number;
  /** Effects beyond the first for a key: what the server's ledger failed to stop. */
  duplicateEffects: number;
  /** Keys that never took effect. */
  missing: number;
  /** Copies the ledger answered from a stored result: duplicates had it not been there. */
  replays: number;
  /**
   * Failures the queue itself saw and retried: our forced flushes after the first (a lost
   * response stops a flush as `offline`), Workbox's `replayRequests` calls after the first.
   * The rest of the lost responses never reached the queue: Chromium re-sent those POSTs itself.
   */
  queueRetries: number;
  /** Batch requests the server ran, the resent ones included (SPEC §15.1). */
  batches: number;
  seconds: number;
}

/**
 * Duplicate effects under response loss: the server drops `dropRate` of write answers after
 * committing them — of single requests (`route: 'write'`), and of batch requests as a whole
 * (`POST /sync/batch`: every item's answer of that batch is lost; a rule on the items' route
 * would lose a batch whenever any one of its items drew the loss). Each queue is driven until
 * empty; the server's counter per key says how many effects each request had.
 */
export async function measureLoss(
  server: BenchServer,
  options: { rows: number; dropRate: number },
): Promise<{ batches: LossResult; single: LossResult; workbox: LossResult }> {
  const single = await outboxLoss(server, options, 'single');
  // A batch answers for up to 50 rows: five times the rows (100 batches in a full run) give the
  // loss of whole batch answers enough chances to show.
  const batches = await outboxLoss(
    server,
    { ...options, rows: options.rows * BATCH_LOSS_ROWS },
    'batches',
  );
  const { requests, dropRate } = { ...options, requests: single.requests };
  const workbox = await withProfile(server.url, async (profile) => {
    const user = freshUser('loss-workbox');
    const authorization = `Bearer ${await server.token(user)}`;
    const worker = await connectWorkbox(profile);
    await workboxHooks(worker, (hooks, [r, a]: [BenchRequest[], string]) => hooks.push(r, a), [
      requests,
      authorization,
    ]);
    return lossRun(server, 'workbox', undefined, user, requests, dropRate, async () => {
      await profile.call((bench) => bench.workboxReplay(10_000));
      const done = await profile.call((bench) => bench.workboxReplayDone());
      if (!done.ok) throw new Error(`workbox replay failed: ${done.error}`);
      return done.rounds ?? 1;
    });
  });
  return { batches: batches.result, single: single.result, workbox };
}

const BATCH_LOSS_ROWS = 5;

async function outboxLoss(
  server: BenchServer,
  options: { rows: number; dropRate: number },
  mode: SendMode,
): Promise<{ result: LossResult; requests: BenchRequest[] }> {
  return withProfile(server.url, async (profile) => {
    const user = freshUser(`loss-${mode}`);
    const worker = await connectOutbox(server, profile, user, SEND_MODE_WORKER[mode]);
    await outboxHooks(worker, (hooks, [owner, n]: [string, number]) => hooks.fill(owner, n, 0), [
      user,
      options.rows,
    ]);
    const requests = await outboxHooks(
      worker,
      (hooks, owner: string) => hooks.requests(owner),
      user,
    );
    const result = await lossRun(server, 'outbox', mode, user, requests, options.dropRate, () =>
      profile.call((bench) => bench.outboxDrain(500)),
    );
    return { result, requests };
  });
}

async function lossRun(
  server: BenchServer,
  system: System,
  mode: SendMode | undefined,
  user: string,
  requests: BenchRequest[],
  dropRate: number,
  /** Drains the queue; resolves with how many drain rounds it took. */
  drain: () => Promise<number>,
): Promise<LossResult> {
  const route = mode === 'batches' ? 'POST /sync/batch' : 'write';
  await server.fault({ kind: 'drop-after-commit', route, rate: dropRate, user });
  const started = performance.now();
  let rounds: number;
  try {
    rounds = await drain();
  } finally {
    await server.clearFaults();
  }
  const seconds = (performance.now() - started) / 1000;
  const stats = await server.stats(user);
  let duplicateEffects = 0;
  let missing = 0;
  for (const { requestId } of requests) {
    const count = stats.effectsByKey[requestId] ?? 0;
    if (count === 0) missing++;
    else duplicateEffects += count - 1;
  }
  return {
    system,
    ...(mode === undefined ? {} : { mode }),
    rows: requests.length,
    dropRate,
    effects: stats.effects,
    duplicateEffects,
    missing,
    replays: stats.replays,
    queueRetries: Math.max(0, rounds - 1),
    batches: stats.batches,
    seconds: round(seconds, 2),
  };
}
