import type { CollectionHandler, IntentInfo } from '../model/handler.ts';
import { isJsonObject, type Json } from '../model/json.ts';

/** The result of folding a later intent into an earlier one of the same record (SPEC §6). */
export type MergeResult =
  | { kind: 'merged'; intent: { kind: string; payload: Json | undefined } }
  | { kind: 'cancel' }
  | { kind: 'target_deleted' }
  /** Kinds the default rules do not know: keep both, in order. */
  | { kind: 'keep_both' };

function mergePayload(earlier: Json | undefined, later: Json | undefined): Json | undefined {
  if (isJsonObject(earlier) && isJsonObject(later)) return { ...earlier, ...later };
  return later === undefined ? earlier : later;
}

/**
 * The default merge rules (SPEC §6), after the handler's `coalesce` had its say:
 * update+update → update (shallow merge, later wins); create+update → create (merged);
 * create+delete → both cancelled; update+delete → delete; delete+anything → `target_deleted`.
 * The one source of these rules: the enqueue folds rows with it, and the record overlay shows
 * pending edits with it (`record-overlay.ts`), so a screen shows what the outbox will send.
 */
export function mergeIntents(
  earlier: IntentInfo,
  later: IntentInfo,
  handler: Pick<CollectionHandler, 'coalesce'> | undefined,
): MergeResult {
  if (earlier.kind === 'delete') return { kind: 'target_deleted' };
  const custom = handler?.coalesce?.(earlier, later);
  if (custom === 'cancel') return { kind: 'cancel' };
  if (custom !== undefined) return { kind: 'merged', intent: custom };
  const pair = `${earlier.kind}+${later.kind}`;
  switch (pair) {
    case 'update+update':
      return {
        kind: 'merged',
        intent: { kind: 'update', payload: mergePayload(earlier.payload, later.payload) },
      };
    case 'create+update':
      return {
        kind: 'merged',
        intent: { kind: 'create', payload: mergePayload(earlier.payload, later.payload) },
      };
    case 'create+delete':
      return { kind: 'cancel' };
    case 'update+delete':
      return { kind: 'merged', intent: { kind: 'delete', payload: later.payload } };
    default:
      return { kind: 'keep_both' };
  }
}
