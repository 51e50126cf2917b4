import type { Outcome } from '../model/outcome.ts';
import type { BatchRoute, SendDeadline, TransportResult } from '../model/ports.ts';
import type { Observed, OutboxRow } from '../model/row.ts';
import { planClaim } from '../plan/claim.ts';
import { classifyResult } from '../plan/classify.ts';
import { isLeaseLapsed, sendDeadline } from '../plan/lease.ts';
import type { Flush } from './flush.ts';
import { type BatchAnswer, settleAnswer, settleMany, settleOutcome } from './settle-outcome.ts';

/** A row this holder claimed, with the fence its claim wrote. */
interface Claimed {
  row: OutboxRow;
  fence: number;
}

/** Why a claimed request did not go after all (SPEC §4): it goes back to the queue. */
type Unsent = 'flush_stopped' | 'lease_lapsed';

/**
 * Claim → deadline → send → classify → settle (SPEC §4, §5, §15.1) for a group of rows: one row,
 * or the rows gathered for one batch `route`. The claims commit in one transaction, each compared
 * on its own (a stale row is skipped); one claimed row goes alone, several go as one batch within
 * the earliest of their deadlines, and every row is settled with its own answer. The per-row
 * contract of §4 and §5 is the same either way; only the number of requests and commits is not.
 */
export async function send(
  flush: Flush,
  rows: readonly Observed[],
  route?: BatchRoute,
): Promise<void> {
  const claimed = await claim(flush, rows);
  if (claimed.length === 0) return;
  if (route === undefined || claimed.length === 1) {
    await Promise.all(claimed.map((one) => sendAlone(flush, one)));
    return;
  }
  await sendTogether(flush, route, claimed);
}

/** Claims the rows in one transaction, each compared on its own; returns those claimed. */
async function claim(flush: Flush, rows: readonly Observed[]): Promise<Claimed[]> {
  const { deps } = flush;
  const ctx = {
    owner: flush.owner,
    holderId: deps.holderId,
    now: deps.clock.now(),
    leaseMs: deps.leaseMs,
    bundle: deps.bundle,
  };
  const planned = rows.flatMap(({ row, raw }) => {
    const claim = planClaim(row, raw, ctx, flush.passedOver.get(row.id));
    return claim.kind === 'claim' ? [claim] : [];
  });
  if (planned.length === 0) return [];
  const results = await flush.writes.submitMany(planned.map((claim) => claim.plan));
  flush.noteLost(planned.filter((_, i) => results[i] !== 'committed').map((claim) => claim.row));
  const claimed = planned.filter((_, i) => results[i] === 'committed');
  for (const { row, fence } of claimed) flush.noteClaimed(row, fence);
  return claimed;
}

/** Sends one claimed row alone and settles its answer. */
async function sendAlone(flush: Flush, { row, fence }: Claimed): Promise<void> {
  const request = row.request!;
  const deadline = deadlineOf(flush, row);
  const result = await flush.sends.run(async () => {
    const unsent = unsentReason(flush, row, deadline.leaveBy);
    if (unsent !== undefined) return unsent;
    // The transport bounds what it awaits by the claim too (§4): past `leaveBy` nothing leaves.
    const answer = await flush.deps.transport.send(request, {
      owner: flush.owner,
      collection: row.collection,
      deadline,
    });
    // Decided before the slot passes to a row claimed ahead (§12 retries).
    flush.stopIfNetworkDown([answer]);
    return answer;
  });
  if (typeof result === 'string') {
    await settleOutcome(flush, row, fence, unsentOutcome(result), { kind: 'timeout' });
    return;
  }
  noteSent(flush, row, fence, result);
  await settleAnswer(flush, row, fence, result, () => classify(flush, row, result));
}

/**
 * Sends claimed rows as one batch (SPEC §15.1) and settles every row with its own item's answer.
 * An endpoint that takes no batches gets each row alone, under the claim it has.
 */
