import { describe, expect, it } from 'vitest';
import type { CollectionHandler } from '../../shared/model/handler.ts';
import type { Json } from '../../shared/model/json.ts';
import type { RowView } from '../../shared/model/page-api.ts';
import type { OutboxRow, RowStatus } from '../../shared/model/row.ts';
import {
  overlayRecord,
  overlayRecords,
  type RecordOverlayInput,
  type ServerRecord,
  type SettledEdit,
  standsIn,
} from '../../shared/plan/record-overlay.ts';

/** A row view of collection `notes`: made at `seq`, in the display status given. */
function view(
  seq: number,
  kind: string,
  targetId: string,
  payload: Json | undefined,
  status: RowStatus = 'queued',
  extra: Partial<OutboxRow> = {},
): RowView {
  const id = `r${seq}`;
  const row: OutboxRow = {
    v: 1,
    id,
    owner: 'alice',
    collection: 'notes',
    kind,
    targetId: kind === 'create' ? `pending:${id}` : targetId,
    savedAt: 1000 + seq,
    seq,
    state: status === 'held' || status === 'blocked' ? status : 'queued',
    ...(payload === undefined ? {} : { payload }),
    ...extra,
  };
  return { row, id, status };
}

const note = (id: string, title: string, revision?: number): ServerRecord => ({
  id,
  value: { id, title, done: false },
  ...(revision === undefined ? {} : { revision }),
});

const settledOf = (
  row: RowView,
  receipt: SettledEdit['receipt'],
  seen?: ServerRecord,
): SettledEdit => ({ row: row.row, receipt, ...(seen === undefined ? {} : { seen }) });

/** What a list shows, one string per record: `key id=value status`. */
function shown(input: RecordOverlayInput): string[] {
  return overlayRecords(input).map(
    (record) =>
      `${record.key === record.id ? '' : `${record.key} → `}${record.id}=${JSON.stringify(record.value)} ${record.status}`,
  );
}

const create = view(1, 'create', '', { title: 'milk' }, 'deferred');
const serverCreate = settledOf(create, {
  serverId: 'n9',
  revision: 1,
  body: { id: 'n9', revision: 1, title: 'milk', done: false },
});

