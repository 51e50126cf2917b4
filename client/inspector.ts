import type { OutboxHealth, RowView } from '../shared/model/page-api.ts';
import type { OutboxRow } from '../shared/model/row.ts';
import type { ConflictLedgerEntry, Receipt } from '../shared/model/store.ts';
import type { OutboxClient } from './connect.ts';

/**
 * `sw-outbox/inspector` (SPEC §23): the outbox inspector as a framework-free custom element an
 * app mounts in development. It shows the queue's health, the rows with their status, claim
 * holder, fence, attempts, next try and error, the receipts and the conflict ledger; it retries
 * and discards blocked rows, restores what a conflict overwrote and downloads the flight
 * recorder's trace. An entry of its own, loaded on demand, so the page's first load stays in its
 * budget:
 *
 * ```ts
 * if (import.meta.env.DEV) {
 *   const { defineOutboxInspector } = await import('sw-outbox/inspector');
 *   defineOutboxInspector();
 *   const inspector = document.createElement('outbox-inspector');
 *   inspector.outbox = outbox;
 *   document.body.append(inspector);
 * }
 * ```
 *
 * Every value is written as text, never as markup: rows hold what users typed.
 */

/** What the inspector reads and does through the page API. */
export type InspectorOutbox = Pick<
  OutboxClient,
  | 'subscribe'
  | 'health'
  | 'receipts'
  | 'conflicts'
  | 'retry'
  | 'discard'
  | 'restore'
  | 'exportTrace'
>;

/** One render's data: read together after each change of the rows. */
interface Snapshot {
  rows: RowView[];
  health: OutboxHealth | undefined;
  receipts: Receipt[];
  conflicts: ConflictLedgerEntry[];
}

const time = (at: number | null | undefined) =>
  at === null || at === undefined ? '' : new Date(at).toLocaleTimeString();

/** Builds an element with text content and attributes; children are appended as given. */
function el(
  tag: string,
  attributes: Record<string, string> = {},
  ...children: Array<Node | string>
): HTMLElement {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function table(headers: string[], rows: Array<Array<Node | string>>): HTMLElement {
  return el(
    'table',
    {},
    el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, ...rows.map((cells) => el('tr', {}, ...cells.map((c) => el('td', {}, c))))),
  );
}

/** The `<outbox-inspector>` element; set its `outbox` to a connected outbox. */
export class OutboxInspector extends HTMLElement {
  #outbox: InspectorOutbox | undefined;
  #stop: (() => void) | undefined;
  #reads = 0;

  /** The outbox it shows; setting it (re)starts the live view while the element is connected. */
  get outbox(): InspectorOutbox | undefined {
    return this.#outbox;
  }
  set outbox(outbox: InspectorOutbox | undefined) {
    this.#outbox = outbox;
    this.#start();
  }

  connectedCallback(): void {
    this.#start();
  }

  disconnectedCallback(): void {
    this.#stop?.();
    this.#stop = undefined;
  }

  #start(): void {
    this.#stop?.();
    this.#stop = undefined;
    const outbox = this.#outbox;
    if (outbox === undefined || !this.isConnected) return;
    this.#stop = outbox.subscribe((rows) => void this.#refresh(outbox, rows));
  }

  /** Reads what goes with the rows and renders; a read overtaken by a newer one is dropped. */
  async #refresh(outbox: InspectorOutbox, rows: RowView[]): Promise<void> {
    const n = ++this.#reads;
    const [health, receipts, conflicts] = await Promise.all([
      outbox.health().catch(() => undefined),
      outbox.receipts({ limit: 20 }).catch(() => []),
      outbox.conflicts({ limit: 20 }).catch(() => []),
    ]);
    if (n === this.#reads) this.#render(outbox, { rows, health, receipts, conflicts });
  }

  #render(outbox: InspectorOutbox, data: Snapshot): void {
    const act = (label: string, run: () => Promise<unknown>) => {
      const button = el('button', { type: 'button' }, label) as HTMLButtonElement;
      button.addEventListener('click', () => {
        button.disabled = true;
        run().catch((error: unknown) => {
          button.disabled = false;
          button.title = String((error as Error).message ?? error);
        });
      });
      return button;
    };
    const { health } = data;
    const healthLine =
      health === undefined
        ? 'health: no answer'
        : `${health.stalled === null ? 'healthy' : `stalled: ${health.causes.join(', ')}`} · ${
            health.total
          } rows · oldest ${Math.round((health.oldestPendingAgeMs ?? 0) / 1000)} s · last sent ${
            time(health.lastSuccessAt) || 'never'
          } · next try ${time(health.nextAttemptAt) || 'none'} · senders ${
            Object.values(health.senders).join(', ') || 'none'
          } · storage ${health.storage.persisted ? 'persisted' : 'best effort'}`;
    const rowCells = data.rows.map((view) => {
      const row = view.row as OutboxRow;
      return [
        row.id,
        `${row.collection} ${row.kind} ${row.targetId}`,
        view.status,
        view.holderId ?? '',
        String(row.claim?.fence ?? ''),
        String(row.evidence?.attemptCount ?? 0),
        time(row.nextAttemptAt),
        row.blockedCode ?? row.evidence?.lastErrorCode ?? '',
        view.status === 'blocked'
          ? el(
              'span',
              {},
              act('retry', () => outbox.retry(row.id)),
              act('discard', () => outbox.discard(row.id)),
            )
          : '',
      ];
    });
    const receiptCells = data.receipts.map((r) => [
      r.requestId,
      `${r.collection} ${r.kind} ${r.serverId ?? r.targetId}`,
      String(r.status),
      time(r.settledAt),
    ]);
    const conflictCells = data.conflicts.map((c) => [
      c.successorId,
      `${c.collection} ${c.targetId}`,
      `${c.overwrittenRevision ?? '?'} → ${c.finalRevision ?? '?'}`,
      c.restoredBy
        ? `restored by ${c.restoredBy.rowId}`
        : c.historyRef
          ? act('restore', () => outbox.restore(c.successorId))
          : 'nothing kept',
    ]);
    const download = act('export trace', async () => {
      const trace = await outbox.exportTrace();
      const link = el('a', {
        href: URL.createObjectURL(new Blob([trace], { type: 'application/x-ndjson' })),
        download: 'sw-outbox-trace.jsonl',
      });
      link.click();
      download.disabled = false;
    });
    this.replaceChildren(
      el('p', { part: 'health', 'data-stalled': health?.stalled ?? '' }, healthLine, ' ', download),
      el('h3', {}, 'Rows'),
      table(
        ['id', 'record', 'status', 'holder', 'fence', 'attempts', 'next try', 'error', ''],
        rowCells,
      ),
      el('h3', {}, 'Receipts'),
      table(['request', 'record', 'status', 'settled'], receiptCells),
      el('h3', {}, 'Conflicts'),
      table(['successor', 'record', 'revisions', ''], conflictCells),
    );
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'outbox-inspector': OutboxInspector;
  }
}

/** Registers `<outbox-inspector>` (or another name) once; later calls do nothing. */
export function defineOutboxInspector(name = 'outbox-inspector'): void {
  if (customElements.get(name) === undefined)
    customElements.define(name, class extends OutboxInspector {});
}
