import { ERROR_CODES } from '../shared/model/error-codes.ts';
import type { OutboxHealth, RowView } from '../shared/model/page-api.ts';
import type { OutboxRow } from '../shared/model/row.ts';
import type { ConflictLedgerEntry, Receipt } from '../shared/model/store.ts';

/**
 * What `<outbox-inspector>` draws (SPEC §23), as plain DOM built from one snapshot: the health
 * line, the rows, the receipts and the conflict ledger. Every value is written as text, never as
 * markup: rows hold what users typed. Buttons call the actions they are given.
 */

/** One render's data, read together after each change of the rows. */
export interface Snapshot {
  rows: RowView[];
  health: OutboxHealth | undefined;
  receipts: Receipt[];
  conflicts: ConflictLedgerEntry[];
  /** Versions read for the conflict ledger, by `targetId@revision`; null: the server has none. */
  versions: Record<string, string | null>;
}

/** What the buttons do. Each returns a promise; a failure shows on the button. */
export interface ViewActions {
  retry(id: string): Promise<unknown>;
  discard(id: string): Promise<unknown>;
  restore(conflictId: string): Promise<unknown>;
  exportTrace(): Promise<unknown>;
  /** Whether versions can be read for the ledger (the element's `readVersion` is set). */
  versions: boolean;
}

type Child = Node | string | null | undefined;

/** An element with attributes and children; `null`/`undefined` children are skipped. */
export function el(tag: string, attributes: Record<string, string> = {}, ...children: Child[]) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

/** The last `n` characters of an id (the whole id is its title). */
export function short(id: string | undefined, n = 8): string {
  if (id === undefined) return '';
  const bare = id.startsWith('pending:') ? id.slice(8) : id;
  return bare.length <= n ? bare : `…${bare.slice(-n)}`;
}

const code = (id: string | undefined, n?: number) =>
  id === undefined ? '—' : el('code', { title: id }, short(id, n));

const time = (at: number | null | undefined) =>
  at === null || at === undefined ? '' : new Date(at).toLocaleTimeString([], { hour12: false });

/** The key of a record's version in {@link Snapshot.versions}. */
export const versionKey = (targetId: string, revision: number) => `${targetId}@${revision}`;

/** A button that runs `run` once per click and shows a failure as its title. */
function act(label: string, run: () => Promise<unknown>, attributes: Record<string, string> = {}) {
  const button = el('button', { type: 'button', ...attributes }, label) as HTMLButtonElement;
  button.addEventListener('click', () => {
    button.disabled = true;
    run().then(
      () => {
        button.disabled = false;
      },
      (error: unknown) => {
        button.disabled = false;
        button.title = String((error as Error)?.message ?? error);
        button.dataset.failed = '';
      },
    );
  });
  return button;
}

function table(name: string, headers: string[], rows: HTMLElement[]): HTMLElement {
  return el(
    'table',
    { class: name },
    el('thead', {}, el('tr', {}, ...headers.map((header) => el('th', {}, header)))),
    el('tbody', {}, ...rows),
  );
}

const row = (attributes: Record<string, string>, ...cells: Child[]) =>
  el('tr', attributes, ...cells.map((cell) => el('td', {}, cell)));

/** The health line: the verdict and its causes, age, last send, next try, senders, storage. */
export function healthLine(health: OutboxHealth | undefined, actions: ViewActions): HTMLElement {
  const verdict =
    health === undefined
      ? 'health: no answer'
      : health.stalled === null
        ? 'healthy'
        : `stalled: ${health.causes.join(', ')}`;
  const facts =
    health === undefined
      ? []
      : [
          `${health.total} rows`,
          health.oldestPendingAgeMs === null
            ? ''
            : `oldest ${Math.round(health.oldestPendingAgeMs / 1000)} s`,
          `last sent ${time(health.lastSuccessAt) || 'never'}`,
          `next try ${time(health.nextAttemptAt) || 'none'}`,
          `senders ${
            Object.entries(health.senders)
              .map(([kind, id]) => `${kind} ${short(id)}`)
              .join(', ') || 'none'
          }`,
          `storage ${health.storage.persisted ? 'persisted' : 'best effort'}`,
        ];
  return el(
    'p',
    {
      part: 'health',
      class: 'health',
      'data-stalled': health?.stalled ?? '',
    },
    el('strong', {}, verdict),
    facts.length === 0 ? null : ` · ${facts.filter(Boolean).join(' · ')} `,
    act('Export trace', actions.exportTrace, { 'data-action': 'export-trace' }),
  );
}

