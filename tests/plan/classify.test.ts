import { describe, expect, it } from 'vitest';
import type { Outcome } from '../../shared/model/outcome.ts';
import type { TransportResult } from '../../shared/model/ports.ts';
import { backoffDelay, DEFAULT_BACKOFF } from '../../shared/plan/backoff.ts';
import { classifyResult, isNetworkDown, parseRetryAfter } from '../../shared/plan/classify.ts';
import { NOW } from './fixtures.ts';

function response(
  status: number,
  body: unknown = '',
  headers: Record<string, string> = {},
): TransportResult {
  return {
    kind: 'response',
    status,
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
}

const problem = (type: string, extra: Record<string, unknown> = {}) => ({ type, ...extra });
const validation = JSON.stringify(problem('validation-failed', { detail: 'title is required' }));

/** SPEC §11 classifier table, one case per row (and per status a row names). */
describe('classifyResult (SPEC §11)', () => {
  const cases: { name: string; result: TransportResult; outcome: Outcome }[] = [
    {
      name: '200 is a success',
      result: response(200, { id: 'n_1', revision: 2 }),
      outcome: { kind: 'success', status: 200, body: { id: 'n_1', revision: 2 }, replayed: false },
    },
    {
      name: '201 is a success',
      result: response(201, { id: 'n_1', revision: 1 }),
      outcome: { kind: 'success', status: 201, body: { id: 'n_1', revision: 1 }, replayed: false },
    },
    {
      name: '204 with no body is a success',
      result: response(204),
      outcome: { kind: 'success', status: 204, body: null, replayed: false },
    },
    {
      name: 'a replayed 201 is a normal success, marked replayed',
      result: response(201, { id: 'n_1' }, { 'idempotent-replayed': 'true' }),
      outcome: { kind: 'success', status: 201, body: { id: 'n_1' }, replayed: true },
    },
    {
      name: 'a network error is transient',
      result: { kind: 'network_error', message: 'offline' },
      outcome: { kind: 'transient', code: 'network' },
    },
    {
      name: 'a timeout is transient',
      result: { kind: 'timeout' },
      outcome: { kind: 'transient', code: 'timeout' },
    },
    {
      name: 'a request that never left (its claim ran out first, §4) is a device-side transient',
      result: { kind: 'not_sent', code: 'lease_lapsed', message: 'auth was slow' },
      outcome: { kind: 'transient', code: 'lease_lapsed', device: true },
    },
    ...[408, 425, 429, 500, 502, 503, 504].map((status) => ({
      name: `${status} is transient`,
      result: response(status, problem('unavailable')),
      outcome: { kind: 'transient', code: `http_${status}` } as Outcome,
    })),
    {
      name: '409 request-in-progress is transient',
      result: response(409, problem('request-in-progress')),
      outcome: { kind: 'transient', code: 'request_in_progress' },
    },
    {
      name: '409 request-in-progress named by a problem URI is transient',
      result: response(409, problem('https://errors.example/problems/request-in-progress')),
      outcome: { kind: 'transient', code: 'request_in_progress' },
    },
    {
      name: '401 holds the row for new credentials',
      result: response(401),
      outcome: { kind: 'auth', code: 'http_401' },
    },
    {
      name: '412 revision-conflict carries the current revision',
      result: response(412, problem('revision-conflict', { currentRevision: 7 }), { etag: '"7"' }),
      outcome: { kind: 'conflict', status: 412, currentRevision: 7 },
    },
    {
      name: '412 without a body takes the current revision from the ETag',
      result: response(412, '', { etag: 'W/"8"' }),
      outcome: { kind: 'conflict', status: 412, currentRevision: 8 },
    },
    {
      name: '409 revision-conflict carries the current revision',
      result: response(409, problem('revision-conflict', { currentRevision: 4 })),
      outcome: { kind: 'conflict', status: 409, currentRevision: 4 },
    },
    {
      name: 'a conflict with the server copy carries it as the remote copy',
      result: response(
        412,
        problem('revision-conflict', { currentRevision: 5, current: { title: 'theirs' } }),
      ),
      outcome: {
        kind: 'conflict',
        status: 412,
        currentRevision: 5,
        remote: { revision: 5, value: { title: 'theirs' } },
      },
    },
    {
      name: 'a conflict from a server that keeps history names the version it would overwrite (§10.1)',
      result: response(
        412,
        problem('revision-conflict', {
          currentRevision: 5,
          history: { revision: 5, href: '/api/notes/n_1/history/5' },
        }),
      ),
      outcome: { kind: 'conflict', status: 412, currentRevision: 5, history: { revision: 5 } },
    },
    {
      name: 'a conflict whose history member names no whole revision claims no history',
      result: response(
        412,
        problem('revision-conflict', { currentRevision: 5, history: { revision: '5' } }),
      ),
      outcome: { kind: 'conflict', status: 412, currentRevision: 5 },
    },
    {
      name: '422 idempotency-key-reused is a permanent fingerprint_mismatch',
      result: response(422, problem('idempotency-key-reused')),
      outcome: {
        kind: 'permanent',
        code: 'fingerprint_mismatch',
        detail: JSON.stringify(problem('idempotency-key-reused')),
      },
    },
    ...[400, 403, 404, 413, 422].map((status) => ({
      name: `${status} is a permanent http_${status} with the problem body kept`,
      result: response(status, validation),
      outcome: { kind: 'permanent', code: `http_${status}`, detail: validation } as Outcome,
    })),
    {
      name: 'a 409 of another kind is a permanent http_409',
      result: response(409, problem('duplicate')),
      outcome: {
        kind: 'permanent',
        code: 'http_409',
        detail: JSON.stringify(problem('duplicate')),
      },
    },
  ];

  it.each(cases)('$name', ({ result, outcome }) => {
    expect(classifyResult(result, NOW)).toEqual(outcome);
  });
});

/** SPEC §11: "honour Retry-After" — in seconds or as an HTTP date. */
describe('Retry-After', () => {
  const inTenSeconds = new Date(NOW + 10_000).toUTCString();

  it.each([
    { name: 'seconds', value: '3', ms: 3_000 },
    { name: 'zero seconds', value: '0', ms: 0 },
    { name: 'an HTTP date', value: inTenSeconds, ms: 10_000 },
    { name: 'an HTTP date in the past', value: new Date(NOW - 60_000).toUTCString(), ms: 0 },
    { name: 'garbage', value: 'soon', ms: undefined },
    { name: 'no header', value: undefined, ms: undefined },
  ])('$name → $ms ms', ({ value, ms }) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it.each([
    { status: 503, code: 'http_503', header: '2', ms: 2_000 },
    { status: 429, code: 'http_429', header: inTenSeconds, ms: 10_000 },
  ])(
    'a $status with Retry-After $header carries it on the transient outcome',
    ({ status, code, header, ms }) => {
      expect(classifyResult(response(status, '', { 'retry-after': header }), NOW)).toEqual({
        kind: 'transient',
        code,
        retryAfterMs: ms,
      });
    },
  );

  it('a 409 request-in-progress carries its Retry-After', () => {
    const result = response(409, problem('request-in-progress'), { 'retry-after': '1' });
    expect(classifyResult(result, NOW)).toEqual({
      kind: 'transient',
      code: 'request_in_progress',
      retryAfterMs: 1_000,
    });
  });

  it.each([
    { attempt: 1, random: 0.99 },
    { attempt: 12, random: 0.99 },
    { attempt: 12, random: 0 },
  ])(
    'Retry-After wins over computed backoff (attempt $attempt, jitter $random)',
    ({ attempt, random }) => {
      expect(backoffDelay(attempt, DEFAULT_BACKOFF, random, 7_000)).toBe(7_000);
    },
  );

  it('a Retry-After longer than the backoff cap is honoured as the server gave it', () => {
    expect(backoffDelay(3, DEFAULT_BACKOFF, 0.5, 3_600_000)).toBe(3_600_000);
  });
});

/** SPEC §12: an answer that says the network itself is down stops the flush (`offline`). */
describe('isNetworkDown', () => {
  const cases: { name: string; answer: TransportResult | Outcome; down: boolean }[] = [
    { name: 'a network error', answer: { kind: 'network_error', message: 'x' }, down: true },
    { name: 'a timeout', answer: { kind: 'timeout' }, down: true },
    { name: 'an answer from the server', answer: response(503), down: false },
    {
      name: 'a request that never left',
      answer: { kind: 'not_sent', code: 'lease_lapsed', message: 'x' },
      down: false,
    },
    {
      name: 'a transient network outcome',
      answer: { kind: 'transient', code: 'network' },
      down: true,
    },
    {
      name: 'a transient timeout outcome',
      answer: { kind: 'transient', code: 'timeout' },
      down: true,
    },
    {
      name: 'a device-side timeout (the lease lapsed) is not the network',
      answer: { kind: 'transient', code: 'timeout', device: true },
      down: false,
    },
    { name: 'a 503 outcome', answer: { kind: 'transient', code: 'http_503' }, down: false },
    { name: 'a permanent outcome', answer: { kind: 'permanent', code: 'http_400' }, down: false },
  ];
  it.each(cases)('$name: $down', ({ answer, down }) => {
    expect(isNetworkDown(answer)).toBe(down);
  });
});
