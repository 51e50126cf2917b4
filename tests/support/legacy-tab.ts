import type { OutboxStore, ReplaceResult } from '../../shared/model/store.ts';
import { OWNER } from './harness.ts';

/**
 * A tab of the old bundle rewriting one row it read as `raw` (§17: it ignores claims and knows
 * nothing of evidence): puts `next` in its place, or deletes it when `next` is undefined — as it
 * does once it has sent the row and read the answer, keeping no receipt.
 */
export function legacyRewrite(
  store: OutboxStore,
  raw: unknown,
  next?: Record<string, unknown>,
): Promise<ReplaceResult> {
  const id = (raw as { id: string }).id;
  return store.replace({
    owner: OWNER,
    expected: [{ id, row: raw }],
    ...(next === undefined ? { delete: [id] } : { put: [next] }),
    reason: 'legacy',
  });
}
