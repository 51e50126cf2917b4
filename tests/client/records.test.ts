// @vitest-environment happy-dom
import { act, cleanup, render, screen, waitFor } from '@testing-library/react';
import { IDBFactory } from 'fake-indexeddb';
import { createElement, type ReactNode, useState } from 'react';
import { get, writable } from 'svelte/store';
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest';
import { type ConnectOptions, connectOutbox, type OutboxClient } from '../../client/connect.ts';
import { observeRecords } from '../../client/observable.ts';
import type { PageSenderConfig } from '../../client/page-sender.ts';
import {
  OutboxProvider,
  type RecordView,
  type ServerRecord,
  useRecord,
  useRecords,
} from '../../client/react.ts';
import type { Json } from '../../shared/model/json.ts';
import type { RowView } from '../../shared/model/page-api.ts';
import type { OutboxStore } from '../../shared/model/store.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * Records, not rows (SPEC §2, §6, §8, §22): the hooks and the observable lay the outbox's pending
 * edits over the app's records, over the real page API — `connectOutbox` with the page sender
 * (the core the worker runs) on each store — against a small notes server. Every value a list
 * renders over a run is kept, and a settled edit must never flicker back to the old value before
 * or after the app's refetch.
 */

interface Note {
  id: string;
  revision: number;
  title: string;
  done: boolean;
}

/** The reference protocol in small (SPEC §15): POST creates, PATCH and DELETE by id; 503 while down. */
function notesServer() {
  const state = {
    up: true,
    next: 1,
    notes: new Map<string, Note>(),
    /** While set, every request waits for it on the wire. */
    hold: undefined as Promise<void> | undefined,
  };
  const json = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json' },
    });
  const fetch = (async (input: string, init: RequestInit) => {
    if (state.hold !== undefined) await state.hold;
    if (!state.up) return new Response(null, { status: 503 });
    const id = decodeURIComponent(new URL(input).pathname.split('/')[3] ?? '');
    const body = typeof init.body === 'string' ? JSON.parse(init.body) : {};
    if (init.method === 'POST') {
      const note: Note = { id: `n${state.next++}`, revision: 1, title: '', done: false, ...body };
      state.notes.set(note.id, note);
      return json(note, 201);
    }
    const note = state.notes.get(id);
    if (note === undefined) return json({ title: 'not found' }, 404);
    if (init.method === 'DELETE') {
      state.notes.delete(id);
      return json({ id, revision: note.revision + 1, deleted: true });
    }
    const next = { ...note, ...body, revision: note.revision + 1 };
    state.notes.set(id, next);
    return json(next);
  }) as unknown as typeof globalThis.fetch;
  /** What the app's GET of the list answers, as records. */
  const list = (): ServerRecord<Note>[] =>
    [...state.notes.values()].map((note) => ({
      id: note.id,
      revision: note.revision,
      value: { ...note },
    }));
  const seed = (title: string) => {
    const note: Note = { id: `n${state.next++}`, revision: 1, title, done: false };
    state.notes.set(note.id, note);
    return note;
  };
  return { state, fetch, list, seed };
}

type Server = ReturnType<typeof notesServer>;

const options = (
  server: Server,
  store: () => Promise<OutboxStore>,
): ConnectOptions & { pageSender: PageSenderConfig } => ({
  swUrl: '/sw.js',
  owner: 'alice',
  periodicSync: false,
  pageSender: {
    collections: { notes: restHandler({ baseUrl: 'http://localhost/api/notes' }) },
    allowedOrigins: ['http://localhost'],
    fetch: server.fetch,
    dbName: `records-${Math.random()}`,
    backoff: { baseMs: 60_000, maxMs: 60_000 },
    store,
  },
});

/** One line per record: `key|id|title,done|status`. */
const line = (record: RecordView<Note>) =>
  `${record.key}|${record.id}|${record.value?.title},${record.value?.done}|${record.status}`;

/**
 * The scene of every run: two notes the app has fetched, then offline an edit of one, a delete
 * of the other, and a create with an edit of its own.
 */