describe('records with their pending edits laid over them (SPEC §2, §6, §8)', () => {
  it.each<{ rule: string; input: RecordOverlayInput; expected: string[] }>([
    {
      rule: 'a record with no rows is the app’s, synced',
      input: { records: [note('n1', 'a', 1)], rows: [] },
      expected: ['n1={"id":"n1","title":"a","done":false} synced'],
    },
    {
      rule: 'updates fold over it as the outbox merges them: shallow, the later wins',
      input: {
        records: [note('n1', 'a', 1)],
        rows: [
          view(1, 'update', 'n1', { title: 'b', done: true }, 'sending'),
          view(2, 'update', 'n1', { title: 'c' }, 'waiting'),
        ],
      },
      expected: ['n1={"id":"n1","title":"c","done":true} sending'],
    },
    {
      rule: 'a pending delete hides the record',
      input: {
        records: [note('n1', 'a'), note('n2', 'b')],
        rows: [view(1, 'delete', 'n1', undefined)],
      },
      expected: ['n2={"id":"n2","title":"b","done":false} synced'],
    },
    {
      rule: 'a pending create is listed after the app’s records, with its edits merged; its most urgent row decides the status',
      input: {
        records: [note('n1', 'a')],
        rows: [create, view(2, 'update', 'pending:r1', { done: true }, 'intent')],
      },
      expected: [
        'n1={"id":"n1","title":"a","done":false} synced',
        'pending:r1={"title":"milk","done":true} retrying',
      ],
    },
    {
      rule: 'a pending create with a delete is not listed',
      input: {
        records: [],
        rows: [create, view(2, 'delete', 'pending:r1', undefined, 'intent')],
      },
      expected: [],
    },
    {
      rule: 'blocked beats held beats sending beats retrying beats pending',
      input: {
        records: [note('n1', 'a'), note('n2', 'b'), note('n3', 'c')],
        rows: [
          view(1, 'update', 'n1', { title: 'x' }, 'sending'),
          view(2, 'update', 'n1', { title: 'y' }, 'blocked'),
          view(3, 'update', 'n2', { title: 'x' }, 'held'),
          view(4, 'update', 'n2', { title: 'y' }, 'deferred'),
          view(5, 'update', 'n3', { title: 'x' }, 'queued'),
          view(6, 'update', 'n3', { title: 'y' }, 'deferred'),
        ],
      },
      expected: [
        'n1={"id":"n1","title":"y","done":false} blocked',
        'n2={"id":"n2","title":"y","done":false} held',
        'n3={"id":"n3","title":"y","done":false} retrying',
      ],
    },
    {
      rule: 'a quarantined row counts for the status and shows no value',
      input: {
        records: [note('n1', 'a')],
        rows: [view(1, 'update', 'n1', { title: '?' }, 'blocked', { blockedCode: 'row_corrupt' })],
      },
      expected: ['n1={"id":"n1","title":"a","done":false} blocked'],
    },
    {
      rule: 'a settled update stands in while the app’s record is at an older revision',
      input: {
        records: [note('n1', 'a', 1)],
        rows: [],
        settled: [
          settledOf(view(1, 'update', 'n1', { title: 'b' }), {
            serverId: 'n1',
            revision: 2,
            body: { id: 'n1', revision: 2, title: 'b' },
          }),
        ],
      },
      expected: ['n1={"id":"n1","title":"b","done":false,"revision":2} synced'],
    },
    {
      rule: 'and gives way once the app’s record has its revision',
      input: {
        records: [note('n1', 'b', 2)],
        rows: [],
        settled: [
          settledOf(view(1, 'update', 'n1', { title: 'stale' }), {
            serverId: 'n1',
            revision: 2,
            body: { id: 'n1', revision: 2, title: 'stale' },
          }),
        ],
      },
      expected: ['n1={"id":"n1","title":"b","done":false} synced'],
    },
    {
      rule: 'a settled create is listed under its server id, keyed by its pending name, until the app lists it',
      input: { records: [note('n1', 'a', 1)], rows: [], settled: [serverCreate] },
      expected: [
        'n1={"id":"n1","title":"a","done":false} synced',
        'pending:r1 → n9={"title":"milk","id":"n9","revision":1,"done":false} synced',
      ],
    },
    {
      rule: 'then is the app’s, once and under the same key',
      input: {
        records: [note('n1', 'a', 1), note('n9', 'milk', 1)],
        rows: [],
        settled: [serverCreate],
      },
      expected: [
        'n1={"id":"n1","title":"a","done":false} synced',
        'pending:r1 → n9={"id":"n9","title":"milk","done":false} synced',
      ],
    },
    {
      rule: 'an intent converted while its create is still there is one record with it (successorOf names the create)',
      input: {
        records: [],
        rows: [
          { ...create, status: 'sending' },
          view(2, 'update', 'n9', { done: true }, 'waiting', { successorOf: 'r1' }),
        ],
      },
      expected: ['pending:r1 → n9={"title":"milk","done":true} sending'],
    },
    {
      rule: 'edits of a settled create fold over its server answer',
      input: {
        records: [],
        rows: [view(2, 'update', 'n9', { title: 'oat milk' }, 'queued', { successorOf: 'r1' })],
        settled: [serverCreate],
      },
      expected: [
        'pending:r1 → n9={"title":"oat milk","id":"n9","revision":1,"done":false} pending',
      ],
    },
    {
      rule: 'a settled delete hides the record until the app no longer lists it',
      input: {
        records: [note('n1', 'a', 1)],
        rows: [],
        settled: [
          settledOf(view(1, 'delete', 'n1', undefined), {
            serverId: 'n1',
            revision: 2,
            body: { id: 'n1', revision: 2, deleted: true },
          }),
        ],
      },
      expected: [],
    },
    {
      rule: 'the collection’s own coalesce decides how edits fold',
      input: {
        records: [note('n1', 'a')],
        rows: [view(1, 'update', 'n1', { title: 'b' }), view(2, 'update', 'n1', { title: 'c' })],
        handler: {
          coalesce: (earlier, later) =>
            earlier.kind === 'create'
              ? {
                  kind: 'create',
                  payload: { ...(earlier.payload as object), ...(later.payload as object) },
                }
              : { kind: 'update', payload: later.payload },
        } satisfies Pick<CollectionHandler, 'coalesce'>,
      },
      expected: ['n1={"id":"n1","title":"c","done":false} pending'],
    },
  ])('$rule', ({ input, expected }) => {
    expect(shown(input)).toEqual(expected);
  });

  it('one record by either name, a deleted one included, with the row that decides its status', () => {
    const input: RecordOverlayInput = {
      records: [note('n1', 'a', 4)],
      rows: [view(1, 'delete', 'n1', undefined, 'held'), create],
    };
    expect(overlayRecord(input, 'n1')).toMatchObject({
      id: 'n1',
      deleted: true,
      value: undefined,
      status: 'held',
      decidedBy: { id: 'r1' },
      revision: 4,
    });
    const settled = { ...input, rows: [], settled: [serverCreate] };
    expect(overlayRecord(settled, 'pending:r1')).toMatchObject({ id: 'n9', key: 'pending:r1' });
    expect(overlayRecord(settled, 'n9')?.revision).toBe(1);
    expect(overlayRecord(input, 'n404')).toBeUndefined();
  });
});

describe('when a settled edit stops standing in for its record', () => {
  const edit = (kind: string, revision: number | undefined, seen?: ServerRecord): SettledEdit =>
    settledOf(
      view(1, kind, 'n1', { title: 'b' }),
      { serverId: 'n1', body: {}, ...(revision === undefined ? {} : { revision }) },
      seen,
    );
  it.each<{ rule: string; edit: SettledEdit; record: ServerRecord | undefined; stands: boolean }>([
    { rule: 'the app is older', edit: edit('update', 3), record: note('n1', 'a', 2), stands: true },
    {
      rule: 'the app caught up',
      edit: edit('update', 3),
      record: note('n1', 'b', 3),
      stands: false,
    },
    {
      rule: 'the app is newer',
      edit: edit('update', 3),
      record: note('n1', 'c', 4),
      stands: false,
    },
    {
      rule: 'a create the app does not list yet',
      edit: edit('create', 1),
      record: undefined,
      stands: true,
    },
    {
      rule: 'no revisions: the app’s record is what it was',
      edit: edit('update', undefined, note('n1', 'a')),
      record: note('n1', 'a'),
      stands: true,
    },
    {
      rule: 'no revisions: the app’s record changed',
      edit: edit('update', undefined, note('n1', 'a')),
      record: note('n1', 'b'),
      stands: false,
    },
    {
      rule: 'a delete the app still lists at an older revision',
      edit: edit('delete', 3),
      record: note('n1', 'a', 2),
      stands: true,
    },
    {
      rule: 'a delete the app no longer lists',
      edit: edit('delete', 3),
      record: undefined,
      stands: false,
    },
  ])('$rule → stands in: $stands', ({ edit, record, stands }) => {
    expect(standsIn(edit, record)).toBe(stands);
  });
});
