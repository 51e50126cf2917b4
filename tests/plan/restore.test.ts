import { describe, expect, it } from 'vitest';
import type { ConflictEvidence } from '../../shared/model/conflict-evidence.ts';
import type { ConflictFacts } from '../../shared/model/handler.ts';
import type { HistoryRef } from '../../shared/model/history.ts';
import type { HistoryLookup } from '../../shared/model/ports.ts';
import type { ConflictLedgerEntry } from '../../shared/model/store.ts';
import { ledgerEntryFor } from '../../shared/plan/conflict-ledger.ts';
import { buildConflictEvidence } from '../../shared/plan/conflict-successor.ts';
import { isValidId } from '../../shared/plan/identity.ts';
import {
  planRestore,
  planRestoreSource,
  type RestoreSource,
  restoreRowId,
} from '../../shared/plan/restore.ts';
import { claimedBy, ME, NOW, notes, OWNER, receiptOf, updateRow } from './fixtures.ts';

/** SPEC §10.1: the history reference in the evidence and the ledger, and the restore planner. */

const REF: HistoryRef = {
  kind: 'record_history',
  collection: 'notes',
  recordId: 'n_1',
  supersededRevision: 4,
  access: 'server_lookup',
};

const ENTRY: ConflictLedgerEntry = {
  successorId: 'notes-0000000000000000000000s1',
  originalId: 'notes-000000000000000000000001',
  owner: OWNER,
  collection: 'notes',
  targetId: 'n_1',
  overwrittenRevision: 4,
  finalRevision: 5,
  lineageLength: 0,
  copy: { local: 'present', base: 'absent', remote: 'revision_only' },
  recordedAt: NOW - 10,
  settledAt: NOW - 5,
  kind: 'update',
  historyRef: REF,
};

describe('the history reference is built from what the conflict answer said (§10.1)', () => {
  const row = claimedBy(updateRow(), ME, 1);
  const cases: { name: string; facts: ConflictFacts; historyRef: HistoryRef | null }[] = [
    {
      name: 'a server that keeps history: the version at the named revision, read through it',
      facts: { currentRevision: 4, history: { revision: 4 } },
      historyRef: REF,
    },
    {
      name: 'a server that says nothing of history: null, never a guess',
      facts: { currentRevision: 4 },
      historyRef: null,
    },
    {
      name: 'a server copy without history: still null (the copy is evidence, not a reference)',
      facts: { currentRevision: 4, remote: { revision: 4, value: { title: 'theirs' } } },
      historyRef: null,
    },
  ];

  it.each(cases)('$name', ({ facts, historyRef }) => {
    const evidence = buildConflictEvidence(row, facts, 412, NOW);
    expect(evidence.historyRef).toEqual(historyRef);
    const successor = { ...row, id: 'notes-0000000000000000000000s1', conflict: evidence };
    const entry = ledgerEntryFor(successor, { ...receiptOf(successor, 'n_1', 5), status: 200 });
    expect(entry).toMatchObject({ kind: 'update', historyRef, finalRevision: 5 });
  });

  it('a later conflict of the same lineage replaces the reference with the version it overwrites', () => {
    const first = buildConflictEvidence(
      row,
      { currentRevision: 4, history: { revision: 4 } },
      412,
      NOW,
    );
    const successor = claimedBy(
      { ...updateRow({ id: 'notes-0000000000000000000000s1' }), conflict: first },
      ME,
      1,
    );
    const second = buildConflictEvidence(
      successor,
      { currentRevision: 6, history: { revision: 6 } },
      412,
      NOW,
    );
    expect(second.historyRef).toEqual({ ...REF, supersededRevision: 6 });
    expect(second.lineage).toHaveLength(1);
  });

  it('evidence written before history existed reads as no reference in the ledger', () => {
    const { historyRef: _dropped, ...old } = buildConflictEvidence(
      row,
      { currentRevision: 4 },
      412,
      NOW,
    );
    const successor = { ...row, conflict: old as ConflictEvidence };
    expect(ledgerEntryFor(successor, receiptOf(successor, 'n_1', 5))?.historyRef).toBeNull();
  });
});

