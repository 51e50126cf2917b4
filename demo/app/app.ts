import {
  connectOutbox,
  type EnqueueInput,
  type OutboxClient,
  type RowView,
} from '../../client/index.ts';
import type { Card } from './cards.ts';
import { short, tickRelativeTimes } from './dom.ts';
import { FaultControls } from './fault-controls.ts';
import { mountInspector } from './inspector.ts';
import { attempt, notify } from './messages.ts';
import { NotesCache } from './notes-cache.ts';
import * as server from './server-api.ts';
import { authHeaders, type Session, signIn, signOut } from './session.ts';
import type { Actions, AppState } from './state.ts';
import { countEdit, loadTally } from './tally.ts';
import { currentHolder, onWorkerEvent, stopHolder, workerEvents } from './worker-link.ts';

const STATS_EVERY_MS = 2000;

/**
 * The demo's controller: connects the outbox for the signed-in user, keeps {@link AppState} in
 * step with the worker (subscription), the server (notes, counters, fault rules) and the engine's
 * event log, and turns every button into one outbox or server call. Views render the state.
 */
export class DemoApp implements Actions {
  readonly state: AppState;
  #outbox: OutboxClient | undefined;
  #stopRows: (() => void) | undefined;
  readonly #cache: NotesCache;
  #ledgerTimer: ReturnType<typeof setTimeout> | undefined;
  #takeoverTimer: ReturnType<typeof setTimeout> | undefined;
  readonly faults = new FaultControls({
    user: () => this.state.session.user,
    changed: () => this.#refreshServerSide(),
    online: async () => {
      // What the browser's `online` event does: send now, ignoring backoff.
      await this.#outbox?.flush({ force: true });
      await this.refreshNotes();
    },
  });

  constructor(
    session: Session,
    private readonly render: () => void,
  ) {
    this.#cache = new NotesCache(session.user);
    this.state = {
      session,
      connection: 'connecting',
      rows: [],
      receipts: [],
      conflicts: [],
      notes: this.#cache.all(),
      notesFrom: 'device',
      admin: true,
      faults: [],
      events: [],
      tally: loadTally(session.user),
      progress: { done: 0, left: 0 },
      settling: [],
    };
  }

  async start(): Promise<void> {
    this.render();
    onWorkerEvent((event) => {
      this.state.events = [...this.state.events, event].slice(-200);
      // A holder we do not know: the browser restarted the worker (or a stopped one woke up).
      // Asking only then, rather than polling, lets an idle worker be stopped as browsers do.
      if (event.holderId !== this.state.holder?.holderId) void this.#refreshHolder();
      this.render();
    });
    await this.#connect();
    void this.refreshNotes();
    void this.#refreshServerSide();
    void attempt('read the worker’s event log', async () => {
      this.state.events = await workerEvents();
      this.render();
    });
    setInterval(() => void this.#refreshServerSide(), STATS_EVERY_MS);
    setInterval(tickRelativeTimes, 1000);
  }

  async #connect(): Promise<void> {
    const { user } = this.state.session;
    const outbox = await attempt('connect to the outbox', () =>
      connectOutbox({ swUrl: '/sw.js', scope: '/', type: 'classic', owner: user }),
    );
    if (outbox === undefined) {
      this.state.connection = 'failed';
      this.render();
      return;
    }
    this.#outbox = outbox;
    this.state.connection = outbox.mode;
    // Persisted, so the worker can send after every tab has closed (SPEC §13 trade-off).
    await attempt('hand the sign-in to the worker', () =>
      outbox.setAuth(authHeaders(this.state.session), { persist: true }),
    );
    this.#stopRows = outbox.subscribe((rows) => this.#onRows(rows));
    mountInspector(
      outbox,
      () => this.state.session.token,
      (result) => {
        this.state.tally = countEdit(this.state.session.user, result.outcome);
        this.render();
      },
    );
    await this.#refreshHolder();
    // Opening the app is a good moment to sync: it ignores backoff, like the `online` event.
    void outbox.flush({ force: true }).catch(() => undefined);
    this.render();
  }