async function sendTogether(flush: Flush, route: BatchRoute, claimed: Claimed[]): Promise<void> {
  const deadline = earliest(claimed.map(({ row }) => deadlineOf(flush, row)));
  const answer = await flush.sends.run(async () => {
    for (const { row } of claimed) {
      const unsent = unsentReason(flush, row, deadline.leaveBy);
      if (unsent !== undefined) return unsent;
    }
    const answers = await flush.deps.transport.sendBatch!(
      route,
      claimed.map(({ row }) => row.request!),
      { owner: flush.owner, deadline },
    );
    // Decided before the slot passes to rows claimed ahead (§12).
    if (answers !== 'unsupported') flush.stopIfNetworkDown(answers);
    return answers;
  });
  if (answer === 'unsupported') {
    await Promise.all(claimed.map((one) => sendAlone(flush, one)));
    return;
  }
  const answers: BatchAnswer[] = claimed.map(({ row, fence }, i) => {
    if (typeof answer === 'string')
      return { sent: row, fence, result: { kind: 'timeout' }, outcome: unsentOutcome(answer) };
    const result = answer[i] ?? { kind: 'network_error', message: 'no answer for this item' };
    noteSent(flush, row, fence, result);
    return { sent: row, fence, result, outcome: readOutcome(flush, row, result) };
  });
  await settleMany(flush, answers);
}

/** The deadline a claimed row's request is sent under (SPEC §4). */
function deadlineOf(flush: Flush, row: OutboxRow): SendDeadline {
  return sendDeadline(row.claim!, {
    leaseMs: flush.deps.leaseMs,
    marginMs: flush.deps.sendMarginMs,
  });
}

/** The batch leaves only while every row's claim covers it, and is aborted when the first ends. */
function earliest(deadlines: SendDeadline[]): SendDeadline {
  return {
    leaveBy: Math.min(...deadlines.map((d) => d.leaveBy)),
    abortAt: Math.min(...deadlines.map((d) => d.abortAt)),
  };
}

/**
 * Why a claimed request does not go after all: the flush stopped while it waited for a slot
 * (say, offline), or its lease could no longer cover it (SPEC §4).
 */
function unsentReason(flush: Flush, row: OutboxRow, leaveBy: number): Unsent | undefined {
  if (flush.stop !== undefined) return 'flush_stopped';
  if (isLeaseLapsed(row, flush.deps.clock.now(), flush.deps.leaseMs, leaveBy))
    return 'lease_lapsed';
  return undefined;
}

/** A request that never left: a device-side transient, nothing applied (SPEC §4, §11). */
function unsentOutcome(code: Unsent): Outcome {
  return { kind: 'transient', code, device: true };
}

/** The `sent` event, for a request that left. */
function noteSent(flush: Flush, row: OutboxRow, fence: number, result: TransportResult): void {
  if (result.kind === 'not_sent') return;
  flush.deps.onEvent?.({ type: 'sent', id: row.id, requestId: row.request!.requestId, fence });
}

/** The outcome of a result by the row's handler, which may wrap the classifier (§11). */
function classify(flush: Flush, row: OutboxRow, result: TransportResult): Outcome {
  const { deps } = flush;
  const handler = deps.handlers[row.collection];
  const fallback = classifyResult(result, deps.clock.now());
  if (!handler?.classify) return fallback;
  if (result.kind !== 'network_error' && result.kind !== 'timeout')
    return handler.classify(result, fallback);
  // No answer came back: the server may still be committing the request (§6). A classifier that
  // throws on it has nothing to read, and blocking the row would release its successors ahead of
  // that commit (§7, G4): the fallback stands and the row keeps its place.
  try {
    return handler.classify(result, fallback);
  } catch (error) {
    deps.logger?.error('handler failed', { id: row.id, error: String(error) });
    return fallback;
  }
}

/** The outcome of a batch item's answer; a handler that throws is `handler_failed`, as alone. */
function readOutcome(flush: Flush, row: OutboxRow, result: TransportResult): Outcome {
  try {
    return classify(flush, row, result);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    flush.deps.logger?.error('handler failed', { id: row.id, error: detail });
    return { kind: 'permanent', code: 'handler_failed', detail };
  }
}
