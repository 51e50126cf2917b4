import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteStore } from '../../server/index.ts';
import { defineServerConformance } from './conformance.ts';

const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-sqlite-'));
const path = join(dir, 'ledger.db');

defineServerConformance('SQLite (WAL file, synchronous=FULL)', {
  open: async () => openSqliteStore({ path, durability: 'full' }),
  cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  // A second connection adds a trigger that aborts the ledger insert of one key.
  async failLedgerInsert(key) {
    const db = new Database(path);
    db.exec(`CREATE TRIGGER fail_one_key BEFORE INSERT ON idempotency_ledger
      WHEN NEW.key = '${key}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    return async () => {
      db.exec('DROP TRIGGER fail_one_key');
      db.close();
    };
  },
});