describe('planRestoreSource: whether a ledger entry can be restored, before asking the server', () => {
  const cases: {
    name: string;
    entry: ConflictLedgerEntry | undefined;
    handler?: typeof notes | undefined;
    source: RestoreSource | Partial<RestoreSource>;
  }[] = [
    {
      name: 'an unknown conflict is not_found',
      entry: undefined,
      source: { kind: 'refuse', code: 'not_found' },
    },
    {
      name: 'an entry whose server kept no history is history_unavailable',
      entry: { ...ENTRY, historyRef: null },
      source: { kind: 'refuse', code: 'history_unavailable' },
    },
    {
      name: 'an entry written before history existed is history_unavailable',
      entry: (({ historyRef: _h, ...rest }) => rest)(ENTRY),
      source: { kind: 'refuse', code: 'history_unavailable' },
    },
    {
      name: 'a conflict the resend settled as a delete has no record to write into',
      entry: { ...ENTRY, kind: 'delete' },
      source: { kind: 'refuse', code: 'history_unavailable' },
    },
    {
      name: 'an entry without a final revision has no revision to write at',
      entry: { ...ENTRY, finalRevision: null },
      source: { kind: 'refuse', code: 'history_unavailable' },
    },
    {
      name: 'a collection without a handler is unknown_collection',
      entry: ENTRY,
      handler: undefined,
      source: { kind: 'refuse', code: 'unknown_collection' },
    },
    {
      name: 'a handler that does not know where history lives is history_unavailable',
      entry: ENTRY,
      handler: { toRequest: notes.toRequest },
      source: { kind: 'refuse', code: 'history_unavailable' },
    },
    {
      name: 'an entry restored before answers with its row, without asking the server',
      entry: { ...ENTRY, restoredBy: { rowId: 'restore-x', at: NOW } },
      source: { kind: 'restored', rowId: 'restore-x' },
    },
    {
      name: 'otherwise the version is looked up where the handler says',
      entry: ENTRY,
      source: { kind: 'lookup', entry: ENTRY, ref: REF, url: '/api/notes/n_1/history/4' },
    },
  ];

  it.each(cases)('$name', ({ entry, source, ...rest }) => {
    const handler = 'handler' in rest ? rest.handler : notes;
    expect(planRestoreSource(entry, ENTRY.successorId, handler)).toMatchObject(source);
  });
});

describe('planRestore: the server’s answer → the update to enqueue, or why not', () => {
  const version = (revision: number) => ({
    revision,
    value: { title: 'theirs', body: 'from the other device' },
    supersededBy: 'notes-0000000000000000000000s1',
    supersededAt: NOW - 5,
  });
  const cases: { name: string; lookup: HistoryLookup; code?: string }[] = [
    {
      name: 'an expired or unknown version is history_unavailable',
      lookup: { kind: 'not_found' },
      code: 'history_unavailable',
    },
    {
      name: 'an unreachable server is the retryable network error, nothing enqueued',
      lookup: { kind: 'error', code: 'network', message: 'offline' },
      code: 'network',
    },
    {
      name: 'missing credentials are auth_required',
      lookup: { kind: 'error', code: 'auth_required', message: 'no credentials' },
      code: 'auth_required',
    },
    {
      name: 'a version other than the one named is never written back',
      lookup: { kind: 'found', version: version(3) },
      code: 'history_unavailable',
    },
    {
      name: 'the named version is enqueued as an update',
      lookup: { kind: 'found', version: version(4) },
    },
  ];

  it.each(cases)('$name', ({ lookup, code }) => {
    const planned = planRestore(ENTRY, REF, lookup, { now: NOW });
    if (code !== undefined) {
      expect(planned).toMatchObject({ kind: 'refuse', code });
      return;
    }
    const id = restoreRowId(ENTRY.successorId);
    expect(planned).toEqual({
      kind: 'enqueue',
      // At the ledger's final revision, with its own key: a normal update through the outbox.
      input: {
        id,
        collection: 'notes',
        kind: 'update',
        targetId: 'n_1',
        baseRevision: 5,
        payload: { title: 'theirs', body: 'from the other device' },
      },
      ledger: { ...ENTRY, restoredBy: { rowId: id, at: NOW } },
    });
  });

  it('derives one valid row id per conflict, so a repeated restore sends the same key', () => {
    const id = restoreRowId(ENTRY.successorId);
    expect(isValidId(id)).toBe(true);
    expect(restoreRowId(ENTRY.successorId)).toBe(id);
    expect(restoreRowId('notes-0000000000000000000000s2')).not.toBe(id);
    expect(id).not.toBe(ENTRY.successorId);
  });
});
