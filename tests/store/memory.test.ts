import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryStore, resetMemoryStores } from '../../shared/store/memory.ts';
import { describeStoreConformance } from './conformance.ts';

let databases = 0;

describeStoreConformance('memory', () => {
  const name = `memory-conformance-${++databases}`;
  return { connect: async () => createMemoryStore({ name }) };
});

describe('memory store databases', () => {
  afterEach(() => resetMemoryStores());

  const row = { id: 'a', owner: 'u1', savedAt: 1, collection: 'notes', targetId: 'n_1' };
  const put = { owner: 'u1', expected: [], put: [row], reason: 'test' };

  it('shares rows between connections of one name and not across names', async () => {
    const first = createMemoryStore({ name: 'one' });
    await first.replace(put);
    expect(await createMemoryStore({ name: 'one' }).get('a')).toEqual(row);
    expect(await createMemoryStore({ name: 'two' }).get('a')).toBeUndefined();
  });

  it('forgets every database and closes its connections on reset', async () => {
    const before = createMemoryStore({ name: 'one' });
    await before.replace(put);
    resetMemoryStores();
    await expect(before.get('a')).rejects.toMatchObject({ code: 'closed' });
    expect(await createMemoryStore({ name: 'one' }).get('a')).toBeUndefined();
  });
});
