import type { ConflictFacts, IntentInfo, ReceiptFacts } from '../model/handler.ts';
import { inspectJson } from '../model/json-bounds.ts';
import { PENDING_PREFIX } from '../model/pending.ts';
import { jsonValue } from '../model/schema-kit.ts';

/**
 * What a collection's hooks return, checked before anything is planned with it (SPEC §11, G7):
 * a value of the wrong shape is the hook's failure — it throws here, and the caller's
 * `handler_failed` handling takes over (the enqueue refused, the row blocked with the reason) —
 * never a row written that its own codec would quarantine, an edit sent to `pending:<C>`, or a
 * resend without the revision it was re-issued at.
 */

/** A revision as stored or read: a finite number, or `null` for none. */
export function isRevision(value: unknown): value is number | null {
  return value === null || (typeof value === 'number' && Number.isFinite(value));
}

/** A revision as a hook may give it: a finite number, or `null`/`undefined` for none. */
function revisionOf(value: unknown, what: string): number | null | undefined {
  if (value === undefined || isRevision(value)) return value;
  throw new Error(`${what} returned a revision that is no number: ${String(value)}`);
}

/** `readReceipt`'s facts, checked: a string server id, a revision that is a number. */
export function checkReceiptFacts(facts: ReceiptFacts): ReceiptFacts {
  if (facts.serverId !== undefined && typeof facts.serverId !== 'string')
    throw new Error('readReceipt returned a server id that is no string');
  // A server id in the namespace of pending targets would make the record's later edits look
  // like edits of a create not yet applied (§6.1, §8).
  if (facts.serverId?.startsWith(PENDING_PREFIX))
    throw new Error(
      `readReceipt returned a server id that reads as a pending target: ${facts.serverId}`,
    );
  revisionOf(facts.revision, 'readReceipt');
  return facts;
}

/**
 * `readConflict`'s facts, checked; a current revision it did not find is `null` — no revision
 * to re-issue at, so the row is blocked with its evidence, never resent without one (§10).
 */
export function checkConflictFacts(facts: ConflictFacts): ConflictFacts {
  const currentRevision = revisionOf(facts.currentRevision, 'readConflict') ?? null;
  if (facts.remote !== undefined) revisionOf(facts.remote.revision ?? NaN, 'readConflict');
  if (facts.history !== undefined) revisionOf(facts.history.revision ?? NaN, 'readConflict');
  return { ...facts, currentRevision };
}

/**
 * `coalesce`'s merge of `earlier` and a later edit, checked (§6, §8): a create stays a create (its
 * record has no server id yet) and nothing else becomes one, the kind is one the collection
 * takes, and the payload is JSON.
 */
export function checkMerged(
  earlier: IntentInfo,
  merged: Pick<IntentInfo, 'kind' | 'payload'>,
  kinds: readonly string[] | undefined,
): void {
  if (typeof merged?.kind !== 'string' || (kinds !== undefined && !kinds.includes(merged.kind)))
    throw new Error(
      `coalesce returned a kind this collection does not take: ${String(merged?.kind)}`,
    );
  if ((earlier.kind === 'create') !== (merged.kind === 'create'))
    throw new Error(`coalesce turned a ${earlier.kind} into a ${merged.kind}`);
  if (
    merged.payload !== undefined &&
    (inspectJson(merged.payload) !== undefined || !jsonValue.safeParse(merged.payload).success)
  )
    throw new Error('coalesce returned a payload that is no JSON');
}