async function offlineEdits(outbox: OutboxClient, server: Server) {
  const [a, b] = [...server.state.notes.values()] as [Note, Note];
  server.state.up = false;
  await outbox.enqueue({
    collection: 'notes',
    kind: 'update',
    targetId: a.id,
    baseRevision: a.revision,
    payload: { title: 'bread' },
  });
  await outbox.enqueue({
    collection: 'notes',
    kind: 'delete',
    targetId: b.id,
    baseRevision: b.revision,
  });
  const created = await outbox.enqueue({
    collection: 'notes',
    kind: 'create',
    payload: { title: 'milk' },
  });
  await outbox.enqueue({
    collection: 'notes',
    kind: 'update',
    targetId: created.targetId,
    payload: { done: true },
  });
  return created;
}

/** Every list from `since` on shows the settled values: no edit goes back, no record comes back. */
function expectNoFlicker(lists: string[][], since: number) {
  const after = lists.slice(since);
  expect(after.length).toBeGreaterThan(0);
  for (const list of after) {
    expect(list.map((l) => l.split('|')[2])).toEqual(['bread,false', 'milk,true']);
    expect(list.map((l) => l.split('|')[0])).toEqual(['n1', expect.stringMatching(/^pending:/)]);
  }
}

/** The app's list, refetched when the test says so, through useRecords; every list kept. */
function Notes(props: {
  server: Server;
  lists: string[][];
  onRefetch: (refetch: () => void) => void;
}) {
  const [records, setRecords] = useState(props.server.list);
  props.onRefetch(() => setRecords(props.server.list()));
  const views = useRecords<Note>('notes', records);
  if (views !== undefined) props.lists.push(views.map(line));
  return createElement(
    'ul',
    null,
    (views ?? []).map((view) => createElement('li', { key: view.key }, line(view))),
  );
}

/** One record by name, through useRecord; every value kept. */
function One(props: { id: string; seen: string[] }) {
  const record = useRecord<Note>('notes', props.id);
  if (record !== undefined) props.seen.push(line(record));
  return createElement('p', { 'data-testid': 'one' }, record ? line(record) : 'loading');
}

/** One record over the app's copy, and the list: their ids. */
function Both(props: {
  id: string;
  record: ServerRecord<Note>;
  list: ServerRecord<Note>[];
  onRecord: (view: RecordView<Note> | undefined) => void;
}) {
  props.onRecord(useRecord<Note>('notes', props.id, props.record));
  const all = useRecords<Note>('notes', props.list);
  return createElement('p', { 'data-testid': 'ids' }, (all ?? []).map((r) => r.id).join(','));
}

/** What renders once the provider has an outbox. */
const Child = () => createElement('p', { 'data-testid': 'child' }, 'ready');

const stores: Array<[string, () => () => Promise<OutboxStore>]> = [
  ['memory', () => async () => createMemoryStore({ name: `records-${Math.random()}` })],
  ['IndexedDB', () => undefined as unknown as () => Promise<OutboxStore>],
];

