// @vitest-environment happy-dom
import { IDBFactory } from 'fake-indexeddb';
import { beforeEach, describe, expect, it } from 'vitest';
import { connectOutbox } from '../../client/connect.ts';
import type { PageSenderConfig } from '../../client/page-sender.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';

/**
 * SPEC §12, §22: the page sender's config may be loaded when the page sender starts, so a page
 * that a worker controls never loads the handlers. Loaded or given, the tab sends alike.
 */

function server() {
  const seen: string[] = [];
  const fetch = (async (_input: string, init: RequestInit) => {
    seen.push(String(init.body));
    return new Response(JSON.stringify({ id: `n${seen.length}`, revision: 1 }), {
      status: 201,
      headers: { 'content-type': 'application/json' },
    });
  }) as unknown as typeof globalThis.fetch;
  return { seen, fetch };
}

const config = (fetch: typeof globalThis.fetch): PageSenderConfig => ({
  collections: { notes: restHandler({ baseUrl: 'http://localhost/api/notes' }) },
  allowedOrigins: ['http://localhost'],
  fetch,
  dbName: `page-sender-option-${Math.random()}`,
});

beforeEach(() => {
  globalThis.indexedDB = new IDBFactory();
});

describe('the page sender’s config', () => {
  it('is loaded when the page sender starts, once, and the tab sends with it', async () => {
    const { seen, fetch } = server();
    let loads = 0;
    const outbox = await connectOutbox({
      swUrl: '/sw.js',
      owner: 'alice',
      periodicSync: false,
      pageSender: async () => {
        loads++;
        return config(fetch);
      },
    });
    try {
      expect(outbox.mode).toBe('page');
      await outbox.enqueue({ collection: 'notes', kind: 'create', payload: { title: 'milk' } });
      await outbox.flush({ force: true });
      expect(seen).toEqual(['{"title":"milk"}']);
      expect(loads).toBe(1);
    } finally {
      outbox.close();
    }
  });

  it('that fails to load fails the connection with the loader’s error', async () => {
    await expect(
      connectOutbox({
        swUrl: '/sw.js',
        owner: 'alice',
        periodicSync: false,
        pageSender: () => Promise.reject(new Error('chunk failed to load')),
      }),
    ).rejects.toThrow('chunk failed to load');
  });
});
