import type { Outcome } from '../model/outcome.ts';
import type { TransportResult } from '../model/ports.ts';
import { decodeRow, type OutboxRow } from '../model/row.ts';
import type { ReplacePlan } from '../model/store.ts';
import { backoffDelay } from '../plan/backoff.ts';
import { requestOrigin } from '../plan/origin-recovery.ts';
import { receiptFor } from '../plan/receipt.ts';
import { planSettleFailure } from '../plan/settle.ts';
import type { Flush } from './flush.ts';
import { FlushStop } from './flush-stop.ts';
import { settleConflict } from './settle-conflict.ts';
import { planSuccessAck } from './success-ack.ts';

/**
 * How often one answer is planned again after its plan went stale. The first plan bets on the
 * row as claimed and alone in its record; each later one re-reads. Stale again means the record
 * keeps changing (new edits, intents); past this the row stays claimed and its lease ends, after
 * which the next flush resends the same key and the server replays the answer (G2): nothing is
 * lost, only delayed.
 */
const MAX_SETTLE_PLANS = 5;

/** Applies an outcome while the claim is still mine (SPEC §5); otherwise changes nothing. */
export async function settleOutcome(
  flush: Flush,
  sent: OutboxRow,
  fence: number,
  outcome: Outcome,
  result: TransportResult,
  /** The plan made against the row as claimed went stale already: start by reading it. */
  reread = false,
): Promise<void> {
  if (outcome.kind === 'conflict') {
    await settleConflict(flush, sent, fence, outcome, result);
    return;
  }
  // First try against the row as this holder's claim wrote it, and — for a success — on the bet
  // that it is its record's only row: no reads, and the transaction still checks both (the row
  // unchanged, the record holding just it). When stale, re-read, look up the record's successors
  // and intents, and plan again (a takeover, a new intent, a waiting edit).
  let read: RowRead | undefined = reread ? undefined : { raw: sent, row: sent };
  for (let attempt = reread ? 1 : 0; attempt < MAX_SETTLE_PLANS; attempt++) {
    if (read === undefined) {
      const raw = await flush.store.get(sent.id, flush.owner);
      const decoded = decodeRow(raw);
      read = { raw, row: decoded.ok ? decoded.row : undefined };
    }
    const plan = await planOutcome(flush, sent, fence, outcome, read, attempt === 0);
    read = undefined;
    if (plan === undefined) return;
    if ((await flush.writes.submit(plan)) === 'committed') {
      noteSettled(flush, sent, outcome, plan);
      return;
    }
  }
  flush.report.stale++;
}

/**
 * Settles one answer (SPEC §5) with the outcome `outcomeOf` reads from it. An answer the app's
 * handler could not read (classify, readReceipt, readConflict, a conflict policy threw) blocks the
 * row with the reason rather than leave it claimed; once the handler is fixed, `retry` resends the
 * same key and the server replays.
 */
export async function settleAnswer(
  flush: Flush,
  sent: OutboxRow,
  fence: number,
  result: TransportResult,
  outcomeOf: () => Outcome,
  reread = false,
): Promise<void> {
  try {
    await settleOutcome(flush, sent, fence, outcomeOf(), result, reread);
  } catch (error) {
    if (error instanceof FlushStop) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    flush.deps.logger?.error('handler failed', { id: sent.id, error: detail });
    const failed: Outcome = { kind: 'permanent', code: 'handler_failed', detail };
    await settleOutcome(flush, sent, fence, failed, result);
  }
}

/** One answer of a batch: the row as claimed, its fence, the item's result and its outcome. */
export interface BatchAnswer {
  sent: OutboxRow;
  fence: number;
  result: TransportResult;
  outcome: Outcome;
}

/**
 * Settles the answers of a batch (SPEC §5, §15.1): every plan made against its row as claimed
 * and committed in one transaction, each row checked on its own. A row whose plan went stale, a
 * conflict (its durable successor, §10) or a plan the app's handler could not make is settled
 * alone, as a single answer would be.
 */
