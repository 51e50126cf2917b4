import type { RowView } from '../../client/index.ts';
import { byId, h, mount, relativeTime, short } from './dom.ts';
import { blockedHint } from './messages.ts';
import { fieldsOf, STATUS_HELP } from './rows.ts';
import type { Actions, AppState } from './state.ts';

/**
 * The live outbox rows (SPEC §2, §4): status, claim holder and fence, attempts, the next attempt,
 * and the links between rows — `successorOf` (waits for an earlier change of the same note) and
 * intent rows aimed at `pending:<create>` (sent once the create has a server id).
 */
export function renderRows(state: AppState, actions: Actions): void {
  const { holder } = state;
  mount(
    byId('holder'),
    holder
      ? [
          'Worker holder ',
          h('code', { title: holder.holderId }, short(holder.holderId, 8)),
          ` (holder #${holder.generation} of this worker start, lease ${holder.leaseMs / 1000} s)`,
        ]
      : state.connection === 'failed'
        ? 'No service worker answered.'
        : 'Asking the worker…',
  );

  const container = byId('rows');
  if (state.rows.length === 0) {
    mount(
      container,
      h('p', { class: 'empty' }, 'The outbox is empty: every change reached the server.'),
    );
    return;
  }
  const current = holder?.holderId;
  mount(
    container,
    h(
      'table',
      { class: 'rows' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['row', 'change', 'status', 'holder', 'fence', 'tries', 'next try', 'links', ''].map(
            (label) => h('th', {}, label),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        state.rows.map((view) => renderRow(view, current, actions)),
      ),
    ),
  );
}

function renderRow(view: RowView, current: string | undefined, actions: Actions) {
  const f = fieldsOf(view);
  const live = view.holderId !== undefined;
  // Only a live claim has a holder; an expired one is history (its fence stays in its column).
  const holderText =
    f.claim && live
      ? `${short(f.claim.holderId, 6)}${f.claim.holderId !== current ? ' · not current' : ''}`
      : '—';
  const intentOf =
    f.targetId.startsWith('pending:') && f.kind !== 'create' ? f.targetId.slice(8) : undefined;
  return [
    h(
      'tr',
      { id: `row-${view.id}`, class: `status-${view.status}`, 'data-row': view.id },
      h('td', { title: view.id }, h('code', {}, short(view.id, 8))),
      h(
        'td',
        { title: f.requestId ? `request ${f.requestId}` : 'no request yet' },
        `${f.kind} ${f.targetId.startsWith('pending:') ? `pending:${short(f.targetId, 6)}` : short(f.targetId, 8)}`,
        f.baseRevision !== undefined && f.baseRevision !== null ? ` @${f.baseRevision}` : '',
      ),
      h(
        'td',
        {},
        h(
          'span',
          { class: `badge ${view.status}`, title: STATUS_HELP[view.status] ?? '' },
          view.status,
        ),
      ),
      h('td', { title: f.claim?.holderId ?? '' }, holderText),
      h('td', {}, f.claim ? String(f.claim.fence) : '—'),
      h(
        'td',
        { title: f.lastErrorCode ? `last error: ${f.lastErrorCode}` : '' },
        String(f.attempts),
        f.lastErrorCode ? ` · ${f.lastErrorCode}` : '',
      ),
      h('td', {}, f.nextAttemptAt ? relativeTime(f.nextAttemptAt) : '—'),
      h(
        'td',
        {},
        f.successorOf
          ? link(f.successorOf, intentOf === f.successorOf ? 'intent of' : 'after')
          : null,
        intentOf && intentOf !== f.successorOf ? link(intentOf, 'intent of') : null,
        f.conflict
          ? h(
              'span',
              { class: 'tag conflict', title: 'resent after a revision conflict' },
              'conflict successor',
            )
          : null,
      ),
      h(
        'td',
        {},
        view.status === 'blocked'
          ? [
              h('button', { onclick: () => actions.retry(view.id) }, 'Retry'),
              h(
                'button',
                { class: 'secondary', onclick: () => actions.discard(view.id) },
                'Discard',
              ),
            ]
          : null,
      ),
    ),
    view.status === 'blocked'
      ? h(
          'tr',
          { class: 'blocked-detail' },
          h(
            'td',
            { colspan: 9 },
            h('code', { class: 'code' }, f.blockedCode ?? 'blocked'),
            ' ',
            blockedHint(f.blockedCode),
            f.blockedDetail
              ? h('small', { class: 'detail' }, ` ${problemText(f.blockedDetail)}`)
              : null,
          ),
        )
      : null,
  ];
}

function link(id: string, label: string): HTMLElement {
  return h(
    'a',
    {
      href: `#row-${id}`,
      class: 'tag',
      onclick: (event: Event) => {
        const target = document.getElementById(`row-${id}`);
        if (target === null) return;
        event.preventDefault();
        target.classList.add('flash');
        target.scrollIntoView({ block: 'nearest' });
        setTimeout(() => target.classList.remove('flash'), 1200);
      },
    },
    `${label} ${short(id, 6)}`,
  );
}

/** A problem document (`application/problem+json`) as one readable line. */
function problemText(detail: string): string {
  try {
    const problem = JSON.parse(detail) as {
      title?: string;
      detail?: string;
      issues?: Array<{ path: string; message: string }>;
    };
    const issues = problem.issues?.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
    return [problem.title, problem.detail, issues].filter(Boolean).join(' — ');
  } catch {
    return detail.slice(0, 300);
  }
}