describe.each(stores)('records over the %s store', (_name, makeStore) => {
  let server: Server;
  let outbox: OutboxClient;

  beforeEach(async () => {
    globalThis.indexedDB = new IDBFactory();
    server = notesServer();
    server.seed('milk?');
    server.seed('eggs');
    const store = makeStore();
    const connect = options(server, store);
    if (store === undefined) delete connect.pageSender?.store;
    outbox = await connectOutbox(connect);
  });

  afterEach(() => {
    cleanup();
    outbox.close();
  });

  it('useRecords lays pending edits over the app’s list and never flickers back when they settle', async () => {
    const lists: string[][] = [];
    let refetch: () => void = () => undefined;
    const onRefetch = (r: () => void) => {
      refetch = r;
    };
    render(
      createElement(OutboxProvider, { outbox }, createElement(Notes, { server, lists, onRefetch })),
    );
    await waitFor(() => expect(screen.getAllByRole('listitem')).toHaveLength(2));
    const items = () => screen.getAllByRole('listitem').map((li) => li.textContent);
    expect(items()).toEqual(['n1|n1|milk?,false|synced', 'n2|n2|eggs,false|synced']);

    await act(() => offlineEdits(outbox, server));
    await waitFor(() =>
      expect(items()).toEqual([
        expect.stringMatching(/^n1\|n1\|bread,false\|(pending|retrying|sending)$/),
        expect.stringMatching(/^pending:\S+\|pending:\S+\|milk,true\|(pending|retrying|sending)$/),
      ]),
    );
    const since = lists.length - 1;

    // Online: every row settles; the app has not refetched, the receipts stand in.
    server.state.up = true;
    await act(() => outbox.flush({ force: true }));
    await waitFor(() =>
      expect(items()).toEqual([
        'n1|n1|bread,false|synced',
        expect.stringMatching(/^pending:\S+\|n3\|milk,true\|synced$/),
      ]),
    );
    expect(server.state.notes.size).toBe(2);

    // The app's refetch lands: its own data now, under the same keys.
    act(() => refetch());
    await waitFor(() => expect(lists.at(-1)?.[1]).toMatch(/\|n3\|milk,true\|synced$/));
    expect(items()).toEqual([
      'n1|n1|bread,false|synced',
      expect.stringMatching(/^pending:\S+\|n3\|milk,true\|synced$/),
    ]);
    expectNoFlicker(lists, since);
  });

  it('an edit of a create on the wire waits as an intent, is one record with it through its conversion, and never flickers', async () => {
    const lists: string[][] = [];
    let refetch: () => void = () => undefined;
    const onRefetch = (r: () => void) => {
      refetch = r;
    };
    let release: () => void = () => undefined;
    server.state.hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    render(
      createElement(OutboxProvider, { outbox }, createElement(Notes, { server, lists, onRefetch })),
    );
    const third = () => screen.queryAllByRole('listitem')[2]?.textContent;
    const created = await act(() =>
      outbox.enqueue({ collection: 'notes', kind: 'create', payload: { title: 'milk' } }),
    );
    // The page sender's own flush has the create on the wire, held there.
    await waitFor(() => expect(third()).toMatch(/\|milk,undefined\|sending$/));
    const edit = await act(() =>
      outbox.enqueue({
        collection: 'notes',
        kind: 'update',
        targetId: created.targetId,
        payload: { done: true },
      }),
    );
    expect(edit.outcome).toBe('intent');
    await waitFor(() => expect(third()).toMatch(/^pending:\S+\|pending:\S+\|milk,true\|sending$/));
    const since = lists.length - 1;

    server.state.hold = undefined;
    await act(async () => {
      release();
      await outbox.flush({ force: true });
    });
    await waitFor(() => expect(third()).toMatch(/^pending:\S+\|n3\|milk,true\|synced$/));
    expect(server.state.notes.get('n3')).toMatchObject({ title: 'milk', done: true, revision: 2 });
    act(() => refetch());
    await waitFor(() => expect(lists.at(-1)?.[2]).toMatch(/\|n3\|milk,true\|synced$/));
    for (const list of lists.slice(since)) {
      expect(list).toHaveLength(3);
      expect(list[2]).toMatch(/^pending:\S+\|(pending:\S+|n3)\|milk,true\|/);
    }
  });

  it('useRecord follows one record by its pending name, through its create and after', async () => {
    const seen: string[] = [];
    const created = await offlineEdits(outbox, server);
    render(
      createElement(OutboxProvider, { outbox }, createElement(One, { id: created.targetId, seen })),
    );
    const shown = () => screen.getByTestId('one').textContent;
    await waitFor(() => expect(shown()).toMatch(/\|milk,true\|(pending|retrying|sending)$/));
    server.state.up = true;
    await act(() => outbox.flush({ force: true }));
    await waitFor(() => expect(shown()).toMatch(/^pending:\S+\|n3\|milk,true\|synced$/));
    expect(seen.every((l) => l.includes('|milk,true|'))).toBe(true);
  });

  it('a deleted record is there with deleted: true for useRecord, and gone from useRecords', async () => {
    const [, b] = [...server.state.notes.values()] as [Note, Note];
    await offlineEdits(outbox, server);
    let one: RecordView<Note> | undefined;
    const record = server.list()[1]!;
    const onRecord = (view: RecordView<Note> | undefined) => {
      one = view;
    };
    render(
      createElement(
        OutboxProvider,
        { outbox },
        createElement(Both, { id: b.id, record, list: server.list(), onRecord }),
      ),
    );
    await waitFor(() => expect(screen.getByTestId('ids').textContent).toMatch(/^n1,pending:/));
    expect(one).toMatchObject({ id: b.id, deleted: true, value: undefined, revision: 1 });
  });

  it('observeRecords does the same as a Svelte store over a store of the app’s records', async () => {
    const records = writable<ServerRecord<Note>[] | undefined>(server.list());
    const notes = observeRecords<Note>(outbox, 'notes', records);
    const lists: string[][] = [];
    const stop = notes.subscribe((views) => {
      if (views !== undefined) lists.push(views.map(line));
    });
    await waitFor(() => expect(lists.at(-1)).toHaveLength(2));
    await offlineEdits(outbox, server);
    await waitFor(() => expect(lists.at(-1)?.[1]).toMatch(/\|milk,true\|/));
    const since = lists.length - 1;
    server.state.up = true;
    await outbox.flush({ force: true });
    await waitFor(() => expect(lists.at(-1)?.[1]).toMatch(/\|n3\|milk,true\|synced$/));
    records.set(server.list());
    expect(get(notes)?.map(line)).toEqual([
      'n1|n1|bread,false|synced',
      expect.stringMatching(/^pending:\S+\|n3\|milk,true\|synced$/),
    ]);
    expectNoFlicker(lists, since);
    stop();
  });
});

