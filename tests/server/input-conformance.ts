import { describe, expect, it } from 'vitest';
import { Api, digestOf, newKey, newUser, send, TEST_TIMEOUTS } from './helpers.ts';
import { type RawChunk, sendRaw } from './raw-http.ts';

/**
 * Bad input of every kind gets a 4xx problem with a stable `type` (SPEC §15), the same on every
 * adapter: nothing reaches a database driver that one adapter stores and another rejects.
 */
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

    it.each([
      ['title', 'a\u0000b'],
      ['title', '\u0000'],
      ['body', 'trailing NUL \u0000'],
    ])(
      'refuses NUL in the %s with 422 validation-failed, on create and update',
      async (field, text) => {
        const api = await Api.login(getUrl(), newUser());
        const key = newKey();
        const created = await api.write('POST', '/api/notes', {
          body: { title: 'x', [field]: text },
        });
        expect([created.status, created.json.type]).toEqual([422, 'validation-failed']);
        expect(created.json.issues.map((issue: { path: string }) => issue.path)).toEqual([field]);
        const note = await api.create('kept');
        const patched = await api.patch(note.json.id, 1, { [field]: text }, { key });
        expect([patched.status, patched.json.type]).toEqual([422, 'validation-failed']);
        expect((await api.get(`/api/notes/${note.json.id}`)).json).toEqual(note.json);
        expect((await api.get(`/idempotency/${key}`)).status).toBe(404);
      },
    );

    it.each([
      ['a lone low surrogate', 'x\udfffy'],
      ['a lone high surrogate', 'x\ud800y'],
      ['a high surrogate at the end', 'end \ud83d'],
      ['a pair in the wrong order', '\ude00\ud83d'],
    ])('refuses %s with 422 validation-failed and stores nothing', async (_case, text) => {
      const api = await Api.login(getUrl(), newUser());
      const key = newKey();
      // JSON.stringify writes a lone surrogate as an escape (\udfff), as a client would.
      const created = await api.create(text, { key });
      expect([created.status, created.json.type]).toEqual([422, 'validation-failed']);
      expect((await api.get('/api/notes')).json.items).toEqual([]);
      expect((await api.get(`/idempotency/${key}`)).status).toBe(404);
      const paired = await api.create('pair \ud83d\ude00 kept');
      expect(paired.status).toBe(201);
      expect((await api.get(`/api/notes/${paired.json.id}`)).json.title).toBe('pair 😀 kept');
    });

    it('refuses a body that is not UTF-8 with 400 malformed-body', async () => {
      const api = await Api.login(getUrl(), newUser());
      for (const bytes of [
        Buffer.from([0x7b, 0x22, 0x74, 0x69, 0x74, 0x6c, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
        Buffer.concat([
          Buffer.from('{"title":"'),
          Buffer.from([0xed, 0xbf, 0xbf]),
          Buffer.from('"}'),
        ]),
        Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
      ]) {
        const response = await fetch(new URL('/api/notes', api.url), {
          method: 'POST',
          headers: {
            authorization: `Bearer ${api.token}`,
            'idempotency-key': `"${newKey()}"`,
            'content-type': 'application/json',
          },
          body: bytes,
        });
        const problem = await response.json();
        expect([response.status, problem.type]).toEqual([400, 'malformed-body']);
      }
      expect((await api.get('/api/notes')).json.items).toEqual([]);
    });

    it('takes If-Match revisions up to 2147483647 and answers larger ones with 400 if-match-malformed', async () => {
      const api = await Api.login(getUrl(), newUser());
      const created = await api.create('counted');
      const id = created.json.id;
      for (const revision of [2_147_483_647, 0]) {
        const stale = await api.patch(id, revision, { title: 'lost' });
        expect([stale.status, stale.json.type, stale.json.currentRevision]).toEqual([
          412,
          'revision-conflict',
          1,
        ]);
      }
      for (const revision of ['2147483648', '4294967296', '999999999999999']) {
        const patched = await api.patch(id, 1, { title: 'lost' }, { ifMatch: revision });
        expect([patched.status, patched.json.type]).toEqual([400, 'if-match-malformed']);
        const removed = await api.remove(id, 1, { ifMatch: revision });
        expect([removed.status, removed.json.type]).toEqual([400, 'if-match-malformed']);
      }
      expect((await api.get(`/api/notes/${id}`)).json).toEqual(created.json);
    });

    it('validates the user of the admin routes and the note of an other-device edit', async () => {
      const api = await Api.login(getUrl(), newUser());
      for (const [method, path] of [
        ['GET', '/__stats?user=a%00b'],
        ['GET', '/__stats?user=%ED%A0%80'],
        ['DELETE', '/__faults?user=%00'],
      ] as const) {
        const answer = await send(getUrl(), method, path, {});
        expect([answer.status, answer.json.type]).toEqual([422, 'validation-failed']);
      }
      const edit = (body: unknown) =>
        send(
          getUrl(),
          'POST',
          '/__faults/edit',
          { 'content-type': 'application/json' },
          JSON.stringify(body),
        );
      const note = await api.create('edited elsewhere');
      for (const body of [
        { user: 'alice', id: 'a\u0000b', title: 'x' },
        { user: 'alice', id: note.json.id, title: 'a\u0000b' },
        { user: 'alice', id: note.json.id, body: 'x\udfff' },
      ]) {
        expect((await edit(body)).json.type).toBe('validation-failed');
      }
      expect((await api.get(`/api/notes/${note.json.id}`)).json.revision).toBe(1);
    });
  });

  describe('answers of the HTTP layer', () => {
    const port = () => Number(new URL(getUrl()).port);
    const marker = 'zq%3Cscript%3E';

    it.each<[string, RawChunk[], number, string]>([
      [
        'a path that is not valid percent-encoding',
        [`GET /api/notes/${marker}%E0%A4%A HTTP/1.1\r\nHost: x\r\n\r\n`],
        400,
        'bad-request',
      ],
      [
        'a path segment over 100 characters',
        [`GET /api/notes/${marker}${'z'.repeat(100)} HTTP/1.1\r\nHost: x\r\n\r\n`],
        414,
        'uri-too-long',
      ],
      [
        'headers over 16 KiB',
        [`GET /${marker} HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(17_000)}\r\n\r\n`],
        431,
        'header-fields-too-large',
      ],
      [
        'an Expect other than 100-continue',
        [`POST /api/notes HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 0\r\n\r\n`],
        417,
        'expectation-failed',
      ],
      ['HTTP/1.1 without Host', [`GET /${marker} HTTP/1.1\r\n\r\n`], 400, 'bad-request'],
      ['a request line that is not HTTP', [`GARBAGE ${marker}\r\n\r\n`], 400, 'bad-request'],
      ['an unknown method', [`BREW /${marker} HTTP/1.1\r\nHost: x\r\n\r\n`], 400, 'bad-request'],
      [
        'a TLS handshake on the plain port',
        [Buffer.from('16030100a5010000a10303', 'hex')],
        400,
        'bad-request',
      ],
      [
        'Content-Length and Transfer-Encoding together',
        [
          'POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        ],
        400,
        'bad-request',
      ],
      [
        'a broken chunked body',
        [
          'POST /auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
        ],
        400,
        'bad-request',
      ],
      [
        'CONNECT',
        ['CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n'],
        405,
        'method-not-allowed',
      ],
    ])(
      'answers %s with a problem of a stable type that does not echo the request',
      async (_case, chunks, status, type) => {
        const answer = await sendRaw(port(), chunks);
        expect(answer.status).toBe(status);
        expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
        const problem = JSON.parse(answer.body);
        expect(problem).toMatchObject({ type, status });
        expect(answer.body).not.toMatch(/zq|script|zzzz|bbbb/);
      },
    );

    it('delivers an answer given before the body was read while the client is still sending it', async () => {
      const api = await Api.login(getUrl(), newUser());
      const body = Buffer.alloc(4_000_000, 0x61);
      const head = (method: string, path: string, headers: string[]) =>
        [
          `${method} ${path} HTTP/1.1`,
          'Host: x',
          ...headers,
          `Content-Length: ${body.length}`,
          'Connection: close',
          '',
          '',
        ].join('\r\n');
      const cases: Array<[number, string]> = [
        [
          413,
          head('POST', '/api/notes', [
            `Authorization: Bearer ${api.token}`,
            `Idempotency-Key: "${newKey()}"`,
            'Content-Type: application/json',
          ]),
        ],
        [401, head('POST', '/api/notes', ['Content-Type: application/json'])],
        [200, head('GET', '/idempotency', [`Authorization: Bearer ${api.token}`])],
      ];
      for (let round = 0; round < 15; round++) {
        for (const [status, text] of cases) {
          // Closing with the rest of the body unread would reset the connection and could
          // destroy the answer before the client reads it (a network error, retried forever).
          const answer = await sendRaw(port(), [text, { atMs: 2, data: body }]);
          expect([answer.ending, answer.status]).toEqual(['answered', status]);
        }
      }
    });

    it('ends stalled and trickled requests with 408 request-timeout, but lets a slow answer finish', async () => {
      const { headersTimeoutMs, requestTimeoutMs } = TEST_TIMEOUTS;
      const user = newUser();
      const api = await Api.login(getUrl(), user);
      const body = JSON.stringify({ title: 'slow' });
      const writeHead = [
        'POST /api/notes HTTP/1.1',
        'Host: x',
        `Authorization: Bearer ${api.token}`,
        `Idempotency-Key: "${newKey()}"`,
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
        '',
        '',
      ].join('\r\n');
      const trickle = Array.from({ length: 40 }, (_, i) => ({ atMs: i * 100, data: 'X' }));
      await send(
        getUrl(),
        'POST',
        '/__faults',
        { 'content-type': 'application/json' },
        JSON.stringify({
          kind: 'delay',
          ms: requestTimeoutMs + 500,
          route: 'write',
          user,
          count: 1,
        }),
      );
      const [stalledHeaders, trickled, stalledBody, slowAnswer] = await Promise.all([
        sendRaw(port(), ['GET /api/notes HTTP/1.1\r\nHost: x\r\n']),
        sendRaw(port(), ['GET /api/notes HTTP/1.1\r\nHost: x\r\nX-Slow: ', ...trickle]),
        sendRaw(port(), [writeHead, body.slice(0, 5)]),
        api.create('slow but sent'),
      ]);
      for (const [answer, limit] of [
        [stalledHeaders, headersTimeoutMs],
        [trickled, headersTimeoutMs],
        [stalledBody, requestTimeoutMs],
      ] as const) {
        expect(answer.status).toBe(408);
        expect(JSON.parse(answer.body).type).toBe('request-timeout');
        expect(answer.elapsedMs).toBeGreaterThanOrEqual(limit - 50);
        expect(answer.elapsedMs).toBeLessThan(limit + 1500);
      }
      expect(slowAnswer.status).toBe(201);
      const titles = (await api.get('/api/notes')).json.items.map(
        (n: { title: string }) => n.title,
      );
      expect(titles).toEqual(['slow but sent']);
      expect(digestOf(body)).toMatch(/^sha-256=/);
    });
  });
}
