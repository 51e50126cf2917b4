import type { ConflictLedgerEntry, Receipt } from '../../client/index.ts';
import { byId, clock, h, mount, short } from './dom.ts';
import { type Actions, type AppState, versionKey } from './state.ts';

/**
 * How changes ended: the receipts (one per request the server applied, SPEC §5) with the effect
 * count the server reports for that idempotency key, and the conflict ledger (SPEC §10) with the
 * evidence of what each resend overwrote — the overwritten version beside the final one, read
 * from the server's history, and a button that writes the overwritten one back (§10.1).
 */
export function renderLedger(state: AppState, actions: Pick<Actions, 'restore'>): void {
  renderReceipts(state);
  renderConflicts(state, actions);
}

function renderReceipts(state: AppState): void {
  const container = byId('receipts');
  if (state.receipts.length === 0) {
    mount(
      container,
      h('p', { class: 'empty' }, 'No receipts yet: none of your changes has reached the server.'),
    );
    return;
  }
  const byKey = state.stats?.effectsByKey;
  mount(
    container,
    h(
      'table',
      { class: 'receipts' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['settled', 'change', 'request (idempotency key)', 'answer', 'server id', 'effects'].map(
            (label) => h('th', {}, label),
          ),
        ),
      ),
      h(
        'tbody',
        {},
        state.receipts.map((receipt) => receiptRow(receipt, byKey)),
      ),
    ),
  );
}

function receiptRow(receipt: Receipt, byKey: Record<string, number> | undefined) {
  const effects = byKey?.[receipt.requestId];
  return h(
    'tr',
    { 'data-request': receipt.requestId },
    h('td', {}, clock(receipt.settledAt)),
    h('td', {}, changeText(receipt)),
    h('td', { title: receipt.requestId }, h('code', {}, short(receipt.requestId, 10))),
    h(
      'td',
      {},
      String(receipt.status),
      receipt.revision !== undefined ? ` · rev ${receipt.revision}` : '',
    ),
    h('td', {}, receipt.serverId ? short(receipt.serverId, 8) : '—'),
    h(
      'td',
      {
        class: effects === undefined ? 'muted' : effects === 1 ? 'ok' : 'bad',
        title: 'writes the server committed for this idempotency key since it started',
      },
      effects === undefined ? 'n/a' : `×${effects}`,
    ),
  );
}

/** `create “Shopping”`, `update “Shopping”`, `delete …ec7aec40`: what a receipt settled. */
function changeText(receipt: Receipt): string {
  const title = (receipt.body as { title?: unknown } | null)?.title;
  if (receipt.kind !== 'delete' && typeof title === 'string') return `${receipt.kind} “${title}”`;
  return `${receipt.kind} ${short(receipt.serverId ?? receipt.targetId, 8)}`;
}

function renderConflicts(state: AppState, actions: Pick<Actions, 'restore'>): void {
  const container = byId('conflicts');
  if (state.conflicts.length === 0) {
    mount(
      container,
      h(
        'p',
        { class: 'empty' },
        'No conflicts. Use “Edit on another device” on a note, then edit it here: the resend and what it overwrote appear in this ledger.',
      ),
    );
    return;
  }
  mount(
    container,
    h(
      'ul',
      { class: 'conflicts' },
      state.conflicts.map((entry) =>
        conflictItem(entry, state.evidence[entry.successorId], state.versions, actions),
      ),
    ),
  );
}

function conflictItem(
  entry: ConflictLedgerEntry,
  evidence: unknown,
  versions: AppState['versions'],
  actions: Pick<Actions, 'restore'>,
) {
  const e = evidence as Evidence | undefined;
  return h(
    'li',
    { class: 'conflict', 'data-successor': entry.successorId },
    h(
      'p',
      {},
      h('strong', {}, `${short(entry.targetId, 8)}: `),
      `your change was made from an older revision; the server was at revision ${entry.overwrittenRevision ?? '?'}. `,
      `It was resent once at that revision and applied as revision ${entry.finalRevision ?? '?'} (last writer wins).`,
    ),
    h(
      'dl',
      {},
      pair('original request', h('code', { title: entry.originalId }, short(entry.originalId, 10))),
      pair('resent as', h('code', { title: entry.successorId }, short(entry.successorId, 10))),
      pair('overwritten revision', String(entry.overwrittenRevision ?? 'unknown')),
      pair('final revision', String(entry.finalRevision ?? 'unknown')),
      pair('resends', String(entry.lineageLength + 1)),
      pair('server copy', copyText(entry.copy)),
      pair('settled', clock(entry.settledAt)),
    ),
    recovery(entry, versions, actions),
    e
      ? h(
          'details',
          {},
          h('summary', {}, 'Evidence kept on the row'),
          h(
            'dl',
            {},
            pair('basis', e.basis ?? '?'),
            pair('made from revision', String(e.predecessor?.baseRevision ?? '—')),
            pair(
              'original bytes',
              h(
                'code',
                {},
                `${e.predecessor?.request?.method ?? ''} ${e.predecessor?.request?.url ?? ''} ${e.predecessor?.request?.body ?? ''}`,
              ),
            ),
            pair(
              'server said',
              `${e.failure?.status ?? '?'} at revision ${e.failure?.currentRevision ?? '?'}`,
            ),
            pair('what was overwritten', remoteText(e.copy?.remote)),
          ),
        )
      : null,
  );
}

