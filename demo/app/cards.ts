import type { Receipt, RowView } from '../../client/index.ts';
import { fieldsOf, type RowFields, STATUS_ORDER } from './rows.ts';
import type { ServerNote } from './server-api.ts';

/**
 * What the editor shows: the server copy of each note with the outbox rows aimed at it laid over
 * it, plus notes created on this device that the server has not confirmed yet (their key is the
 * `pending:<create row id>` target, SPEC §8). Pure: the same rows and notes give the same cards.
 */

export interface Card {
  /** The target to enqueue edits for: a server id, or `pending:<create row id>`. */
  key: string;
  /** The server revision this device knows; undefined before the create's receipt. */
  revision?: number;
  title: string;
  body: string;
  /** Outbox rows aimed at this note, oldest first. */
  rows: Array<{ view: RowView; fields: RowFields }>;
  /** The most pressing status among its rows; undefined when nothing is pending. */
  status?: string;
  /** A delete of this note waits in the outbox. */
  deleting: boolean;
}

export function buildCards(
  notes: readonly ServerNote[],
  views: readonly RowView[],
  receipts: readonly Receipt[] = [],
): Card[] {
  // A create's receipt names the server id its `pending:` rows stand for: while the outbox still
  // shows the settled create (its removal not delivered yet), it joins the note it became
  // instead of showing as a second card.
  const created = new Map(
    receipts.flatMap((r) => (r.serverId === undefined ? [] : [[`pending:${r.rowId}`, r.serverId]])),
  );
  const rows = views
    .map((view) => ({ view, fields: fieldsOf(view) }))
    .filter(({ fields }) => fields.collection === 'notes')
    .sort((a, b) => a.fields.savedAt - b.fields.savedAt || a.view.id.localeCompare(b.view.id));

  const cards = new Map<string, Card>();
  for (const note of notes) {
    cards.set(note.id, {
      key: note.id,
      revision: note.revision,
      title: note.title,
      body: note.body,
      rows: [],
      deleting: false,
    });
  }
  const pending: Card[] = [];
  for (const row of rows) {
    const { fields } = row;
    let card = cards.get(created.get(fields.targetId) ?? fields.targetId);
    if (card === undefined) {
      card = { key: fields.targetId, title: '', body: '', rows: [], deleting: false };
      cards.set(fields.targetId, card);
      pending.push(card);
    }
    card.rows.push(row);
    if (fields.kind === 'delete') card.deleting = true;
    const { title, body } = fields.payload;
    if (typeof title === 'string') card.title = title;
    if (typeof body === 'string') card.body = body;
  }
  for (const card of cards.values()) card.status = mostPressing(card.rows);

  const confirmed = notes.map((note) => cards.get(note.id)!).reverse();
  return [...pending.reverse(), ...confirmed];
}

function mostPressing(rows: Card['rows']): string | undefined {
  let best: number | undefined;
  for (const { view } of rows) {
    const rank = STATUS_ORDER.indexOf(view.status as (typeof STATUS_ORDER)[number]);
    const known = rank === -1 ? STATUS_ORDER.length - 1 : rank;
    if (best === undefined || known < best) best = known;
  }
  return best === undefined ? undefined : STATUS_ORDER[best];
}
