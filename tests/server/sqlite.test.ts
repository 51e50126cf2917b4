import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteStore } from '../../server/index.ts';
import { defineServerConformance } from './conformance.ts';

const dir = mkdtempSync(join(tmpdir(), 'sw-outbox-sqlite-'));

defineServerConformance('SQLite (WAL file, synchronous=FULL)', {
  open: async () => openSqliteStore({ path: join(dir, 'ledger.db'), durability: 'full' }),
  cleanup: async () => rmSync(dir, { recursive: true, force: true }),
});