/** The rows: status, claim holder (and whether it is a live sender), fence, tries, next try, links. */
export function rowsTable(data: Snapshot, actions: ViewActions): HTMLElement {
  if (data.rows.length === 0)
    return el('p', { class: 'empty' }, 'The outbox is empty: every change reached the server.');
  const live = new Set(Object.values(data.health?.senders ?? {}));
  const rows = data.rows.flatMap((view) => {
    const r = view.row as Partial<OutboxRow>;
    const holder = view.holderId;
    const pendingOf =
      r.targetId?.startsWith('pending:') && r.kind !== 'create' ? r.targetId.slice(8) : undefined;
    const error = r.blockedCode ?? r.evidence?.lastErrorCode;
    const line = row(
      { 'data-row': view.id, class: `status-${view.status}` },
      code(view.id),
      el(
        'span',
        { title: r.request?.requestId ? `request ${r.request.requestId}` : 'no request yet' },
        `${r.collection ?? '?'} ${r.kind ?? '?'} ${short(r.targetId)}`,
        typeof r.baseRevision === 'number' ? ` @${r.baseRevision}` : '',
      ),
      el('span', { class: `badge ${view.status}` }, view.status),
      holder === undefined
        ? '—'
        : el('span', {}, code(holder), live.size > 0 && !live.has(holder) ? ' · not current' : ''),
      r.claim ? String(r.claim.fence) : '—',
      `${r.evidence?.attemptCount ?? 0}${error ? ` · ${error}` : ''}`,
      time(r.nextAttemptAt) || '—',
      el(
        'span',
        {},
        r.successorOf ? `${pendingOf === r.successorOf ? 'intent of' : 'after'} ` : null,
        r.successorOf ? code(r.successorOf, 6) : null,
        pendingOf && pendingOf !== r.successorOf ? 'intent of ' : null,
        pendingOf && pendingOf !== r.successorOf ? code(pendingOf, 6) : null,
        r.conflict ? ' conflict successor' : null,
      ),
      view.status === 'blocked'
        ? el(
            'span',
            {},
            act('Retry', () => actions.retry(view.id), { 'data-action': 'retry' }),
            act('Discard', () => actions.discard(view.id), { 'data-action': 'discard' }),
          )
        : null,
    );
    if (view.status !== 'blocked') return [line];
    const detail = el(
      'td',
      { colspan: '9' },
      el('code', {}, r.blockedCode ?? 'blocked'),
      ` ${hintOf(r.blockedCode)}`,
      r.blockedDetail ? el('small', {}, ` ${problemText(r.blockedDetail)}`) : null,
    );
    return [line, el('tr', { class: 'blocked-detail' }, detail)];
  });
  return table(
    'rows',
    ['row', 'change', 'status', 'holder', 'fence', 'tries', 'next try', 'links', ''],
    rows,
  );
}

