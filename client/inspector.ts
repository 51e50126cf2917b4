import type { RowView } from '../shared/model/page-api.ts';
import type { ConflictLedgerEntry } from '../shared/model/store.ts';
import type { OutboxClient } from './connect.ts';
import {
  conflictList,
  el,
  healthLine,
  receiptsTable,
  rowsTable,
  type Snapshot,
  styles,
  type ViewActions,
  versionKey,
} from './inspector-view.ts';

/**
 * `sw-outbox/inspector` (SPEC §23): the outbox inspector as a framework-free custom element an
 * app mounts in development. It shows the queue's health, the rows with their status, claim
 * holder (and whether it is a live sender), fence, attempts, next try, error and links, the
 * receipts and the conflict ledger; it retries and discards blocked rows, restores what a
 * conflict overwrote and downloads the flight recorder's trace. An entry of its own, loaded on
 * demand, so the page's first load stays in its budget:
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
 * Every value is written as text, never as markup: rows hold what users typed. The element
 * draws into its own children (no shadow root), so the app's CSS reaches it; its default looks
 * are scoped to its tag and yield to any rule of the app's.
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

/**
 * Reads one version of a record from the app's server, for the conflict ledger to show what a
 * resend overwrote beside what it left (SPEC §10.1): the text to show, or null when the server
 * no longer has it. The ledger keeps no bodies, so only the app's server can say.
 */
export type ReadVersion = (entry: ConflictLedgerEntry, revision: number) => Promise<string | null>;

/**
 * The detail of `outbox-inspector-action`: which button a person pressed, for which row or
 * conflict, and the call's answer (`restore` answers with the enqueued row) or its error.
 */
export interface InspectorAction {
  action: 'retry' | 'discard' | 'restore';
  /** The row id (`retry`, `discard`) or the conflict's `successorId` (`restore`). */
  id: string;
  result?: unknown;
  error?: unknown;
}

/** The `<outbox-inspector>` element; set its `outbox` to a connected outbox. */
export class OutboxInspector extends HTMLElement {
  #outbox: InspectorOutbox | undefined;
  #readVersion: ReadVersion | undefined;
  #stop: (() => void) | undefined;
  #reads = 0;
  /** The rows the live view delivered last: a refresh reads what goes with these. */
  #rows: RowView[] | undefined;
  #last: { drawn: string } | undefined;
  /** Versions read so far: a version at a revision never changes, so each is read once. */
  readonly #versions: Record<string, string | null> = {};

  /** The outbox it shows; setting it (re)starts the live view while the element is connected. */
  get outbox(): InspectorOutbox | undefined {
    return this.#outbox;
  }
  set outbox(outbox: InspectorOutbox | undefined) {
    this.#outbox = outbox;
    this.#start();
  }

  /** How to read a record's version for the conflict ledger; without it no versions show. */
  get readVersion(): ReadVersion | undefined {
    return this.#readVersion;
  }
  set readVersion(read: ReadVersion | undefined) {
    this.#readVersion = read;
    this.refresh();
  }

  connectedCallback(): void {
    this.#start();
  }

  disconnectedCallback(): void {
    this.#stop?.();
    this.#stop = undefined;
  }

