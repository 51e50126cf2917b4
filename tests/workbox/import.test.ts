import { beforeEach, describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import {
  importedRowId,
  REQUEST_KIND,
  REQUESTS_COLLECTION,
  requestTarget,
  runWorkboxImportPass,
  type WorkboxImportEvent,
} from '../../sw/workbox/index.ts';
import {
  engineFor,
  FakeServer,
  freshIndexedDb,
  queueInWorkbox,
  workboxEntries,
  write,
} from './support.ts';

/**
 * SPEC §22, the one-time import of a `workbox-background-sync` queue: every entry becomes one
 * `requests` row in queue order and leaves Workbox's queue only once its row is durable; a pass
 * cut short between the two steps is finished by the next pass without a second row, however
 * long after (the kept tombstone), and a second run imports nothing.
 */

const QUEUE = 'writes';
const OWNER = 'alice';
let factory: IDBFactory;

beforeEach(() => {
  factory = freshIndexedDb();
});

const titles = (n: number) => Array.from({ length: n }, (_, i) => `note ${i + 1}`);

async function queueTwenty() {
  // Two URLs, interleaved: order is kept per URL.
  await queueInWorkbox(
    QUEUE,
    titles(20).map((title, i) => write(i % 2 === 0 ? '/api/a' : '/api/b', { title })),
  );
}

function pass(engine: ReturnType<typeof engineFor>, events: WorkboxImportEvent[] = []) {
  return runWorkboxImportPass(
    engine,
    { queueName: QUEUE, owner: OWNER, onEvent: (e) => events.push(e), indexedDB: factory },
    'test',
  );
}

async function rowsOf(engine: ReturnType<typeof engineFor>) {
  const api = await engine.forOwner(OWNER);
  return (await api.rows()).map((view) => view.row as OutboxRow);
}

describe('importing a workbox-background-sync queue', () => {
  it('moves every entry into the outbox in queue order, one row each, and empties the queue', async () => {
    await queueTwenty();
    const server = new FakeServer();
    const engine = engineFor(server);
    const raw = await rawEntries();

    const report = await pass(engine);

    expect(report).toMatchObject({ imported: 20, existing: 0, left: [] });
    expect(await workboxEntries(QUEUE)).toEqual([]);
    const rows = await rowsOf(engine);
    // Queue order: the rows' ids are the entries' ids, in the same order.
    expect(rows.map((r) => r.id)).toEqual(
      raw.map((e) => importedRowId({ queueName: QUEUE, ...e })),
    );
    expect(rows.every((r) => r.collection === REQUESTS_COLLECTION && r.kind === REQUEST_KIND)).toBe(
      true,
    );
    // One record per URL, chained in queue order (G4).
    for (const url of ['http://localhost/api/a', 'http://localhost/api/b']) {
      const chain = rows.filter((r) => r.targetId === requestTarget(url));
      expect(chain).toHaveLength(10);
      chain.forEach((row, i) => {
        if (i > 0) expect(row.successorOf).toBe(chain[i - 1]!.id);
      });
    }
    // Credentials are never stored; the rest of the request is.
    const first = rows[0]!;
    expect(first.request?.headers.authorization).toBeUndefined();
    expect(JSON.stringify(first)).not.toContain('Bearer secret');
    expect(first.request?.headers['x-app']).toBe('v1');
    expect(first.request?.headers['idempotency-key']).toBe(`"${first.id}"`);
  });

  it('sends them in order per URL, each applied once', async () => {
    await queueTwenty();
    const server = new FakeServer();
    const engine = engineFor(server);
    await pass(engine);
    for (let i = 0; i < 25 && (await rowsOf(engine)).length > 0; i++)
      await engine.flush({ force: true });
    expect(server.effects).toHaveLength(20);
    for (const path of ['/api/a', '/api/b']) {
      const sent = server.effects
        .filter((e) => e.url.endsWith(path))
        .map((e) => JSON.parse(e.body!).title);
      expect(sent).toEqual(titles(20).filter((_, i) => (i % 2 === 0) === (path === '/api/a')));
    }
  });

  it('holds entries made with credentials until the owner has some: never sent without (§13)', async () => {
    await queueTwenty();
    const server = new FakeServer();
    const engine = engineFor(server, { auth: null });
    await pass(engine);
    await engine.flush({ force: true });
    expect(server.seen).toEqual([]);
    // The first row of each URL is held; the rows behind it wait for it.
    const rows = await rowsOf(engine);
    expect(rows).toHaveLength(20);
    expect(rows.filter((r) => r.state === 'held')).toHaveLength(2);
    await engine.setAuth(OWNER, { authorization: 'Bearer back' });
    for (let i = 0; i < 25 && (await rowsOf(engine)).length > 0; i++)
      await engine.flush({ force: true });
    expect(server.effects).toHaveLength(20);
    expect(new Set(server.seen.map((r) => r.headers.authorization))).toEqual(
      new Set(['Bearer back']),
    );
  });

  it('finishes a pass cut short between its two steps without a second row', async () => {
    await queueTwenty();
    const server = new FakeServer();
    const engine = engineFor(server);
    // Step 1 of the first seven entries, as a killed pass left them: rows made, entries kept.
    const cut = (await rawEntries()).slice(0, 7);
    const api = await engine.forOwner(OWNER);
    for (const [i, entry] of cut.entries()) {
      await api.enqueue(
        {
          id: importedRowId({ queueName: QUEUE, ...entry }),
          collection: REQUESTS_COLLECTION,
          kind: REQUEST_KIND,
          targetId: requestTarget(
            i % 2 === 0 ? 'http://localhost/api/a' : 'http://localhost/api/b',
          ),
          payload: { method: 'POST', url: 'x', headers: {}, body: null },
        },
        { keepId: true },
      );
    }
    expect(await workboxEntries(QUEUE)).toHaveLength(20);

    const events: WorkboxImportEvent[] = [];
    const report = await pass(engine, events);

    expect(report).toMatchObject({ imported: 13, existing: 7, left: [] });
    expect(await workboxEntries(QUEUE)).toEqual([]);
    expect(await rowsOf(engine)).toHaveLength(20);
    expect(events.filter((e) => e.type === 'imported' && e.outcome === 'existing')).toHaveLength(7);
  });

  it('still knows an entry it moved after the row was sent and its receipt pruned', async () => {
    await queueInWorkbox(QUEUE, [write('/api/a', { title: 'once' })]);
    const server = new FakeServer();
    // No receipts kept at all: only the kept tombstone remembers the id.
    const engine = engineFor(server, { receipts: { maxCount: 0, maxAgeMs: 0 } });
    const [entry] = await rawEntries();
    const api = await engine.forOwner(OWNER);
    const input = {
      id: importedRowId({ queueName: QUEUE, ...entry! }),
      collection: REQUESTS_COLLECTION,
      kind: REQUEST_KIND,
      targetId: requestTarget('http://localhost/api/a'),
      payload: {
        method: 'POST',
        url: 'http://localhost/api/a',
        headers: {},
        body: '{"title":"once"}',
      },
    };
    // Step 1, then a kill; the row is sent and settled before the next pass runs.
    await api.enqueue(input, { keepId: true });
    await engine.flush({ force: true });
    expect(server.effects).toHaveLength(1);
    expect(await api.receipt(input.id)).toBeUndefined();

    const report = await pass(engine);
    expect(report).toMatchObject({ imported: 0, existing: 1 });
    expect(await rowsOf(engine)).toEqual([]);
    expect(await workboxEntries(QUEUE)).toEqual([]);
  });

  it('would import it twice without the kept id: why the tombstone is written with the row', async () => {
    await queueInWorkbox(QUEUE, [write('/api/a', { title: 'once' })]);
    const server = new FakeServer();
    const engine = engineFor(server, { receipts: { maxCount: 0, maxAgeMs: 0 } });
    const [entry] = await rawEntries();
    const api = await engine.forOwner(OWNER);
    const id = importedRowId({ queueName: QUEUE, ...entry! });
    await api.enqueue({
      id,
      collection: REQUESTS_COLLECTION,
      kind: REQUEST_KIND,
      targetId: requestTarget('http://localhost/api/a'),
      payload: { method: 'POST', url: 'http://localhost/api/a', headers: {}, body: '{}' },
    });
    await engine.flush({ force: true });
    await pass(engine);
    expect((await rowsOf(engine)).map((r) => r.id)).toEqual([id]);
  });

  it('imports nothing on a second run', async () => {
    await queueTwenty();
    const engine = engineFor(new FakeServer());
    await pass(engine);
    const again = await pass(engine);
    expect(again).toMatchObject({ imported: 0, existing: 0, left: [] });
    expect(await rowsOf(engine)).toHaveLength(20);
  });

  it('leaves an entry whose body is not text in the queue, with the later entries of its URL', async () => {
    await queueInWorkbox(QUEUE, [
      write('/api/a', { title: 'a1' }),
      new Request('http://localhost/api/b', {
        method: 'POST',
        body: new Uint8Array([0xff, 0xfe, 0x00]),
      }),
      write('/api/b', { title: 'b2' }),
      write('/api/a', { title: 'a2' }),
    ]);
    const engine = engineFor(new FakeServer());
    const report = await pass(engine);
    expect(report.imported).toBe(2);
    expect(report.left.map((l) => l.reason)).toEqual(['body_not_text', 'behind_left_entry']);
    expect((await workboxEntries(QUEUE)).map((e) => e.requestData.url)).toEqual([
      'http://localhost/api/b',
      'http://localhost/api/b',
    ]);
  });

  it('creates no Workbox database where there was none', async () => {
    const report = await pass(engineFor(new FakeServer()));
    expect(report).toMatchObject({ imported: 0, left: [] });
    expect((await factory.databases()).map((d) => d.name)).not.toContain('workbox-background-sync');
  });
});

function rawEntries(): Promise<Array<{ id: number; timestamp: number }>> {
  return new Promise((resolve) => {
    const request = factory.open('workbox-background-sync');
    request.onsuccess = () => {
      const all = request.result.transaction('requests').objectStore('requests').getAll();
      all.onsuccess = () => resolve(all.result);
    };
  });
}