describe('<OutboxProvider> while connecting', () => {
  let server: Server;
  beforeEach(() => {
    globalThis.indexedDB = new IDBFactory();
    server = notesServer();
  });
  afterEach(cleanup);

  const provide = (outbox: Parameters<typeof OutboxProvider>[0]['outbox']): ReactNode =>
    createElement(
      OutboxProvider,
      {
        outbox,
        fallback: createElement('p', { 'data-testid': 'fallback' }, 'connecting'),
        onError: (error: unknown) =>
          createElement('p', { 'data-testid': 'error' }, (error as { code?: string }).code),
      },
      createElement(Child),
    );

  it('renders the fallback, then its children once a promise of a client resolves', async () => {
    let resolve: (client: OutboxClient) => void = () => undefined;
    const pending = new Promise<OutboxClient>((r) => {
      resolve = r;
    });
    render(provide(pending));
    expect(screen.getByTestId('fallback').textContent).toBe('connecting');
    const client = await connectOutbox(options(server, async () => createMemoryStore()));
    await act(async () => resolve(client));
    expect(screen.getByTestId('child').textContent).toBe('ready');
    client.close();
  });

  it('connects again only when the options name another owner, not on every render', async () => {
    const first = options(server, async () => createMemoryStore());
    const { rerender } = render(provide(first));
    await waitFor(() => expect(screen.getByTestId('child')).toBeTruthy());
    // Inline options: a new object with the same worker and owner keeps the connection.
    rerender(provide({ ...first }));
    expect(screen.getByTestId('child')).toBeTruthy();
    rerender(provide({ ...first, owner: 'bob' }));
    expect(screen.getByTestId('fallback')).toBeTruthy();
    await waitFor(() => expect(screen.getByTestId('child')).toBeTruthy());
  });

  it('connects with options, and renders onError(error) when connecting fails', async () => {
    render(provide(options(server, async () => createMemoryStore())));
    expect(screen.getByTestId('fallback')).toBeTruthy();
    await waitFor(() => expect(screen.getByTestId('child').textContent).toBe('ready'));
    cleanup();
    render(provide({ ...options(server, async () => createMemoryStore()), owner: '' }));
    await waitFor(() => expect(screen.getByTestId('error').textContent).toBe('invalid_argument'));
  });
});

describe('types', () => {
  it('a row view’s row is the row: its fields need no cast', () => {
    expectTypeOf<RowView['row']['targetId']>().toEqualTypeOf<string>();
    expectTypeOf<RowView['row']['payload']>().toEqualTypeOf<Json | undefined>();
    expectTypeOf<RecordView<{ title: string }>['value']>().toEqualTypeOf<
      { title: string } | undefined
    >();
  });
});