  /** Reads health, receipts and conflicts again (the rows come by themselves). */
  refresh(): void {
    // Not the rows drawn last: a refresh overtakes the reads of a change still being drawn.
    if (this.#outbox !== undefined && this.#rows !== undefined)
      void this.#refresh(this.#outbox, this.#rows);
  }

  #start(): void {
    this.#stop?.();
    this.#stop = undefined;
    this.#rows = undefined;
    const outbox = this.#outbox;
    if (outbox === undefined || !this.isConnected) return;
    this.#stop = outbox.subscribe((rows) => {
      this.#rows = rows;
      void this.#refresh(outbox, rows);
    });
  }

  /** Reads what goes with the rows and renders; a read overtaken by a newer one is dropped. */
  async #refresh(outbox: InspectorOutbox, rows: RowView[]): Promise<void> {
    const n = ++this.#reads;
    const [health, receipts, conflicts] = await Promise.all([
      outbox.health().catch(() => undefined),
      outbox.receipts({ limit: 20 }).catch(() => []),
      outbox.conflicts({ limit: 20 }).catch(() => []),
    ]);
    if (n !== this.#reads) return;
    const data = { rows, health, receipts, conflicts, versions: this.#versions };
    this.#render(outbox, data);
    void this.#readVersions(conflicts);
  }

  /** Reads the versions the ledger shows that are not read yet, then draws again. */
  async #readVersions(conflicts: ConflictLedgerEntry[]): Promise<void> {
    const read = this.#readVersion;
    if (read === undefined) return;
    const wanted: Array<[ConflictLedgerEntry, number]> = [];
    for (const entry of conflicts) {
      // The overwritten version is history only once the resend settled: read earlier, the
      // server would say it has none, and that answer would stay.
      if (!entry.historyRef || entry.unsettled) continue;
      for (const revision of [entry.historyRef.supersededRevision, entry.finalRevision]) {
        if (revision !== null && !(versionKey(entry.targetId, revision) in this.#versions))
          wanted.push([entry, revision]);
      }
    }
    if (wanted.length === 0) return;
    const found = await Promise.all(
      wanted.map(([entry, revision]) => read(entry, revision).catch(() => undefined)),
    );
    let changed = false;
    wanted.forEach(([entry, revision], i) => {
      // A failed read is tried again with the next change.
      if (found[i] === undefined) return;
      this.#versions[versionKey(entry.targetId, revision)] = found[i];
      changed = true;
    });
    if (changed) this.refresh();
  }

  /**
   * Tells the page what a person did here and how it ended: an `outbox-inspector-action` event
   * (it bubbles) once the call settled, so an app can show it or count the edit a restore made.
   */
  async #announce<T>(action: InspectorAction['action'], id: string, call: Promise<T>): Promise<T> {
    const detail = (rest: Partial<InspectorAction>) =>
      new CustomEvent<InspectorAction>('outbox-inspector-action', {
        bubbles: true,
        detail: { action, id, ...rest },
      });
    try {
      const result = await call;
      this.dispatchEvent(detail({ result }));
      return result;
    } catch (error) {
      this.dispatchEvent(detail({ error }));
      throw error;
    }
  }

  #render(outbox: InspectorOutbox, data: Snapshot): void {
    // Drawn again only when what it shows changed, so a button is not replaced under the
    // pointer by a read that found nothing new.
    const drawn = JSON.stringify({ ...data, health: { ...data.health, at: 0 } });
    if (this.#last?.drawn === drawn) return;
    this.#last = { drawn };
    const actions: ViewActions = {
      retry: (id) => this.#announce('retry', id, outbox.retry(id)),
      discard: (id) => this.#announce('discard', id, outbox.discard(id)),
      restore: (id) => this.#announce('restore', id, outbox.restore(id)),
      exportTrace: async () => {
        const trace = await outbox.exportTrace();
        const link = el('a', {
          href: URL.createObjectURL(new Blob([trace], { type: 'application/x-ndjson' })),
          download: 'sw-outbox-trace.jsonl',
        });
        link.click();
      },
      versions: this.#readVersion !== undefined,
    };
    const section = (name: string, title: string, content: HTMLElement) =>
      el('section', { 'data-section': name }, el('h3', {}, title), content);
    this.replaceChildren(
      el('style', {}, styles(this.localName)),
      healthLine(data.health, actions),
      section('rows', 'Rows in the outbox', rowsTable(data, actions)),
      section('receipts', 'Receipts', receiptsTable(data.receipts)),
      section('conflicts', 'Conflict ledger', conflictList(data, actions)),
    );
  }
}

declare global {
  interface HTMLElementTagNameMap {
    'outbox-inspector': OutboxInspector;
  }
  interface HTMLElementEventMap {
    'outbox-inspector-action': CustomEvent<InspectorAction>;
  }
}

/** Registers `<outbox-inspector>` (or another name) once; later calls do nothing. */
export function defineOutboxInspector(name = 'outbox-inspector'): void {
  if (customElements.get(name) === undefined)
    customElements.define(name, class extends OutboxInspector {});
}
