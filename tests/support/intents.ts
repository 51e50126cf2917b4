import type { Json } from '../../shared/model/json.ts';
import type { EnqueueInput } from '../../shared/model/page-api.ts';

/** Intents on the `notes` collection of the model server, as the scenario tests enqueue them. */

export const createNote = (payload?: Json): EnqueueInput => ({
  collection: 'notes',
  kind: 'create',
  ...(payload === undefined ? {} : { payload }),
});

export const updateNote = (
  targetId: string,
  payload: Json,
  baseRevision?: number | null,
): EnqueueInput => ({
  collection: 'notes',
  kind: 'update',
  targetId,
  payload,
  ...(baseRevision === undefined ? {} : { baseRevision }),
});

export const deleteNote = (targetId: string, baseRevision?: number | null): EnqueueInput => ({
  collection: 'notes',
  kind: 'delete',
  targetId,
  ...(baseRevision === undefined ? {} : { baseRevision }),
});
