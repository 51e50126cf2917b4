import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createOutboxKit, json, openSqliteDatabase, sqliteLedger } from '../../server/kit/index.ts';
import { PROBLEM } from '../../shared/wire/protocol.ts';
import { batchItem, newKey } from './helpers.ts';
import { defineKitConformance } from './kit-conformance.ts';
import { openTodoApp } from './kit-todo-app.ts';

const dir = mkdtempSync(join(tmpdir(), 'kit-sqlite-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

defineKitConformance('SQLite (better-sqlite3, in memory)', () => openTodoApp({ kind: 'sqlite' }));
defineKitConformance('SQLite (better-sqlite3, a WAL file)', () =>
  openTodoApp({ kind: 'sqlite', path: join(dir, 'todos.db') }),
);

describe('the kit on SQLite shared with another process', () => {
  it('answers 503 with Retry-After while another connection holds the write lock, and keeps nothing', async () => {
    const path = join(dir, 'locked.db');
    const db = openSqliteDatabase(path, { busyTimeoutMs: 50 });
    const kit = createOutboxKit({ ledger: sqliteLedger(db), authenticate: () => 'alice' });
    kit.route({ method: 'POST', path: '/w', handle: () => json(201, {}) });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    const key = newKey();
    const item = batchItem('POST', '/w', { key, body: { n: 1 } });
    const request = () =>
      new Request('http://kit.test/w', { method: 'POST', headers: item.headers, body: item.body });
    const answer = await kit.fetch(request());
    expect([answer.status, answer.headers.get('retry-after')]).toEqual([503, '1']);
    expect((await answer.json()).type).toBe(PROBLEM.unavailable);
    other.exec('ROLLBACK');
    expect((await kit.fetch(request())).status).toBe(201);
    other.close();
    db.close();
  });
});
