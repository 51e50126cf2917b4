import { isOutcome, type Outcome } from '../model/outcome.ts';
import type { BatchRoute, SendDeadline, TransportResult } from '../model/ports.ts';
import { decodeRow, type Observed, type OutboxRow } from '../model/row.ts';
import { planClaim } from '../plan/claim.ts';
import { classifyResult } from '../plan/classify.ts';
import { isRecordClear } from '../plan/in-flight.ts';
import { isLeaseLapsed, sendDeadline } from '../plan/lease.ts';
import { requestOrigin } from '../plan/origin-recovery.ts';
import { corruptInFlight } from '../plan/quarantine.ts';
import { observeStored } from '../plan/unknown-version.ts';
import type { Flush } from './flush.ts';
import { type ClaimedRow, screenKeyAge, type Unsent } from './key-age.ts';
import { type BatchAnswer, settleAnswer, settleMany, settleOutcome } from './settle-outcome.ts';

type Claimed = ClaimedRow;

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
  // A key the server may have forgotten is not resent: the receipt lookup is asked first (§15).
  const { due: claimed, asked } = screenKeyAge(flush, await claim(flush, rows), {
    inSlot: (row, go) => whileLeased(flush, [row], go),
    classify: (row, result) => classify(flush, row, result),
    sendAlone: (one) => sendAlone(flush, one),
  });
  const [only, ...more] = claimed;
  const sending =
    only === undefined
      ? Promise.resolve()
      : route === undefined || more.length === 0
        ? sendAlone(flush, only)
        : sendTogether(flush, route, claimed);
  // Both run at once and both are waited for before the group's records are free again; a
  // failure of either (a storage fault stops the flush) is raised once both have settled, so
  // neither is left rejected with nobody listening.
  const [sent, judged] = await Promise.allSettled([sending, asked]);
  if (sent.status === 'rejected') throw sent.reason;
  if (judged.status === 'rejected') throw judged.reason;
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
    const claim = planClaim(row, raw, ctx, flush.seen.get(row.id));
    return claim.kind === 'claim' ? [{ ...claim, observed: row }] : [];
  });
  if (planned.length === 0) return [];
  // A row alone is submitted alone, to commit with whatever else waits; the claims of a batch
  // are submitted together, to commit in one transaction.
  const results =
    rows.length === 1
      ? [await flush.writes.submit(planned[0]!.plan)]
      : await flush.writes.submitMany(planned.map((claim) => claim.plan));
  flush.noteLost(planned.filter((_, i) => results[i] !== 'committed').map((claim) => claim.row));
  const claimed = planned.filter((_, i) => results[i] === 'committed');
  for (const { row, fence } of claimed) flush.noteClaimed(row, fence);
  return claimed.map(({ row, fence, observed }) => ({ row, fence, observed }));
}

