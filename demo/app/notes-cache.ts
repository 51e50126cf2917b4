import type { Receipt } from '../../client/index.ts';
import type { ServerNote } from './server-api.ts';

/**
 * This device's copy of the user's notes as the server last had them, kept in `localStorage` so
 * the editor shows them while the server is unreachable. It changes only from server answers:
 * a fresh list (`GET /api/notes`) or a receipt the outbox settled. Pending edits are never
 * written here; the editor lays the outbox rows over this copy instead.
 */
export class NotesCache {
  readonly #key: string;
  #notes = new Map<string, ServerNote>();
  /** Receipts settled at or before this instant are already applied. */
  #appliedUpTo = 0;

  constructor(user: string) {
    this.#key = `sw-outbox-demo:notes:${user}`;
    try {
      const saved = JSON.parse(localStorage.getItem(this.#key) ?? 'null') as {
        notes: ServerNote[];
        appliedUpTo: number;
      } | null;
      if (saved) {
        this.#notes = new Map(saved.notes.map((note) => [note.id, note]));
        this.#appliedUpTo = saved.appliedUpTo;
      }
    } catch {
      localStorage.removeItem(this.#key);
    }
  }

  /** Notes in the order the server created them. */
  all(): ServerNote[] {
    return [...this.#notes.values()];
  }

  get(id: string): ServerNote | undefined {
    return this.#notes.get(id);
  }

  /**
   * Takes the server's list as the truth, then re-applies receipts settled since the list was
   * asked for (they may be newer than what the list saw).
   */
  replace(notes: ServerNote[], askedAt: number, receipts: readonly Receipt[]): void {
    this.#notes = new Map(notes.map((note) => [note.id, note]));
    this.#appliedUpTo = askedAt - 1;
    this.applyReceipts(receipts);
    this.#save();
  }

  /** Applies receipts not seen yet; returns whether anything changed. */
  applyReceipts(receipts: readonly Receipt[]): boolean {
    let changed = false;
    const fresh = receipts
      .filter((receipt) => receipt.settledAt > this.#appliedUpTo && receipt.collection === 'notes')
      .sort((a, b) => a.settledAt - b.settledAt);
    for (const receipt of fresh) {
      this.#appliedUpTo = Math.max(this.#appliedUpTo, receipt.settledAt);
      const note = asNote(receipt.body);
      if (note === undefined) continue;
      const known = this.#notes.get(note.id);
      if (known !== undefined && known.revision > note.revision) continue;
      if (note.deleted) this.#notes.delete(note.id);
      else this.#notes.set(note.id, note);
      changed = true;
    }
    if (changed || fresh.length > 0) this.#save();
    return changed;
  }

  #save(): void {
    localStorage.setItem(
      this.#key,
      JSON.stringify({ notes: this.all(), appliedUpTo: this.#appliedUpTo }),
    );
  }
}

function asNote(body: unknown): ServerNote | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const value = body as Partial<ServerNote>;
  if (typeof value.id !== 'string' || typeof value.revision !== 'number') return undefined;
  return {
    id: value.id,
    revision: value.revision,
    title: typeof value.title === 'string' ? value.title : '',
    body: typeof value.body === 'string' ? value.body : '',
    ...(value.deleted ? { deleted: true } : {}),
  };
}
