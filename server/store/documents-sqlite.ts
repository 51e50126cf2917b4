import type Database from 'better-sqlite3';
import {
  appliedDocument,
  type DocumentCommand,
  type DocumentRow,
  type DocumentStore,
  type DocumentWriteResult,
  deletedDocumentJson,
  documentJson,
  mergePatch,
  toDocument,
} from './documents.ts';

/** The collections' table on SQLite (see documents.ts). */
export const SQLITE_DOCUMENTS_SCHEMA = `
CREATE TABLE IF NOT EXISTS documents (
  principal TEXT NOT NULL,
  collection TEXT NOT NULL,
  id TEXT NOT NULL,
  revision INTEGER NOT NULL,
  value TEXT NOT NULL,
  deleted INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (principal, collection, id)
) WITHOUT ROWID;
`;

/**
 * The collections on better-sqlite3: synchronous writes, run by the kit's ledger inside its
 * `BEGIN IMMEDIATE` transaction, so no other write interleaves between the read of a record and
 * its compare-and-set.
 */
export function sqliteDocuments(db: Database.Database): DocumentStore<Database.Database> {
  db.exec(SQLITE_DOCUMENTS_SCHEMA);
  const select = db.prepare<[string, string, string], DocumentRow>(
    'SELECT id, revision, value, deleted FROM documents WHERE principal = ? AND collection = ? AND id = ?',
  );
  const insert = db.prepare<[string, string, string, string, number, number]>(
    'INSERT INTO documents (principal, collection, id, revision, value, deleted, created_at, updated_at) VALUES (?, ?, ?, 1, ?, 0, ?, ?)',
  );
  const update = db.prepare<[number, string, number, number, string, string, string]>(
    'UPDATE documents SET revision = ?, value = ?, deleted = ?, updated_at = ? WHERE principal = ? AND collection = ? AND id = ?',
  );
  const list = db.prepare<[string, string, number], DocumentRow>(
    'SELECT id, revision, value, deleted FROM documents WHERE principal = ? AND collection = ? AND deleted = 0 ORDER BY created_at, id LIMIT ?',
  );

  function apply(_tx: unknown, command: DocumentCommand): DocumentWriteResult {
    const { principal, collection, id, now } = command;
    if (command.op === 'create') {
      const value = JSON.stringify(command.value);
      insert.run(principal, collection, id, value, now, now);
      const body = documentJson({ id, revision: 1, value: command.value });
      return appliedDocument(command, 201, body, 1);
    }
    const row = select.get(principal, collection, id);
    if (!row || row.deleted) return { kind: 'not-found' };
    const current = toDocument(row);
    if (row.revision !== command.ifMatch) return { kind: 'conflict', current };
    const revision = row.revision + 1;
    if (command.op === 'delete') {
      update.run(revision, row.value, 1, now, principal, collection, id);
      return appliedDocument(command, 200, deletedDocumentJson(id, revision), revision);
    }
    const value = mergePatch(current.value, command.patch);
    update.run(revision, JSON.stringify(value), 0, now, principal, collection, id);
    return appliedDocument(command, 200, documentJson({ id, revision, value }), revision);
  }

  return {
    apply,
    async get(principal, collection, id) {
      const row = select.get(principal, collection, id);
      return row && !row.deleted ? toDocument(row) : undefined;
    },
    async list(principal, collection, limit) {
      return list.all(principal, collection, limit).map(toDocument);
    },
  };
}