/** Sends one claimed row alone and settles its answer. */
async function sendAlone(flush: Flush, { row, fence }: Claimed): Promise<void> {
  const request = row.request!;
  const result = await whileLeased(flush, [row], async (deadline) => {
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
  if (typeof result !== 'string') {
    noteSent(flush, row, fence, result);
    const outcomeOf = () => classify(flush, row, result);
    await settleAnswer(flush, row, fence, result, outcomeOf);
    return;
  }
  await settleOutcome(flush, row, fence, unsentOutcome(result), { kind: 'timeout' });
}

/**
 * Sends claimed rows as one batch (SPEC §15.1) and settles every row with its own item's answer.
 * An endpoint that takes no batches gets each row alone, under the claim it has.
 */
async function sendTogether(flush: Flush, route: BatchRoute, claimed: Claimed[]): Promise<void> {
  const rows = claimed.map(({ row }) => row);
  const answer = await whileLeased(flush, rows, async (deadline) => {
    const answers = await flush.deps.transport.sendBatch!(
      route,
      rows.map((row) => row.request!),
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

/**
 * Runs a request in a send slot, under the deadline of its rows' claims (SPEC §4): a batch
 * leaves only while every row's claim covers it, and is aborted when the first ends. It does not
 * go after all — the rows go back to the queue — when the flush stopped while it waited for the
 * slot (say, offline), or a row's lease could no longer cover it.
 */
function whileLeased<T>(
  flush: Flush,
  rows: readonly OutboxRow[],
  go: (deadline: SendDeadline) => Promise<T>,
): Promise<T | Unsent> {
  const { clock, leaseMs, sendMarginMs } = flush.deps;
  const deadlines = rows.map((row) =>
    sendDeadline(row.claim!, { leaseMs, marginMs: sendMarginMs }),
  );
  const deadline = {
    leaveBy: Math.min(...deadlines.map((d) => d.leaveBy)),
    abortAt: Math.min(...deadlines.map((d) => d.abortAt)),
    clear: () => recordsClear(flush, rows),
  };
  return flush.sends.run(async () => {
    if (flush.stop !== undefined) return 'flush_stopped';
    for (const row of rows)
      if (isLeaseLapsed(row, clock.now(), leaseMs, deadline.leaveBy)) return 'lease_lapsed';
    return go(deadline);
  });
}

/**
 * The last look before the wire (SPEC §6.1): each row's record, read again under both its names,
 * has no other row in flight, a value that failed to parse included. A batch reads its records in
 * one call, so the look is one moment for all of them. A record that cannot be read is not clear:
 * the row waits.
 */
async function recordsClear(flush: Flush, rows: readonly OutboxRow[]): Promise<boolean> {
  const { store, owner, deps } = flush;
  try {
    const records = await store.byTargets(
      owner,
      rows.map(({ collection, targetId, id }) => ({ collection, targetId, except: id })),
    );
    const now = deps.clock.now();
    return rows.every((row, i) => {
      const record: OutboxRow[] = [];
      for (const raw of records[i]!) {
        const decoded = decodeRow(raw);
        const observed = observeStored(decoded);
        if (observed !== undefined) record.push(observed.row);
        // A value that failed to parse may still be on the wire (§6.1, G4).
        else if (!decoded.ok && decoded.id !== row.id && corruptInFlight(raw, now, deps.leaseMs))
          return false;
      }
      return isRecordClear(record, row, now, deps.leaseMs);
    });
  } catch {
    return false;
  }
}

/** A request that never left: a device-side transient, nothing applied (SPEC §4, §11). */
function unsentOutcome(code: Unsent): Outcome {
  return { kind: 'transient', code, device: true };
}

/** The `sent` event, for a request that left. */
function noteSent(flush: Flush, row: OutboxRow, fence: number, result: TransportResult): void {
  if (result.kind === 'not_sent') return;
  // Every answer publishes how long the server remembers a key (§15): the next resend reads it.
  if (result.kind === 'response')
    flush.deps.retention.noteHeaders(requestOrigin(row.request!.url), result.headers);
  flush.deps.onEvent?.({ type: 'sent', id: row.id, requestId: row.request!.requestId, fence });
}

/** The outcome of a result by the row's handler, which may wrap the classifier (§11). */
function classify(flush: Flush, row: OutboxRow, result: TransportResult): Outcome {
  const { deps } = flush;
  const handler = deps.handlers[row.collection];
  const fallback = classifyResult(result, deps.clock.now());
  if (!handler?.classify) return fallback;
  if (fallback.kind !== 'transient' && fallback.kind !== 'auth')
    return checkOutcome(handler.classify(result, fallback));
  // No answer, one that is not final (409 request in progress, 5xx, 429), or credentials refused
  // (401: nothing applied by this attempt, and an earlier attempt of the row, aborted at its
  // lease, may still reach the server): the server may still be committing the request (§6,
  // §11). Blocking the row on a classifier that throws, or returns no outcome, would release its
  // successors ahead of that commit (§7, G4): the fallback stands and the row keeps its place,
  // its key and its hold on the record.
  try {
    return checkOutcome(handler.classify(result, fallback));
  } catch (error) {
    deps.logger?.error('handler failed', { id: row.id, error: String(error) });
    return fallback;
  }
}

/** A handler's outcome as returned, or its failure when it returned no outcome (§11). */
function checkOutcome(outcome: unknown): Outcome {
  if (isOutcome(outcome)) return outcome;
  throw new Error('classify returned no outcome');
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
