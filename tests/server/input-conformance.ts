import { describe, expect, it } from 'vitest';
import { Api, newKey, newUser } from './helpers.ts';

/** Bad input of every kind gets a 4xx problem with a stable `type` (SPEC §15), on every adapter. */
export function defineInputConformance(getUrl: () => string): void {
  describe('bad input', () => {
    it.each([
      ['missing', null, 'idempotency-key-missing'],
      ['too short', '"short"', 'idempotency-key-malformed'],
      ['not an id', '"has space in it"', 'idempotency-key-malformed'],
      ['a list', '"notes-aaaaaaaa", "notes-bbbbbbbb"', 'idempotency-key-malformed'],
      ['unterminated', '"notes-aaaaaaaa', 'idempotency-key-malformed'],
    ])('answers 400 for a %s Idempotency-Key', async (_case, header, type) => {
      const api = await Api.login(getUrl(), newUser());
      const headers: Record<string, string> = header === null ? {} : { 'idempotency-key': header };
      const answer = await api.write('POST', '/api/notes', {
        key: null,
        body: { title: 'x' },
        headers,
      });
      expect(answer.status).toBe(400);
      expect(answer.json.type).toBe(type);
    });

    it('accepts the bare key form as the same key as the string form', async () => {
      const api = await Api.login(getUrl(), newUser());
      const key = newKey();
      const bare = await api.write('POST', '/api/notes', {
        key: null,
        body: { title: 'x' },
        headers: { 'idempotency-key': key },
      });
      const quoted = await api.create('x', { key });
      expect(bare.status).toBe(201);
      expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    });

    it('rejects bad bodies with 413, 400, 422 and 415 problems', async () => {
      const api = await Api.login(getUrl(), newUser());
      const huge = await api.create('x'.repeat(70 * 1024));
      expect([huge.status, huge.json.type]).toEqual([413, 'body-too-large']);
      const broken = await api.write('POST', '/api/notes', { rawBody: '{"title": ' });
      expect([broken.status, broken.json.type]).toEqual([400, 'malformed-body']);
      const invalid = await api.write('POST', '/api/notes', { body: { title: 42, extra: true } });
      expect([invalid.status, invalid.json.type]).toEqual([422, 'validation-failed']);
      expect(invalid.json.issues.map((issue: { path: string }) => issue.path)).toContain('title');
      const text = await api.write('POST', '/api/notes', {
        rawBody: 'hi',
        headers: { 'content-type': 'text/plain' },
      });
      expect([text.status, text.json.type]).toEqual([415, 'unsupported-media-type']);
      const lying = await api.create('x', {
        digest: 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
      });
      expect([lying.status, lying.json.type]).toEqual([400, 'content-digest-mismatch']);
      expect((await api.get('/api/notes')).json.items).toEqual([]);
    });

    it('answers 404 for receipt lookups of keys that cannot exist', async () => {
      const api = await Api.login(getUrl(), newUser());
      for (const path of [
        '/idempotency/short',
        '/idempotency/%25G',
        '/idempotency/a%20b%20c%20d%20e',
      ]) {
        expect((await api.get(path)).status).toBe(404);
      }
    });
  });
}
