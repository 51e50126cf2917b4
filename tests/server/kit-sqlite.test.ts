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

defineKitConformance('SQLite (better-sqlite3, in memory)', (options) =>
  openTodoApp({ kind: 'sqlite', ...options }),
);
defineKitConformance('SQLite (better-sqlite3, a WAL file)', (options) =>
  openTodoApp({ kind: 'sqlite', path: join(dir, 'todos.db'), ...options }),
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

describe('the kit’s SQLite group commit', () => {
  it('runs the writes of one turn in one transaction, each in its own savepoint: a throw or a refusal undoes only its own', async () => {
    const path = join(dir, 'group.db');
    const db = openSqliteDatabase(path);
    db.exec('CREATE TABLE effects (key TEXT PRIMARY KEY)');
    const ledger = sqliteLedger(db);
    const watcher = new Database(path, { readonly: true });
    const count = (on: Database.Database) =>
      on.prepare('SELECT count(*) FROM effects').pluck().get() as number;
    /** Writes the key's effect, then answers `status`. */
    const write = (key: string, status: number) => {
      db.prepare('INSERT INTO effects (key) VALUES (?)').run(key);
      return json(status, { key });
    };
    const claim = (key: string) => ({ principal: 'alice', key, fingerprint: `f-${key}`, now: 1 });
    const keys = ['group-ok-000001', 'group-throw-0001', 'group-refuse-001', 'group-ok-000002'];
    let seenInLast: [number, number] | undefined;
    const outcomes = await Promise.allSettled([
      ledger.transact(claim(keys[0]!), () => write(keys[0]!, 201)),
      ledger.transact(claim(keys[1]!), () => {
        write(keys[1]!, 201);
        throw new Error('the handler failed after its write');
      }),
      ledger.transact(claim(keys[2]!), () => write(keys[2]!, 409)),
      ledger.transact(claim(keys[3]!), async () => {
        const answer = write(keys[3]!, 201);
        // The group's transaction sees its first write; another connection sees nothing yet.
        seenInLast = [count(db), count(watcher)];
        return answer;
      }),
    ]);
    expect(
      outcomes.map((outcome) => (outcome.status === 'fulfilled' ? outcome.value.kind : 'thrown')),
    ).toEqual(['applied', 'thrown', 'refused', 'applied']);
    expect(seenInLast).toEqual([2, 0]);
    expect(watcher.prepare('SELECT key FROM effects ORDER BY key').pluck().all()).toEqual([
      keys[0],
      keys[3],
    ]);
    for (const [index, key] of keys.entries()) {
      expect(Boolean(await ledger.lookup('alice', key))).toBe(index === 0 || index === 3);
    }
    watcher.close();
    db.close();
  });
});
