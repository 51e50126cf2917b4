import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { contentDigest, fingerprintOf } from '../../shared/model/digest.ts';
import type { PreparedRequest } from '../../shared/model/handler.ts';
import type { IdSource } from '../../shared/model/ports.ts';
import { sha256Base64, sha256Hex } from '../../shared/model/sha256.ts';
import { buildRowRequest, isValidId, newRequestId } from '../../shared/plan/identity.ts';

const HEX24 = '0123456789abcdef01234567';
const ids: IdSource = { hex24: () => HEX24, random: () => 0.5 };

/** SPEC §9: `<prefix>-<24 lowercase hex>`, and every accepted id matches `^[A-Za-z0-9_-]{8,80}$`. */
describe('request ids', () => {
  it.each([
    { prefix: 'notes', id: `notes-${HEX24}` },
    { prefix: 'delete', id: `delete-${HEX24}` },
    { prefix: 'my.notes/v2', id: `my_notes_v2-${HEX24}` },
    { prefix: '', id: `req-${HEX24}` },
    { prefix: 'x'.repeat(70), id: `${'x'.repeat(40)}-${HEX24}` },
  ])('prefix "$prefix" makes $id, an id the engine accepts', ({ prefix, id }) => {
    const made = newRequestId(ids, prefix);
    expect(made).toBe(id);
    expect(made).toMatch(/^[A-Za-z0-9_]+-[0-9a-f]{24}$/);
    expect(isValidId(made)).toBe(true);
  });

  it.each([
    { id: 'abcdefgh', valid: true, why: 'eight characters is the shortest' },
    { id: 'abcdefg', valid: false, why: 'seven characters is too short' },
    { id: 'a'.repeat(80), valid: true, why: 'eighty characters is the longest' },
    { id: 'a'.repeat(81), valid: false, why: 'eighty-one characters is too long' },
    { id: 'A-b_C-d_9', valid: true, why: 'letters, digits, dash and underscore are allowed' },
    { id: 'notes.00000001', valid: false, why: 'a dot is not allowed' },
    { id: 'notes 00000001', valid: false, why: 'a space is not allowed' },
    { id: 'notes/00000001', valid: false, why: 'a slash is not allowed' },
    { id: 'notés-00000001', valid: false, why: 'non-ASCII letters are not allowed' },
    { id: 'pending:abcdefgh', valid: false, why: 'a pending target is not an id' },
  ])('"$id" is valid: $valid ($why)', ({ id, valid }) => {
    expect(isValidId(id)).toBe(valid);
  });
});

/** SPEC §9: SHA-256 hex of the canonical JSON of `{ method, url, body, baseRevision }`. */
describe('fingerprints', () => {
  const request: PreparedRequest = {
    method: 'PATCH',
    url: '/api/notes/n_1',
    headers: { 'content-type': 'application/json' },
    body: '{"title":"a"}',
  };
  const base = fingerprintOf(request, 3);

  it('is the SHA-256 hex of the canonical JSON of method, url, body and baseRevision', () => {
    const canonical =
      '{"baseRevision":3,"body":"{\\"title\\":\\"a\\"}","method":"PATCH","url":"/api/notes/n_1"}';
    expect(base).toBe(createHash('sha256').update(canonical).digest('hex'));
  });

  it.each([
    { name: 'the same request again', request, revision: 3 as number | null | undefined },
    {
      name: 'a copy with other headers (headers are not part of it)',
      request: { ...request, headers: {} },
      revision: 3,
    },
    {
      name: 'a copy built with its keys in another order',
      request: { body: request.body, url: request.url, headers: {}, method: 'PATCH' },
      revision: 3,
    },
  ])('$name hashes the same', ({ request: same, revision }) => {
    expect(fingerprintOf(same, revision)).toBe(base);
  });

  it.each([
    {
      field: 'method',
      request: { ...request, method: 'PUT' },
      revision: 3 as number | null | undefined,
    },
    { field: 'url', request: { ...request, url: '/api/notes/n_2' }, revision: 3 },
    { field: 'body', request: { ...request, body: '{"title":"b"}' }, revision: 3 },
    { field: 'body (to none)', request: { ...request, body: null }, revision: 3 },
    { field: 'baseRevision', request, revision: 4 },
    { field: 'baseRevision (to none)', request, revision: null },
  ])('a change of $field gives another fingerprint', ({ request: changed, revision }) => {
    expect(fingerprintOf(changed, revision)).not.toBe(base);
  });

  it('no baseRevision and a null baseRevision are the same request', () => {
    expect(fingerprintOf(request, undefined)).toBe(fingerprintOf(request, null));
  });
});

describe('the stored request (SPEC §9, §2, §15)', () => {
  const stored = buildRowRequest(
    {
      method: 'PATCH',
      url: '/api/notes/n_1',
      headers: {
        'Content-Type': 'application/json',
        Authorization: 'Bearer secret',
        Cookie: 'sid=1',
        'If-Match': '"3"',
      },
      body: '{"title":"a"}',
    },
    `notes-${HEX24}`,
    3,
  );

  it.each([
    { header: 'idempotency-key', value: `"notes-${HEX24}"` },
    { header: 'content-digest', value: contentDigest('{"title":"a"}') },
    { header: 'if-match', value: '"3"' },
    { header: 'content-type', value: 'application/json' },
    { header: 'authorization', value: undefined },
    { header: 'cookie', value: undefined },
  ])('header $header is $value (auth material is never stored)', ({ header, value }) => {
    expect(stored.headers[header]).toBe(value);
  });

  it('carries the request id and the fingerprint of its bytes', () => {
    expect(stored.requestId).toBe(`notes-${HEX24}`);
    expect(stored.fingerprint).toBe(
      fingerprintOf(
        { method: 'PATCH', url: '/api/notes/n_1', headers: {}, body: '{"title":"a"}' },
        3,
      ),
    );
  });

  it('Content-Digest is the RFC 9530 sha-256 of the body bytes', () => {
    const digest = createHash('sha256').update('{"title":"a"}').digest('base64');
    expect(stored.headers['content-digest']).toBe(`sha-256=:${digest}:`);
  });
});

/** The synchronous SHA-256 must agree with node:crypto, across block boundaries. */
describe('sha256 agrees with node:crypto', () => {
  it.each([
    { name: 'the empty string', text: '' },
    { name: '"abc"', text: 'abc' },
    { name: '55 bytes (one block with length)', text: 'a'.repeat(55) },
    { name: '56 bytes (padding spills into a second block)', text: 'a'.repeat(56) },
    { name: '64 bytes (exactly one block of data)', text: 'b'.repeat(64) },
    { name: '1,000 bytes (many blocks)', text: 'x'.repeat(1_000) },
    { name: 'multi-byte UTF-8', text: '노트 ✓ 📝'.repeat(30) },
  ])('on $name', ({ text }) => {
    expect(sha256Hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
    expect(sha256Base64(text)).toBe(createHash('sha256').update(text, 'utf8').digest('base64'));
  });
});