/**
 * What the resend overwrote next to what it left, and the way back (SPEC §10.1): a restore is a
 * new edit through the outbox, so it is shown as done once the ledger entry records its row.
 */
function recovery(
  entry: ConflictLedgerEntry,
  versions: AppState['versions'],
  actions: Pick<Actions, 'restore'>,
) {
  const ref = entry.historyRef;
  if (!ref) {
    return h(
      'p',
      { class: 'fine recovery' },
      'The server kept no copy of what was overwritten: nothing to restore.',
    );
  }
  const version = (revision: number | null) =>
    revision === null ? undefined : versions[versionKey(entry.targetId, revision)];
  return h(
    'div',
    { class: 'recovery' },
    h(
      'div',
      { class: 'versions' },
      versionFigure(
        'overwritten',
        `overwritten: revision ${ref.supersededRevision}`,
        version(ref.supersededRevision),
      ),
      versionFigure(
        'final',
        `final: revision ${entry.finalRevision ?? '?'}`,
        version(entry.finalRevision),
      ),
    ),
    entry.restoredBy
      ? h(
          'p',
          { class: 'restored' },
          'Restored: the overwritten version was enqueued again as ',
          h('code', { title: entry.restoredBy.rowId }, short(entry.restoredBy.rowId, 10)),
          '.',
        )
      : entry.kind === 'delete'
        ? null
        : h(
            'button',
            {
              class: 'secondary',
              'data-restore': entry.successorId,
              onclick: () => actions.restore(entry.successorId),
            },
            'Restore the other device’s version',
          ),
  );
}

function versionFigure(
  which: 'overwritten' | 'final',
  caption: string,
  value: AppState['versions'][string] | undefined,
) {
  return h(
    'figure',
    { class: `version ${which}`, 'data-version': which },
    h('figcaption', {}, caption),
    value === undefined
      ? h('p', { class: 'muted' }, 'reading from the server…')
      : value === 'missing'
        ? h('p', { class: 'muted' }, 'no longer kept by the server')
        : [
            h('p', { class: 'version-title' }, value.title ?? ''),
            value.body ? h('p', { class: 'version-body' }, value.body) : null,
          ],
  );
}

interface Evidence {
  basis?: string;
  predecessor?: {
    baseRevision?: number | null;
    request?: { method?: string; url?: string; body?: string | null };
  };
  failure?: { status?: number; currentRevision?: number | null };
  copy?: { remote?: unknown };
}

const pair = (term: string, value: Node | string) => [h('dt', {}, term), h('dd', {}, value)];

/** The ledger keeps only which copies existed, never bodies (SPEC §10). */
function copyText(copy: unknown): string {
  const remote = (copy as { remote?: unknown } | null)?.remote;
  if (remote === 'snapshot') return 'the server sent its copy';
  if (remote === 'revision_only') return 'only the server’s revision';
  if (remote === 'absent') return 'none';
  return JSON.stringify(copy ?? null);
}

/** Which copy of the overwritten server state exists (SPEC §10): typed, never guessed. */
function remoteText(remote: unknown): string {
  const r = remote as
    | { snapshot?: number; value?: unknown; revisionOnly?: number; absent?: string }
    | undefined;
  if (r?.snapshot !== undefined) {
    const title = (r.value as { title?: unknown } | null)?.title;
    return `server copy at revision ${r.snapshot}${typeof title === 'string' ? `: “${title}”` : ''}`;
  }
  if (r?.revisionOnly !== undefined) return `only its revision (${r.revisionOnly})`;
  if (r?.absent !== undefined) return `no copy (${r.absent})`;
  return JSON.stringify(remote ?? null);
}
