import { describe, expect, it } from 'vitest';
import { parseContentDigest, requestFingerprint, sha256Digest } from '../../server/index.ts';
import {
  contentDigest,
  formatIdempotencyKey,
  formatRevisionTag,
  parseIdempotencyKey,
  parseRevisionTag,
} from '../../shared/wire/protocol.ts';

describe('Idempotency-Key (SPEC §15: RFC 8941 string, bare form accepted)', () => {
  it.each([
    ['"notes-0123456789abcdef01234567"', { kind: 'ok', key: 'notes-0123456789abcdef01234567' }],
    ['  "notes-0123456789abcdef01234567"  ', { kind: 'ok', key: 'notes-0123456789abcdef01234567' }],
    ['notes-0123456789abcdef01234567', { kind: 'ok', key: 'notes-0123456789abcdef01234567' }],
    ['"abc\\_defgh"', { kind: 'malformed' }],
    ['"abcdefgh\\"x"', { kind: 'malformed' }],
    ['"short"', { kind: 'malformed' }],
    ['"has space"', { kind: 'malformed' }],
    ['"abcdefgh";param=1', { kind: 'malformed' }],
    ['"abcdefgh", "ijklmnop"', { kind: 'malformed' }],
    ['"abcdefgh', { kind: 'malformed' }],
    [`"${'a'.repeat(81)}"`, { kind: 'malformed' }],
    ['"caf\u00e9-1234"', { kind: 'malformed' }],
    ['', { kind: 'missing' }],
    [undefined, { kind: 'missing' }],
  ])('parses %j', (header, expected) => {
    expect(parseIdempotencyKey(header)).toEqual(expected);
  });

  it('formats what it parses', () => {
    const key = 'plate-0123456789abcdef01234567';
    expect(parseIdempotencyKey(formatIdempotencyKey(key))).toEqual({ kind: 'ok', key });
  });
});

describe('revision tags (ETag / If-Match)', () => {
  it.each([
    ['"3"', 3],
    ['3', 3],
    [' "12" ', 12],
    ['W/"3"', undefined],
    ['*', undefined],
    ['"3", "4"', undefined],
    ['"3', undefined],
    ['"-1"', undefined],
  ])('parses %j', (value, expected) => {
    expect(parseRevisionTag(value)).toBe(expected);
  });

  it('formats a revision as a strong tag', () => {
    expect(formatRevisionTag(7)).toBe('"7"');
  });
});

describe('Content-Digest (RFC 9530)', () => {
  it('matches the RFC 9530 example in the environment-free and the server implementation', async () => {
    const body = '{"hello": "world"}\n';
    const expected = 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:';
    expect(await contentDigest(body)).toBe(expected);
    expect(await contentDigest(new TextEncoder().encode(body))).toBe(expected);
    expect(sha256Digest(Buffer.from(body))).toBe(expected);
  });

  it.each([
    [undefined, { kind: 'absent' }],
    ['sha-512=:abc=:', { kind: 'absent' }],
    [
      'sha-512=:abc=:, sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:',
      { kind: 'sha-256', digest: 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:' },
    ],
    ['sha-256=:tooshort=:', { kind: 'malformed' }],
    ['sha-256=RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=', { kind: 'malformed' }],
  ])('parses %j', (header, expected) => {
    expect(parseContentDigest(header)).toEqual(expected);
  });

  it('fingerprints method, path without query, If-Match and digest', () => {
    const a = requestFingerprint('PATCH', '/api/notes/n1?x=1', ' "2" ', 'sha-256=:a:');
    expect(a).toBe(requestFingerprint('PATCH', '/api/notes/n1', '"2"', 'sha-256=:a:'));
    expect(a).not.toBe(requestFingerprint('PATCH', '/api/notes/n2', '"2"', 'sha-256=:a:'));
    expect(a).not.toBe(requestFingerprint('PATCH', '/api/notes/n1', '"3"', 'sha-256=:a:'));
    expect(a).not.toBe(requestFingerprint('DELETE', '/api/notes/n1', '"2"', 'sha-256=:a:'));
  });
});
