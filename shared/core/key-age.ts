import type { Outcome } from '../model/outcome.ts';
import type { ReceiptLookup, TransportResult } from '../model/ports.ts';
import type { OutboxRow } from '../model/row.ts';
import { NO_CREDENTIALS } from '../plan/classify.ts';
import { planKeyAge } from '../plan/key-retention.ts';
import { requestOrigin } from '../plan/origin-recovery.ts';
import type { Flush } from './flush.ts';
import { settleAnswer, settleOutcome } from './settle-outcome.ts';

/** A row this holder claimed, with the fence its claim wrote and the row as it was observed. */
export interface ClaimedRow {
  row: OutboxRow;
  fence: number;
  /** The row before the claim: what earlier attempts left is read from it. */
  observed: OutboxRow;
}

/** What the send path lends the screen: its send slots and its classifier. */
export interface SendPath {
  /** Runs `go` in a send slot under the row's claim; a code when it did not run (§4). */
  inSlot(row: OutboxRow, go: () => Promise<ReceiptLookup>): Promise<ReceiptLookup | Unsent>;
  /** The outcome of an answer by the row's handler, which may wrap the classifier (§11). */
  classify(row: OutboxRow, result: TransportResult): Outcome;
  /** Sends a claimed row alone and settles its answer, as the send path does. */
  sendAlone(one: ClaimedRow): Promise<void>;
}

/** Why a claimed request did not go after all (SPEC §4): it goes back to the queue. */
export type Unsent = 'flush_stopped' | 'lease_lapsed';

/**
 * SPEC §15 "A key is only safe while the server remembers it", on the send path: of the rows just
 * claimed, those whose request may have been applied and whose key is older than the server's
 * retention allows are not sent. Decided at once from what this holder knows, so rows that go
 * are not held back behind a read: a key younger than the least any server keeps (§15: 7 days,
 * less the margin) goes unless a server said it keeps less; only a key old enough to be judged
 * waits for what `meta` kept (a longer retention may let it go after all). Returns the rows to send, and the asking of
 * the others, which settles each by the receipt lookup: found → applied with its receipt; not
 * found → blocked `retention_exceeded`, its evidence kept (G1); the lookup failed → back in the
 * queue on backoff, its key unchanged.
 */
export function screenKeyAge(
  flush: Flush,
  claimed: readonly ClaimedRow[],
  send: SendPath,
): { due: ClaimedRow[]; asked: Promise<void> } {
  const { deps } = flush;
  const now = deps.clock.now();
  const due: ClaimedRow[] = [];
  const aged: ClaimedRow[] = [];
  for (const one of claimed) {
    const retentionMs = deps.retention.get(requestOrigin(one.row.request!.url));
    if (planKeyAge(one.observed, { now, retentionMs }) === 'send') due.push(one);
    else aged.push(one);
  }
  const asked =
    aged.length === 0
      ? Promise.resolve()
      : Promise.all(aged.map((one) => judgeAged(flush, one, send))).then(() => undefined);
  return { due, asked };
}

/**
 * An aged key judged again once the retention `meta` kept is read (a restarted holder learns it
 * there): sent after all under a longer retention, else the receipt lookup is asked.
 */
async function judgeAged(flush: Flush, one: ClaimedRow, send: SendPath): Promise<void> {
  const { retention, clock } = flush.deps;
  const loading = retention.load();
  if (loading !== undefined) {
    await loading;
    const retentionMs = retention.get(requestOrigin(one.row.request!.url));
    if (planKeyAge(one.observed, { now: clock.now(), retentionMs }) === 'send')
      return send.sendAlone(one);
  }
  return askFirst(flush, one, send);
}

/** Asks the receipt lookup about an aged key and settles the row by its answer. */
async function askFirst(flush: Flush, { row, fence }: ClaimedRow, send: SendPath): Promise<void> {
  const request = row.request!;
  const origin = requestOrigin(request.url);
  const lookup = await send.inSlot(row, () =>
    flush.deps.transport.lookupReceipt(request.requestId, {
      owner: flush.owner,
      collection: row.collection,
      url: request.url,
    }),
  );
  const none: TransportResult = { kind: 'timeout' };
  if (typeof lookup === 'string') {
    // The flush stopped or the lease ran short before the lookup could go: nothing was asked.
    await settleOutcome(flush, row, fence, { kind: 'transient', code: lookup, device: true }, none);
    return;
  }
  if (lookup.kind !== 'error') flush.deps.retention.note(origin, lookup.retentionMs);
  switch (lookup.kind) {
    case 'found': {
      // The stored answer, as a replay of the key would have brought it: settled by the same
      // rules (a 2xx is the row's receipt), nothing resent.
      const result: TransportResult = {
        kind: 'response',
        status: lookup.status,
        headers: { 'idempotent-replayed': 'true' },
        body: JSON.stringify(lookup.body),
      };
      await settleAnswer(flush, row, fence, result, () => send.classify(row, result));
      return;
    }
    case 'not_found':
      await settleOutcome(
        flush,
        row,
        fence,
        {
          kind: 'permanent',
          code: 'retention_exceeded',
          detail: `request ${request.requestId} may have been applied and its server no longer remembers it; retry sends it as a new request, through the revision check`,
        },
        none,
      );
      return;
    case 'error':
      await settleOutcome(flush, row, fence, lookupFailure(lookup.message), none);
  }
}

/**
 * A lookup that got no answer leaves the row as it was — queued with its key, on backoff — and
 * one refused for want of credentials holds it like a send would (§13).
 */
function lookupFailure(message: string): Outcome {
  if (message === 'auth_unavailable') return { kind: 'auth', code: NO_CREDENTIALS };
  if (message === 'http_401') return { kind: 'auth', code: 'http_401' };
  if (/^http_\d{3}$/.test(message)) return { kind: 'transient', code: message };
  return { kind: 'transient', code: 'network' };
}
