import { buildCards, type Card } from './cards.ts';
import { byId, h, mount, short } from './dom.ts';
import { STATUS_HELP } from './rows.ts';
import type { Actions, AppState } from './state.ts';

/**
 * The notes editor: a form for new notes, one card per note with its pending state, and an edit
 * dialog. The form and the dialog live in `index.html` and are wired once, so re-rendering the
 * cards never disturbs what the person is typing.
 */

let editing: Card | undefined;

/** Wires the new-note form and the edit dialog. */
export function wireEditor(actions: Actions): void {
  const form = byId<HTMLFormElement>('new-note');
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    actions.create(String(data.get('title') ?? '').trim(), String(data.get('body') ?? ''));
    form.reset();
    form.querySelector<HTMLInputElement>('[name=title]')?.focus();
  });

  const dialog = byId<HTMLDialogElement>('edit-dialog');
  const editForm = byId<HTMLFormElement>('edit-form');
  editForm.addEventListener('submit', (event) => {
    const data = new FormData(editForm);
    if (editing && (event.submitter as HTMLButtonElement | null)?.value === 'save') {
      actions.edit(editing, String(data.get('title') ?? '').trim(), String(data.get('body') ?? ''));
    }
    editing = undefined;
    dialog.close();
    event.preventDefault();
  });
}

function openEditor(card: Card): void {
  editing = card;
  const form = byId<HTMLFormElement>('edit-form');
  (form.elements.namedItem('title') as HTMLInputElement).value = card.title;
  (form.elements.namedItem('body') as HTMLTextAreaElement).value = card.body;
  byId('edit-target').textContent = card.key.startsWith('pending:')
    ? `not on the server yet (target ${card.key.slice(0, 14)}…)`
    : `revision ${card.revision}`;
  byId<HTMLDialogElement>('edit-dialog').showModal();
}

export function renderEditor(state: AppState, actions: Actions): void {
  const cards = buildCards(state.notes, [...state.rows, ...state.settling], state.receipts);
  mount(
    byId('notes-source'),
    state.notesFrom === 'server'
      ? 'Notes as the server last sent them, with your pending changes on top.'
      : 'This device’s copy: the server did not answer just now. Your changes still go to the outbox.',
    ' ',
    h('button', { class: 'link', onclick: () => actions.refreshNotes() }, 'Reload from server'),
  );
  const list = byId('cards');
  if (cards.length === 0) {
    mount(
      list,
      h(
        'li',
        { class: 'empty' },
        'No notes yet. Write one above: it is stored in the outbox first, then the service worker sends it — even after you close the tab.',
      ),
    );
    return;
  }
  const elements = cards.map((card) => {
    const signature = JSON.stringify([
      card.key,
      card.revision,
      card.title,
      card.body,
      card.status,
      card.deleting,
      card.rows.map(({ view, fields }) => [view.id, view.status, fields.kind, fields.blockedCode]),
    ]);
    const kept = rendered.get(card.key);
    if (kept?.signature === signature) return kept.element;
    const element = renderCard(card, actions);
    rendered.set(card.key, { signature, element });
    return element;
  });
  for (const key of rendered.keys())
    if (!cards.some((card) => card.key === key)) rendered.delete(key);
  // A card that did not change keeps its element, and only the cards that did are swapped in
  // place: a click whose press and release straddle an update lands on the button it was pressed
  // on (a list rebuilt under it would lose the click).
  const shown = [...list.children];
  const inPlace =
    shown.length === elements.length &&
    elements.every(
      (element, i) =>
        shown[i] === element ||
        (!element.isConnected && !elements.includes(shown[i] as HTMLLIElement)),
    );
  if (!inPlace) mount(list, elements);
  else
    elements.forEach((element, i) => {
      if (shown[i] !== element) list.replaceChild(element, shown[i]!);
    });
}

/** The element last rendered for each card, by key, with what it showed. */
const rendered = new Map<string, { signature: string; element: HTMLLIElement }>();

function renderCard(card: Card, actions: Actions): HTMLLIElement {
  const pending = card.key.startsWith('pending:');
  return h(
    'li',
    {
      class: `card${card.deleting ? ' deleting' : ''}${card.status ? ` status-${card.status}` : ''}`,
      'data-key': card.key,
      'data-title': card.title,
    },
    h(
      'div',
      { class: 'card-head' },
      h('h3', {}, card.title || h('em', {}, '(no title)')),
      card.status
        ? h(
            'span',
            { class: `badge ${card.status}`, title: STATUS_HELP[card.status] ?? '' },
            card.status,
          )
        : h('span', { class: 'badge synced', title: 'the server has every change' }, 'synced'),
    ),
    card.body ? h('p', { class: 'card-body' }, card.body) : null,
    h(
      'p',
      { class: 'card-meta' },
      pending ? 'not on the server yet' : `${short(card.key, 8)} · revision ${card.revision}`,
      card.deleting ? ' · will be deleted' : '',
    ),
    card.rows.length > 0
      ? h(
          'ul',
          { class: 'chips' },
          card.rows.map(({ view, fields }) =>
            h(
              'li',
              { class: `chip ${view.status}`, title: STATUS_HELP[view.status] ?? '' },
              `${fields.kind} · ${view.status}`,
              fields.blockedCode ? ` · ${fields.blockedCode}` : '',
            ),
          ),
        )
      : null,
    card.deleting
      ? null
      : h(
          'div',
          { class: 'card-actions' },
          h('button', { onclick: () => openEditor(card) }, 'Edit'),
          h('button', { onclick: () => actions.remove(card) }, 'Delete'),
          pending
            ? null
            : h(
                'button',
                {
                  class: 'secondary',
                  title: 'The server changes this note behind this device’s back',
                  onclick: () => actions.editElsewhere(card),
                },
                'Edit on another device',
              ),
        ),
  );
}
