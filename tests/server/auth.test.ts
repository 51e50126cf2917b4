import { describe, expect, it } from 'vitest';
import { DemoAuth } from '../../server/index.ts';

describe('demo auth tokens', () => {
  const clock = (start: number) => {
    let now = start;
    return { now: () => now, advance: (ms: number) => (now += ms) };
  };

  it('accepts its own tokens on every instance sharing the secret, and nothing else', () => {
    const time = clock(1_000);
    const a = new DemoAuth({ secret: 's3cret', now: time.now });
    const b = new DemoAuth({ secret: 's3cret', now: time.now });
    const token = a.issue('alice');
    expect(b.check(`Bearer ${token}`)).toEqual({ kind: 'ok', user: 'alice' });
    expect(new DemoAuth({ secret: 'other', now: time.now }).check(`Bearer ${token}`)).toEqual({
      kind: 'invalid',
    });
    expect(a.check(`Bearer ${token.slice(0, -2)}xx`)).toEqual({ kind: 'invalid' });
    expect(a.check('Bearer nonsense')).toEqual({ kind: 'invalid' });
    expect(a.check(undefined)).toEqual({ kind: 'missing' });
    expect(a.check(`Basic ${token}`)).toEqual({ kind: 'missing' });
  });

  it('expires every token of a user until the next login, leaving other users alone', () => {
    const time = clock(5_000);
    const auth = new DemoAuth({ secret: 's', now: time.now });
    const old = auth.issue('alice');
    const bob = auth.issue('bob');
    auth.expire('alice');
    expect(auth.check(`Bearer ${old}`)).toEqual({ kind: 'expired', user: 'alice' });
    expect(auth.check(`Bearer ${bob}`)).toEqual({ kind: 'ok', user: 'bob' });
    const fresh = auth.issue('alice');
    expect(auth.check(`Bearer ${fresh}`)).toEqual({ kind: 'ok', user: 'alice' });
    expect(auth.check(`Bearer ${old}`)).toEqual({ kind: 'expired', user: 'alice' });
  });

  it('expires tokens after their lifetime', () => {
    const time = clock(0);
    const auth = new DemoAuth({ secret: 's', now: time.now, ttlMs: 1_000 });
    const token = auth.issue('alice');
    time.advance(1_000);
    expect(auth.check(`Bearer ${token}`).kind).toBe('ok');
    time.advance(1);
    expect(auth.check(`Bearer ${token}`).kind).toBe('expired');
  });
});
