// @vitest-environment happy-dom
import { act, cleanup, render, screen, waitFor } from '@testing-library/react';
import { IDBFactory } from 'fake-indexeddb';
import { createElement, type ReactNode } from 'react';
import { filter, firstValueFrom, from } from 'rxjs';
import { derived, get } from 'svelte/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectOutbox, type OutboxClient } from '../../client/connect.ts';
import { observeHealth, observeRowProgress, observeRows } from '../../client/observable.ts';
import {
  OutboxProvider,
  useHealth,
  usePendingCount,
  useRowStatus,
  useRows,
} from '../../client/react.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * SPEC §22, framework bindings over the real page API: `connectOutbox` with the page sender
 * (the same core the worker runs, on fake-indexeddb) against a small server. The React hooks
 * render in happy-dom through Testing Library; the observables are used by a Svelte store
 * (`derived`, `get`) and by RxJS (`from`), as those libraries use them.
 */

/**
 * A server that applies creates (201) while it is up, refuses with 503 while it is down, and
 * rejects them (422) while told to refuse.
 */
function notesServer() {
  const state = { up: false, applied: 0, refuse: false };
  const fetch = (async () => {
    if (!state.up) return new Response(null, { status: 503 });
    if (state.refuse) return new Response(null, { status: 422 });
    state.applied++;
    return new Response(JSON.stringify({ id: `n${state.applied}`, revision: 1 }), {
      status: 201,
      headers: { 'content-type': 'application/json', etag: '"1"' },
    });
  }) as typeof globalThis.fetch;
  return { state, fetch };
}

let outbox: OutboxClient;
let server: ReturnType<typeof notesServer>;

beforeEach(async () => {
  globalThis.indexedDB = new IDBFactory();
  server = notesServer();
  outbox = await connectOutbox({
    swUrl: '/sw.js',
    owner: 'alice',
    periodicSync: false,
    pageSender: {
      collections: { notes: restHandler({ baseUrl: 'http://localhost/api/notes' }) },
      allowedOrigins: ['http://localhost'],
      fetch: server.fetch,
      dbName: `bindings-${Math.random()}`,
      backoff: { baseMs: 60_000, maxMs: 60_000 },
    },
  });
});

afterEach(() => {
  cleanup();
  outbox.close();
});

const create = (title: string) =>
  outbox.enqueue({ collection: 'notes', kind: 'create', payload: { title } });

/** Brings the server up and drains the outbox. */
async function drain() {
  server.state.up = true;
  await outbox.flush({ force: true });
}

function withOutbox(children: ReactNode) {
  return createElement(OutboxProvider, { outbox }, children);
}

/** Three components, each over one hook. */
function Pending() {
  const count = usePendingCount();
  return createElement(
    'p',
    { 'data-testid': 'pending' },
    count === undefined ? 'loading' : String(count),
  );
}
function Titles() {
  const rows = useRows({ collection: 'notes' });
  return createElement(
    'ul',
    null,
    (rows ?? []).map((view) =>
      createElement(
        'li',
        { key: view.id },
        `${(view.row.payload as { title: string }).title}: ${view.status}`,
      ),
    ),
  );
}
function Status({ id }: { id: string }) {
  return createElement('p', { 'data-testid': 'status' }, useRowStatus(id) ?? 'loading');
}

function Health() {
  const health = useHealth();
  return createElement(
    'p',
    { 'data-testid': 'health' },
    health === undefined ? 'loading' : `${health.total} ${health.stalled ?? 'healthy'}`,
  );
}