  async #refreshHolder(): Promise<void> {
    this.state.holder = (await currentHolder().catch(() => undefined)) ?? this.state.holder;
    this.render();
  }

  #onRows(rows: RowView[]): void {
    const before = new Set(this.state.rows.map((row) => row.id));
    const now = new Set(rows.map((row) => row.id));
    const gone = this.state.rows.filter((row) => !now.has(row.id));
    const settled = gone.length;
    this.state.settling = [...this.state.settling.filter((row) => !now.has(row.id)), ...gone];
    const left = rows.filter((row) => row.status !== 'blocked' && row.status !== 'held').length;
    const { progress } = this.state;
    this.state.progress =
      left === 0 ? { done: 0, left: 0 } : { done: progress.done + settled, left };
    this.state.rows = rows;
    this.#watchForeignClaims(rows);
    clearTimeout(this.#ledgerTimer);
    this.#ledgerTimer = setTimeout(
      () => void this.#refreshLedger(before.size > 0 && rows.length === 0),
      100,
    );
    this.render();
  }

  /**
   * Rows claimed by a holder that is not the worker's current one (a stopped holder, another
   * worker) are free once their lease ends; the engine looks again only on its next trigger, so
   * the page asks for a flush then (SPEC §4 takeover).
   */
  #watchForeignClaims(rows: RowView[]): void {
    clearTimeout(this.#takeoverTimer);
    const current = this.state.holder?.holderId;
    const ends = rows
      .filter((row) => row.holderId !== undefined && row.holderId !== current)
      .map((row) => (row.row as { claim?: { expiresAt?: number } }).claim?.expiresAt ?? 0);
    if (ends.length === 0) return;
    const delay = Math.max(0, Math.min(...ends) - Date.now()) + 300;
    this.#takeoverTimer = setTimeout(
      () => void this.#outbox?.flush().catch(() => undefined),
      delay,
    );
  }

  async #refreshLedger(drained: boolean): Promise<void> {
    const outbox = this.#outbox;
    if (outbox === undefined) return;
    // The rows this refresh answers for; rows that leave meanwhile wait for the next one.
    const covered = new Set(this.state.settling);
    try {
      const [receipts, conflicts] = await Promise.all([
        outbox.receipts({ limit: 100 }).catch(() => this.state.receipts),
        outbox.conflicts({ limit: 50 }).catch(() => this.state.conflicts),
      ]);
      this.state.receipts = receipts;
      this.state.conflicts = conflicts;
      if (this.#cache.applyReceipts(receipts)) this.state.notes = this.#cache.all();
      // Their receipts are in the notes now: such rows need not wait for the server's list.
      const answered = new Set(receipts.map((receipt) => receipt.rowId));
      this.#settled((row) => answered.has(row.id));
      // Once nothing is pending, the server's list is the truth again (edits from elsewhere).
      if (drained) await this.refreshNotes();
    } finally {
      // Rows without a receipt here (discarded, or the worker did not answer) end with the list.
      this.#settled((row) => covered.has(row));
    }
    // Settled rows change the server's counters: show them with the receipts, not 2 s later.
    await this.#refreshServerSide();
  }

  /** Takes the rows that `done` picks off the cards' overlay. */
  #settled(done: (row: RowView) => boolean): void {
    const settling = this.state.settling.filter((row) => !done(row));
    if (settling.length === this.state.settling.length) return;
    this.state.settling = settling;
    this.render();
  }

  async #refreshServerSide(): Promise<void> {
    const { user } = this.state.session;
    try {
      const [stats, faults] = await Promise.all([server.stats(user), server.faultRules(user)]);
      Object.assign(this.state, { stats, faults, admin: true });
    } catch (error) {
      if (error instanceof server.HttpError && error.status === 404) this.state.admin = false;
    }
    this.render();
  }

  async refreshNotes(): Promise<void> {
    const askedAt = Date.now();
    try {
      const notes = await server.listNotes(this.state.session.token);
      this.#cache.replace(notes, askedAt, this.state.receipts);
      this.state.notesFrom = 'server';
    } catch {
      // Unreachable, refused or signed out: the device's copy stands, and the view says so.
      this.state.notesFrom = 'device';
    }
    this.state.notes = this.#cache.all();
    this.render();
  }

  async #enqueue(doing: string, input: Omit<EnqueueInput, 'collection'>): Promise<void> {
    const outbox = this.#outbox;
    if (outbox === undefined) return notify('error', 'The outbox is not connected yet.');
    const result = await attempt(doing, () => outbox.enqueue({ collection: 'notes', ...input }));
    if (result) this.state.tally = countEdit(this.state.session.user, result.outcome);
    this.render();
  }

  /** The target for an edit: a pending create that has a receipt by now gets its server id. */
  #target(card: Card): { targetId: string; baseRevision: number | null } {
    const createId = card.key.startsWith('pending:') ? card.key.slice(8) : undefined;
    const receipt = this.state.receipts.find((r) => r.rowId === createId && r.serverId);
    if (receipt?.serverId !== undefined) {
      const known = this.#cache.get(receipt.serverId);
      return {
        targetId: receipt.serverId,
        baseRevision: known?.revision ?? receipt.revision ?? null,
      };
    }
    return { targetId: card.key, baseRevision: card.revision ?? null };
  }

  create(title: string, body: string): void {
    void this.#enqueue('save the note', { kind: 'create', payload: { title, body } });
  }

  edit(card: Card, title: string, body: string): void {
    void this.#enqueue('save the edit', {
      kind: 'update',
      ...this.#target(card),
      payload: { title, body },
    });
  }

  remove(card: Card): void {
    void this.#enqueue('delete the note', { kind: 'delete', ...this.#target(card) });
  }

  editElsewhere(card: Card): void {
    const { user } = this.state.session;
    void attempt('edit on another device', async () => {
      const note = await server.editOnAnotherDevice(user, card.key, {
        title: `${card.title.replace(/ · edited elsewhere$/, '')} · edited elsewhere`,
      });
      notify('info', {
        title: `Another device changed “${card.title}” (server revision ${note.revision}).`,
        hint: `This device still has revision ${card.revision}: edit the note here and the outbox meets a revision conflict, resends at the new revision, and records it in the conflict ledger.`,
      });
    });
  }

  signInAgain(): void {
    void attempt('sign in again', async () => {
      this.state.session = await signIn(this.state.session.user);
      await this.#outbox?.setAuth(authHeaders(this.state.session), { persist: true });
      const resumed = (await this.#outbox?.resumeHeld()) ?? 0;
      notify(
        'ok',
        `Signed in again: ${resumed} held change${resumed === 1 ? ' is' : 's are'} sent again.`,
      );
      await this.refreshNotes();
    });
  }

  flushNow(): void {
    void attempt('flush', async () => {
      const report = await this.#outbox!.flush({ force: true });
      this.state.lastFlush = { at: Date.now(), report };
      this.render();
    });
  }

  stopHolder(): void {
    void attempt('stop the worker’s holder', async () => {
      const { stopped, current } = await stopHolder();
      this.state.holder = current;
      notify('info', {
        title: `Holder ${short(stopped.holderId)} stopped; ${short(current.holderId)} took over.`,
        hint: `Rows it had claimed stay “sending” until their ${current.leaseMs / 1000} s lease ends; then the new holder claims them with a higher fence and resends the same keys.`,
      });
      // The old connection belongs to the stopped holder's endpoint: connect to the new one.
      this.#stopRows?.();
      this.#outbox?.close();
      await this.#connect();
    });
  }

  signOut(): void {
    signOut();
    location.reload();
  }
}
