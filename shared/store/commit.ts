import { deepEqual } from '../model/json.ts';
import { type ChangeNotice, isUnreadable, type ReplacePlan } from '../model/store.ts';
import { encodeKey, type Key } from './keys.ts';

/**
 * What both stores do around one `replace` commit (SPEC §3): the compare, the notice, and the
 * listeners that receive it.
 */

/**
 * Whether a row read inside the transaction still equals what the planner observed: structural
 * equality of the raw value, so that a legacy writer who changes a field without bumping anything
 * is still detected. `null` (or `undefined`, what `get` returns for a missing row) means the row
 * must be absent.
 */
export function matchesObservation(current: unknown, expected: unknown): boolean {
  if (expected === null || expected === undefined) return current === undefined;
  // IndexedDB reads an unreadable value as null, inside the transaction as outside.
  if (isUnreadable(expected)) return current === null || isUnreadable(current);
  return current !== undefined && deepEqual(current, expected);
}

/**
 * A value read by id as one owner may see it (G6): a value of another owner reads as absent. A
 * value with no owner to tell (an unreadable stand-in, a corrupt value) is handed back, for its
 * reader to quarantine or refuse.
 */
export function visibleTo<T>(value: T, owner: string | undefined): T | undefined {
  if (owner === undefined || typeof value !== 'object' || value === null) return value;
  const of = (value as { owner?: unknown }).owner;
  return typeof of === 'string' && of !== owner ? undefined : value;
}

/**
 * Whether the primary keys found for a record are exactly `ids` (the `records` check), compared
 * by value: a key read back is a new object for an array, Date or binary key (§6.1).
 */
export function holdsExactly(found: readonly unknown[], ids: readonly unknown[]): boolean {
  const named = new Set(ids.map((id) => encodeKey(id as Key)));
  return found.length === ids.length && found.every((key) => named.has(encodeKey(key as Key)));
}

/** The meta key of an owner's `seq` counter (§6.1). */
export function seqCounterKey(owner: string): string {
  return `seq:${owner}`;
}

/**
 * A committed plan's puts with their fresh `seq` (§6.1): each id of `plan.seq`, in order, takes
 * the next value after `counter`. Returns the rows to store and the counter raised.
 */
export function assignSeq(plan: ReplacePlan, counter: number): { put: unknown[]; counter: number } {
  const put = [...(plan.put ?? [])];
  for (const id of plan.seq ?? []) {
    const at = put.findIndex((row) => (row as { id?: unknown } | null)?.id === id);
    if (at < 0) continue;
    counter += 1;
    put[at] = { ...(put[at] as object), seq: counter };
  }
  return { put, counter };
}

/** A stored counter value as a number: anything but a positive safe integer reads as 0. */
export function counterValue(value: unknown): number {
  return Number.isSafeInteger(value) && (value as number) > 0 ? (value as number) : 0;
}

/**
 * The notice for a committed plan: the ids of rows it put or deleted (SPEC §3), and why. A plan
 * that holds a row for want of credentials is announced as `held`, whatever its own reason, so
 * every page of the owner can say so at once (§23).
 */
export function changeNoticeFor(plan: ReplacePlan): ChangeNotice {
  return mergedNotice([plan]);
}

/**
 * One notice for the plans a batched transaction committed (SPEC §3: one per transaction): at
 * least one, all of one owner; the first one's reason unless a plan held a row.
 */
export function mergedNotice(plans: ReplacePlan[]): ChangeNotice {
  const ids = new Set<string>();
  let { reason, owner } = plans[0]!;
  for (const plan of plans) {
    for (const row of plan.put ?? []) {
      const put = row as { id?: unknown; state?: unknown } | null;
      if (typeof put?.id === 'string') ids.add(put.id);
      if (put?.state === 'held') reason = 'held';
    }
    for (const id of plan.delete ?? []) if (typeof id === 'string') ids.add(id);
  }
  return { ids: [...ids], reason, owner };
}

/** Whether a message received from another connection has the shape of a {@link ChangeNotice}. */
export function isChangeNotice(value: unknown): value is ChangeNotice {
  const notice = value as Partial<ChangeNotice> | null;
  return (
    typeof notice === 'object' &&
    notice !== null &&
    Array.isArray(notice.ids) &&
    notice.ids.every((id) => typeof id === 'string') &&
    typeof notice.reason === 'string' &&
    typeof notice.owner === 'string'
  );
}

/** The `onChange` listeners of one connection. */
export class ChangeListeners {
  readonly #listeners = new Set<(notice: ChangeNotice) => void>();

  /** Adds a listener; the returned function removes it. */
  add(listener: (notice: ChangeNotice) => void): () => void {
    const entry = (notice: ChangeNotice) => listener(notice);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /**
   * Calls every listener once. A throwing listener must not turn a committed `replace` into a
   * rejected one (the caller would treat its commit as failed), so its error is rethrown on its
   * own, as an event listener's would be.
   */
  emit(notice: ChangeNotice): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(notice);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  clear(): void {
    this.#listeners.clear();
  }
}
