import type { CollectionHandler } from '../model/handler.ts';
import { pendingCreateId } from '../model/pending.ts';
import type { IssueSummary } from '../model/schema-kit.ts';

/**
 * Mistakes refused at enqueue (SPEC §13 `invalid_intent`), each an issue that names the field,
 * so a call that could never be sent is an error at the call — not a row accepted now and
 * blocked at send. What the schema cannot know is checked here against the collection's
 * handler: which kinds it takes and whether its server needs the edit's revision.
 */

/** The kinds every collection takes (SPEC §2, §6); a handler may declare others (`kinds`). */
export const STANDARD_KINDS = ['create', 'update', 'delete'] as const;

/** The parts of an intent these checks read. */
export interface IntentShape {
  kind: string;
  targetId?: string | undefined;
  baseRevision?: number | null | undefined;
}

/** The kinds a collection takes, as a sentence part: `create, update, delete`. */
function kindsOf(handler: Pick<CollectionHandler, 'kinds'>): string[] {
  return handler.kinds === undefined ? [...STANDARD_KINDS] : [...handler.kinds];
}

/**
 * The shape of an intent: a kind the collection takes; a create names no target (it becomes
 * `pending:<id>`, §8) and every other kind names its record.
 */
export function intentShapeIssues(
  intent: IntentShape,
  handler: Pick<CollectionHandler, 'kinds'>,
): IssueSummary[] {
  const kinds = kindsOf(handler);
  const known = kinds.includes(intent.kind);
  // Undeclared kinds are the handler's to send (an update by another name) when they name a
  // record; with no record named, an unknown kind is most likely a mistyped one.
  if (!known && (handler.kinds !== undefined || intent.targetId === undefined))
    return [
      {
        path: 'kind',
        message: `"${intent.kind}" is not a kind of this collection; expected one of ${kinds.join(', ')} (a create takes no targetId, the others name their record)`,
      },
    ];
  if (intent.kind === 'create' && intent.targetId !== undefined)
    return [
      {
        path: 'targetId',
        message: 'a create takes no targetId: its target is pending:<id>, given in the answer',
      },
    ];
  if (intent.kind !== 'create' && intent.targetId === undefined)
    return [
      {
        path: 'targetId',
        message: `a ${intent.kind} needs the id of its record: a server id, or the pending:<id> of a create`,
      },
    ];
  return [];
}

/**
 * The revision a handler's server requires (`requiresRevision`, e.g. `restHandler`: it sends
 * `If-Match`, and the server answers 428 without one): an edit of a server id must carry the
 * revision it was made from. An edit of `pending:<id>` takes it from the create's receipt when it
 * is converted (§8), so it needs none.
 */
export function revisionIssues(
  intent: IntentShape,
  handler: Pick<CollectionHandler, 'requiresRevision'>,
): IssueSummary[] {
  const { kind, targetId, baseRevision } = intent;
  if (handler.requiresRevision !== true || kind === 'create' || targetId === undefined) return [];
  if (pendingCreateId(targetId) !== undefined) return [];
  if (typeof baseRevision === 'number') return [];
  return [
    {
      path: 'baseRevision',
      message: `a ${kind} of ${targetId} needs the revision it was made from (sent as If-Match, the server requires it): the record's revision from the server, or a record view's revision`,
    },
  ];
}
