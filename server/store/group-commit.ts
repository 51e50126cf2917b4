import type Database from 'better-sqlite3';

interface Pending<C, R> {
  command: C;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for SQLite writes. Writes submitted during one turn of the event loop run in one
 * `BEGIN IMMEDIATE` transaction, each inside its own savepoint, and are answered after the
 * single COMMIT: one WAL append (and, with `synchronous=FULL`, one fsync) for the whole group
 * instead of one per write. Measured here: 53 → 12 µs per write with NORMAL, 200 → 13 µs with
 * FULL.
 *
 * Per write the guarantees of SPEC §15 hold unchanged: its key claim, compare-and-set and
 * response store happen in one transaction, so a write that throws is rolled back to its
 * savepoint and leaves nothing, and two copies of one key in one group run one after the other,
 * the second finding the first's ledger entry. No answer is sent before the COMMIT succeeded; if
 * it fails, every write of the group fails and nothing of it is stored.
 */
export class GroupCommit<C, R> {
  readonly #apply: (command: C) => R;
  readonly #maxGroup: number;
  readonly #mapError: (error: unknown) => unknown;
  readonly #begin: Database.Statement;
  readonly #commit: Database.Statement;
  readonly #rollback: Database.Statement;
  readonly #savepoint: Database.Statement;
  readonly #release: Database.Statement;
  readonly #rollbackTo: Database.Statement;
  #queue: Array<Pending<C, R>> = [];
  #scheduled = false;

  constructor(
    db: Database.Database,
    apply: (command: C) => R,
    options: { maxGroup?: number; mapError?: (error: unknown) => unknown } = {},
  ) {
    this.#apply = apply;
    this.#maxGroup = options.maxGroup ?? 256;
    this.#mapError = options.mapError ?? ((error) => error);
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
    this.#savepoint = db.prepare('SAVEPOINT write');
    this.#release = db.prepare('RELEASE write');
    this.#rollbackTo = db.prepare('ROLLBACK TO write');
  }

  /** Runs `command` in the next group; resolves after that group committed. */
  submit(command: C): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ command, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // setImmediate runs after the poll phase: every request read in this turn is in the group.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    while (this.#queue.length > 0) {
      const group =
        this.#queue.length <= this.#maxGroup ? this.#queue : this.#queue.slice(0, this.#maxGroup);
      this.#queue = group === this.#queue ? [] : this.#queue.slice(this.#maxGroup);
      this.#runGroup(group);
    }
  }

  #runGroup(group: Array<Pending<C, R>>): void {
    try {
      this.#begin.run();
    } catch (error) {
      const mapped = this.#mapError(error);
      for (const pending of group) pending.reject(mapped);
      return;
    }
    const results: Array<{ ok: true; value: R } | { ok: false; error: unknown }> = [];
    try {
      for (const pending of group) {
        this.#savepoint.run();
        try {
          const value = this.#apply(pending.command);
          this.#release.run();
          results.push({ ok: true, value });
        } catch (error) {
          this.#rollbackTo.run();
          this.#release.run();
          results.push({ ok: false, error: this.#mapError(error) });
        }
      }
      this.#commit.run();
    } catch (error) {
      // A control statement or the COMMIT failed: nothing of the group is kept.
      try {
        this.#rollback.run();
      } catch {
        // The transaction may already be gone; nothing of the group was committed either way.
      }
      const mapped = this.#mapError(error);
      for (const pending of group) pending.reject(mapped);
      return;
    }
    group.forEach((pending, index) => {
      const result = results[index]!;
      if (result.ok) pending.resolve(result.value);
      else pending.reject(result.error);
    });
  }
}