describe('React hooks', () => {
  it('usePendingCount and useRows follow the outbox as rows are queued and applied', async () => {
    expect(outbox.mode).toBe('page'); // the page sender: the core the worker runs, in the tab
    render(withOutbox([createElement(Pending, { key: 'p' }), createElement(Titles, { key: 't' })]));
    await waitFor(() => expect(screen.getByTestId('pending').textContent).toBe('0'));

    await act(async () => {
      await create('milk');
      await create('eggs');
    });
    await waitFor(() => expect(screen.getByTestId('pending').textContent).toBe('2'));
    // Waiting: the page sender's own flush may be trying them against the server that is down.
    expect(screen.getAllByRole('listitem').map((li) => li.textContent)).toEqual([
      expect.stringMatching(/^milk: (queued|sending|deferred)$/),
      expect.stringMatching(/^eggs: (queued|sending|deferred)$/),
    ]);

    await act(drain);
    await waitFor(() => expect(screen.getByTestId('pending').textContent).toBe('0'));
    expect(screen.queryAllByRole('listitem')).toEqual([]);
    expect(server.state.applied).toBe(2);
  });

  it('useRowStatus shows a row waiting, then settled', async () => {
    const { id } = await create('milk');
    render(withOutbox(createElement(Status, { id })));
    await waitFor(() =>
      expect(screen.getByTestId('status').textContent).toMatch(/^(queued|sending|deferred)$/),
    );
    await act(drain);
    await waitFor(() => expect(screen.getByTestId('status').textContent).toBe('settled'));
  });

  it('useHealth follows the queue: rows waiting, a blocked row named, healthy once discarded', async () => {
    render(withOutbox(createElement(Health)));
    await waitFor(() => expect(screen.getByTestId('health').textContent).toBe('0 healthy'));
    await act(async () => {
      await create('milk');
    });
    await waitFor(() => expect(screen.getByTestId('health').textContent).toBe('1 healthy'));
    server.state.refuse = true;
    await act(drain);
    await waitFor(() => expect(screen.getByTestId('health').textContent).toBe('1 blocked'));
    const [row] = await outbox.rows();
    await act(() => outbox.discard(row?.id ?? ''));
    await waitFor(() => expect(screen.getByTestId('health').textContent).toBe('0 healthy'));
  });

  it('a re-render with an equal filter keeps one live view', async () => {
    const { rerender } = render(withOutbox(createElement(Titles)));
    await act(async () => {
      await create('milk');
    });
    await waitFor(() => expect(screen.getAllByRole('listitem')).toHaveLength(1));
    for (let i = 0; i < 5; i++) rerender(withOutbox(createElement(Titles)));
    expect(screen.getAllByRole('listitem').map((li) => li.textContent)).toEqual([
      expect.stringMatching(/^milk: /),
    ]);
  });
});

describe('observables', () => {
  it('are Svelte stores: run is called at once, derived and get work', async () => {
    const rows = observeRows(outbox, { collection: 'notes' });
    const count = derived(rows, (value) => value?.length);
    const seen: Array<number | undefined> = [];
    const stop = count.subscribe((value) => seen.push(value));
    // The store contract: the current value, synchronously (undefined before the first answer).
    expect(seen).toEqual([undefined]);
    await waitFor(() => expect(get(count)).toBe(0));
    await create('milk');
    await waitFor(() => expect(get(count)).toBe(1));
    await drain();
    await waitFor(() => expect(get(count)).toBe(0));
    stop();
    expect(seen.filter((v) => v !== undefined)).toEqual([0, 1, 0]);
  });

  it('are RxJS interop observables: from() sees every snapshot and unsubscribes', async () => {
    const rows$ = from(observeRows(outbox));
    const one = firstValueFrom(rows$.pipe(filter((rows) => rows.length === 1)));
    await create('milk');
    const [view] = await one;
    expect(view?.status).toMatch(/^(queued|sending|deferred)$/);

    const { id } = await create('eggs');
    const settled = firstValueFrom(
      from(observeRowProgress(outbox, id)).pipe(filter((p) => p === 'settled')),
    );
    await drain();
    expect(await settled).toBe('settled');
  });

  it('health is an observable too: read again while rows wait, never with nothing to wait for', async () => {
    let reads = 0;
    const counting = {
      subscribe: outbox.subscribe,
      flush: outbox.flush,
      health: () => {
        reads++;
        return outbox.health();
      },
    };
    const health$ = observeHealth(counting, { intervalMs: 20 });
    const seen: number[] = [];
    const stop = health$.subscribe((h) => {
      if (h) seen.push(h.total);
    });
    await waitFor(() => expect(seen).toContain(0));
    const idle = reads;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reads).toBe(idle);
    await create('milk');
    await waitFor(() => expect(reads).toBeGreaterThan(idle + 3));
    await drain();
    await waitFor(() => expect(health$.current?.total).toBe(0));
    stop();
    const after = reads;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reads).toBe(after);
  });

  it('share one outbox subscription among subscribers and end it after the last', async () => {
    let live = 0;
    const counting = {
      subscribe: (listener: Parameters<OutboxClient['subscribe']>[0]) => {
        live++;
        const stop = outbox.subscribe(listener);
        return () => {
          live--;
          stop();
        };
      },
    };
    const rows = observeRows(counting);
    const a = rows.subscribe(() => undefined);
    const b = from(rows).subscribe();
    expect(live).toBe(1);
    a();
    expect(live).toBe(1);
    b.unsubscribe();
    expect(live).toBe(0);
  });
});
