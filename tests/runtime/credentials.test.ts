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

  it('setAuth with null signs the owner out: the stored copy goes, its rows are held, also after a restart', async () => {
    const { store, open } = fresh();
    const credentials = createCredentials(open);
    await credentials.set('alice', { authorization: 'Bearer a' }, { persist: true });
    await credentials.set('alice', null);
    expect(await store.getMeta(authMetaKey('alice'))).toEqual({ required: true });
    expect(await credentials.source('alice')).toBeNull();
    expect(await createCredentials(open).source('alice')).toBeNull();
  });

  it('a signed-out owner never falls back to cookies, and is sent again with its own credentials once back', async () => {
    const { open } = fresh();
    const credentials = createCredentials(open);
    await credentials.set('alice', { authorization: 'Bearer a' });
    await credentials.set('alice', null);
    // Another user signs in with a cookie session: alice's rows must not ride on bob's cookie.
    await credentials.set('bob', {});
    expect(await credentials.source('alice')).toBeNull();
    expect(await credentials.source('bob')).toEqual({});
    await credentials.set('alice', { authorization: 'Bearer a2' });
    expect(await credentials.source('alice')).toEqual({ authorization: 'Bearer a2' });
  });

  it('setAuth({}) says the owner uses the cookie session, remembered across a restart', async () => {
    const { store, open } = fresh();
    await createCredentials(open).set('carol', {});
    expect(await store.getMeta(authMetaKey('carol'))).toEqual({ cookies: true });
    expect(await createCredentials(open).source('carol')).toEqual({});
  });
});