export async function settleMany(flush: Flush, answers: readonly BatchAnswer[]): Promise<void> {
  const planned: { answer: BatchAnswer; plan: ReplacePlan }[] = [];
  // One jitter for the batch: rows that failed together come due together and go as one again.
  let drawn: number | undefined;
  const jitter = () => (drawn ??= flush.deps.ids.random());
  const alone: { answer: BatchAnswer; reread: boolean }[] = [];
  for (const answer of answers) {
    const { sent, fence, outcome } = answer;
    if (outcome.kind === 'conflict') {
      alone.push({ answer, reread: false });
      continue;
    }
    let plan: ReplacePlan | undefined;
    try {
      plan = await planOutcome(flush, sent, fence, outcome, { raw: sent, row: sent }, true, jitter);
    } catch (error) {
      if (error instanceof FlushStop) throw error;
      alone.push({ answer, reread: false });
      continue;
    }
    if (plan !== undefined) planned.push({ answer, plan });
  }
  const results = await flush.writes.submitMany(planned.map(({ plan }) => plan));
  planned.forEach(({ answer, plan }, i) => {
    if (results[i] === 'committed') noteSettled(flush, answer.sent, answer.outcome, plan);
    else alone.push({ answer, reread: true });
  });
  await Promise.all(
    alone.map(({ answer: { sent, fence, result, outcome }, reread }) =>
      settleAnswer(flush, sent, fence, result, () => outcome, reread),
    ),
  );
}

interface RowRead {
  raw: unknown;
  row: OutboxRow | undefined;
}

/**
 * Plans one outcome against an observation of the row; undefined when the claim is not mine
 * (reported: a success is still news for the UI, §5). `alone` bets that the sent row is its
 * record's only row (see {@link planSuccessAck}).
 */
async function planOutcome(
  flush: Flush,
  sent: OutboxRow,
  fence: number,
  outcome: Exclude<Outcome, { kind: 'conflict' }>,
  read: RowRead,
  alone: boolean,
  jitter = () => flush.deps.ids.random(),
): Promise<ReplacePlan | undefined> {
  const { deps } = flush;
  const holder = { owner: flush.owner, holderId: deps.holderId, fence };
  const now = deps.clock.now();
  const { raw, row: current } = read;
  if (outcome.kind === 'success') {
    const handler = deps.handlers[sent.collection];
    const receipt = receiptFor(handler, sent, outcome.status, outcome.body, now);
    const plan = await planSuccessAck(flush, current, raw, receipt, { ...holder, now }, alone);
    if (plan === undefined) {
      deps.onEvent?.({
        type: 'settled',
        id: sent.id,
        outcome: 'success',
        stale: true,
        status: outcome.status,
      });
    }
    return plan;
  }
  const attempts = current?.evidence?.attemptCount ?? 1;
  const retryAfter = outcome.kind === 'transient' ? outcome.retryAfterMs : undefined;
  const nextAttemptAt = now + backoffDelay(attempts, deps.backoff, jitter(), retryAfter);
  const failure = planSettleFailure(current, raw, outcome, { ...holder, now, nextAttemptAt });
  if (failure.kind === 'apply') return failure.plan;
  flush.report.stale++;
  deps.onEvent?.({ type: 'settled', id: sent.id, outcome: outcome.kind, stale: true });
  return undefined;
}

/** What a committed settle tells: converted intents, counts and the `settled` event. */
function noteSettled(flush: Flush, sent: OutboxRow, outcome: Outcome, plan: ReplacePlan): void {
  for (const tomb of plan.tombstones ?? []) {
    if (tomb.reason === 'converted' && tomb.into)
      flush.deps.onEvent?.({ type: 'converted', intentId: tomb.id, into: tomb.into });
  }
  countOutcome(flush, sent, outcome, nextOf(plan));
}

function nextOf(plan: ReplacePlan): number | undefined {
  const row = plan.put?.[0] as OutboxRow | undefined;
  return row?.nextAttemptAt;
}

function countOutcome(
  flush: Flush,
  sent: OutboxRow,
  outcome: Outcome,
  nextAttemptAt: number | undefined,
): void {
  const { deps, report } = flush;
  switch (outcome.kind) {
    case 'success':
      report.succeeded++;
      if (sent.request !== undefined) flush.recovered.add(requestOrigin(sent.request.url));
      break;
    case 'transient':
      report.transient++;
      flush.deferred.set(sent.id, nextAttemptAt ?? deps.clock.now());
      flush.stopIfNetworkDown([outcome]);
      break;
    case 'auth':
      report.held++;
      deps.onEvent?.({ type: 'held', id: sent.id });
      break;
    case 'permanent':
      report.blocked++;
      deps.onEvent?.({ type: 'blocked', id: sent.id, code: outcome.code });
      break;
    case 'conflict':
      report.conflicts++;
      break;
  }
  deps.onEvent?.({
    type: 'settled',
    id: sent.id,
    outcome: outcome.kind,
    stale: false,
    ...('status' in outcome ? { status: outcome.status } : {}),
  });
}
