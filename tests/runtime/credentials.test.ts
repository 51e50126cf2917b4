import { describe, expect, it } from 'vitest';
import { authMetaKey, createCredentials } from '../../shared/runtime/credentials.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';

const fresh = () => {
  const store = createMemoryStore({ name: `credentials-${Math.random()}` });
  return { store, open: async () => store };
};

describe('send-time credentials (SPEC §13)', () => {
  it('an owner that never handed headers over is sent with none (cookie sessions)', async () => {
    const { open } = fresh();
    expect(await createCredentials(open).source('alice')).toEqual({});
  });

  it('headers handed over with setAuth are used, kept in memory and only marked in meta', async () => {
    const { store, open } = fresh();
    const credentials = createCredentials(open);
    await credentials.set('alice', { authorization: 'Bearer a' });
    expect(await credentials.source('alice')).toEqual({ authorization: 'Bearer a' });
    expect(await store.getMeta(authMetaKey('alice'))).toEqual({ required: true });
  });

  it('an owner that used setAuth is held, not sent anonymously, once its headers left memory', async () => {
    const { open } = fresh();
    await createCredentials(open).set('alice', { authorization: 'Bearer a' });
    const restarted = createCredentials(open);
    expect(await restarted.source('alice')).toBeNull();
    expect(await restarted.source('bob')).toEqual({});
  });

  it('headers persisted on request survive a restart', async () => {
    const { open } = fresh();
    await createCredentials(open).set('alice', { authorization: 'Bearer a' }, { persist: true });
    expect(await createCredentials(open).source('alice')).toEqual({ authorization: 'Bearer a' });
  });

  it('the app hook answers when no headers were handed over, and a hook without any holds the row', async () => {
    const { open } = fresh();
    const credentials = createCredentials(open, (owner) =>
      owner === 'alice' ? { authorization: 'Bearer hook' } : undefined,
    );
    expect(await credentials.source('alice')).toEqual({ authorization: 'Bearer hook' });
    expect(await credentials.source('bob')).toBeNull();
    await credentials.set('bob', { authorization: 'Bearer b' });
    expect(await credentials.source('bob')).toEqual({ authorization: 'Bearer b' });
  });

  it('setAuth with null forgets the headers and goes back to cookie sessions', async () => {
    const { store, open } = fresh();
    const credentials = createCredentials(open);
    await credentials.set('alice', { authorization: 'Bearer a' }, { persist: true });
    await credentials.set('alice', null);
    expect(await store.getMeta(authMetaKey('alice'))).toBeUndefined();
    expect(await credentials.source('alice')).toEqual({});
  });
});