/** A code's hint: the library's own, or what an HTTP refusal asks of the app. */
function hintOf(code: string | undefined): string {
  if (code === undefined) return '';
  if (Object.hasOwn(ERROR_CODES, code)) return ERROR_CODES[code as keyof typeof ERROR_CODES];
  if (code.startsWith('http_'))
    return 'The server refused the request for good: retry or discard it.';
  return '';
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

/** The receipts: when, which record, the request (idempotency key), the answer. */
export function receiptsTable(receipts: Receipt[]): HTMLElement {
  if (receipts.length === 0)
    return el('p', { class: 'empty' }, 'No receipts yet: no change has reached the server.');
  return table(
    'receipts',
    ['settled', 'change', 'request (idempotency key)', 'answer', 'server id'],
    receipts.map((r) =>
      row(
        { 'data-request': r.requestId },
        time(r.settledAt),
        `${r.collection} ${r.kind} ${short(r.serverId ?? r.targetId)}`,
        code(r.requestId, 10),
        `${r.status}${r.revision === undefined ? '' : ` · rev ${r.revision}`}`,
        r.serverId ? code(r.serverId) : '—',
      ),
    ),
  );
}

/** The ledger keeps only which copies existed, never bodies (SPEC §10). */
function copyText(copy: unknown): string {
  const remote = (copy as { remote?: unknown } | null)?.remote;
  if (remote === 'snapshot') return 'the server sent its copy';
  if (remote === 'revision_only') return 'only the server’s revision';
  if (remote === 'absent') return 'none';
  return JSON.stringify(copy ?? null);
}

/** The conflict ledger: what each resend overwrote, the versions side by side, and restore. */
export function conflictList(data: Snapshot, actions: ViewActions): HTMLElement {
  if (data.conflicts.length === 0) return el('p', { class: 'empty' }, 'No conflicts.');
  return el(
    'ul',
    { class: 'conflicts' },
    ...data.conflicts.map((c) => conflictItem(c, data, actions)),
  );
}

function conflictItem(entry: ConflictLedgerEntry, data: Snapshot, actions: ViewActions) {
  const pair = (term: string, value: Node | string) => [el('dt', {}, term), el('dd', {}, value)];
  const ref = entry.historyRef;
  const version = (which: string, caption: string, revision: number | null) => {
    const value =
      revision === null ? undefined : data.versions[versionKey(entry.targetId, revision)];
    return el(
      'figure',
      { 'data-version': which },
      el('figcaption', {}, caption),
      el(
        'pre',
        {},
        value === undefined ? 'reading…' : value === null ? 'no longer kept by the server' : value,
      ),
    );
  };
  const restore = entry.restoredBy
    ? el(
        'p',
        { class: 'restored' },
        'Restored: the overwritten version was enqueued again as ',
        code(entry.restoredBy.rowId, 10),
        '.',
      )
    : entry.unsettled
      ? el(
          'p',
          { class: 'restored' },
          'Restore waits for the resend’s answer: its final revision is not known here.',
        )
      : ref && entry.kind !== 'delete' && !entry.historyExpired
        ? act('Restore overwritten version', () => actions.restore(entry.successorId), {
            'data-action': 'restore',
          })
        : el('p', { class: 'restored' }, 'The server kept no copy of what was overwritten.');
  return el(
    'li',
    { class: 'conflict', 'data-successor': entry.successorId },
    el(
      'p',
      {},
      el('strong', {}, `${entry.collection} ${short(entry.targetId)}: `),
      `made from an older revision; the server was at revision ${entry.overwrittenRevision ?? '?'}. `,
      entry.unsettled
        ? 'Resent at that revision; no answer read here settled it yet (it may be queued, blocked, or sent by an older tab).'
        : `Resent at that revision and applied as revision ${entry.finalRevision ?? '?'} (${entry.overwrittenRevision ?? '?'} → ${entry.finalRevision ?? '?'}).`,
    ),
    el(
      'dl',
      {},
      ...pair('original request', code(entry.originalId, 10)),
      ...pair('resent as', code(entry.successorId, 10)),
      ...pair('resends', String((entry.lineageLength ?? 0) + 1)),
      ...pair('server copy', copyText(entry.copy)),
      ...pair(entry.unsettled ? 'written' : 'settled', time(entry.settledAt)),
    ),
    ref && actions.versions && !entry.unsettled
      ? el(
          'div',
          { class: 'versions' },
          version(
            'overwritten',
            `overwritten: revision ${ref.supersededRevision}`,
            ref.supersededRevision,
          ),
          version('final', `final: revision ${entry.finalRevision ?? '?'}`, entry.finalRevision),
        )
      : null,
    restore,
  );
}

/** Default looks, scoped to the element's tag; an app's own CSS overrides them. */
export function styles(tag: string): string {
  const t = `:where(${tag})`;
  return `${t}{display:block;font:13px/1.4 system-ui,sans-serif;color:#1d2530}
${t} table{border-collapse:collapse;width:100%;margin:.25rem 0 .75rem}
${t} th,${t} td{border-bottom:1px solid #dde3ea;padding:.2rem .4rem;text-align:left;vertical-align:top}
${t} th{font-weight:600;background:#f3f6f9}
${t} h3{font-size:14px;margin:.75rem 0 .25rem}
${t} code{font:12px ui-monospace,monospace}
${t} .health{padding:.4rem .6rem;border-radius:6px;background:#e8f4ec}
${t} .health[data-stalled]:not([data-stalled=""]){background:#fdecea}
${t} .badge{padding:0 .4rem;border-radius:8px;background:#e6ebf1}
${t} .badge.blocked,${t} .badge.held{background:#f9d6d2}
${t} .badge.sending{background:#d6e8f9}
${t} .badge.deferred,${t} .badge.waiting,${t} .badge.intent{background:#fbeccb}
${t} .blocked-detail td{color:#8a2a1d;font-size:12px}
${t} .conflicts{list-style:none;padding:0}
${t} .conflict{border:1px solid #dde3ea;border-radius:6px;padding:.4rem .6rem;margin-bottom:.5rem}
${t} dl{display:grid;grid-template-columns:max-content 1fr;gap:0 .75rem;margin:.25rem 0}
${t} dd{margin:0}
${t} .versions{display:flex;gap:.5rem}
${t} figure{flex:1;margin:0;border:1px solid #dde3ea;border-radius:4px;padding:.25rem .4rem}
${t} figcaption{font-weight:600}
${t} pre{white-space:pre-wrap;margin:.2rem 0;font:inherit}
${t} button{font:inherit;margin-right:.25rem}
${t} .empty{color:#5b6673}`;
}
