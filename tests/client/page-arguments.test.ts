// @vitest-environment happy-dom
import { IDBFactory } from 'fake-indexeddb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { connectOutbox, type OutboxClient } from '../../client/connect.ts';
import { OutboxError } from '../../shared/model/errors.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { HOSTILE } from '../support/hostile.ts';
import { createNote } from '../support/intents.ts';

/**
 * SPEC §13, G7, on the page's own side of the API: the calls `connectOutbox` answers in the page
 * (`flush`, `subscribe`, `watch`, and `connectOutbox` itself) refuse hostile and wrong-typed
 * arguments with an `OutboxError` and a code, instead of resolving, returning a stop function
 * that never calls back, or throwing a bare `TypeError` — and the outbox keeps serving.
 */

let outbox: OutboxClient;

beforeEach(async () => {
  globalThis.indexedDB = new IDBFactory();
  outbox = await connectOutbox({
    swUrl: '/sw.js',
    owner: 'alice',
    periodicSync: false,
    pageSender: {
      collections: { notes: restHandler({ baseUrl: 'http://localhost/api/notes' }) },
      allowedOrigins: ['http://localhost'],
      fetch: (async () => new Response(null, { status: 503 })) as typeof fetch,
      dbName: `page-arguments-${Math.random()}`,
      backoff: { baseMs: 60_000, maxMs: 60_000 },
    },
  });
});

afterEach(() => outbox.close());

/** Runs a call that may throw synchronously or reject; gives back what it threw. */
async function refusal(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return undefined;
}

const listener = () => undefined;
const ID = 'notes-000000000000000000000001';

/** The exact calls that were accepted silently, or failed without a code. */
const WRONG_CALLS: ReadonlyArray<{
  call: string;
  run: (o: OutboxClient) => unknown;
  code: string;
}> = [
  { call: 'flush(true)', run: (o) => o.flush(true as never), code: 'invalid_argument' },
  {
    call: "flush({ force: 'yes' })",
    run: (o) => o.flush({ force: 'yes' } as never),
    code: 'invalid_argument',
  },
  { call: 'flush(null)', run: (o) => o.flush(null as never), code: 'invalid_argument' },
  { call: 'flush(new Date())', run: (o) => o.flush(new Date() as never), code: 'invalid_value' },
  { call: 'subscribe(42)', run: (o) => o.subscribe(42 as never), code: 'invalid_argument' },
  {
    call: 'subscribe(fn, { collection: 5 })',
    run: (o) => o.subscribe(listener, { collection: 5 } as never),
    code: 'invalid_argument',
  },
  {
    call: 'subscribe(fn, new Date())',
    run: (o) => o.subscribe(listener, new Date() as never),
    code: 'invalid_value',
  },
  {
    call: 'subscribe(fn, /notes/)',
    run: (o) => o.subscribe(listener, /notes/ as never),
    code: 'invalid_value',
  },
  { call: 'watch(null, fn)', run: (o) => o.watch(null as never, listener), code: 'invalid_id' },
  { call: 'watch(id, 0)', run: (o) => o.watch(ID, 0 as never), code: 'invalid_argument' },
];

describe('the page-side calls refuse wrong arguments with a typed error (SPEC §13, G7)', () => {
  it.each(WRONG_CALLS)('$call → $code', async ({ run, code }) => {
    const error = await refusal(() => run(outbox));
    expect(error).toBeInstanceOf(OutboxError);
    expect((error as OutboxError).code).toBe(code);
    await expect(outbox.enqueue(createNote({ title: 'after' }))).resolves.toMatchObject({
      outcome: 'queued',
    });
  });

  it.each(HOSTILE)(
    'flush($name) is refused with a code and the outbox keeps serving',
    async (h) => {
      const error = await refusal(() => outbox.flush(h.value() as never));
      expect(error).toBeInstanceOf(OutboxError);
      expect([h.code, 'invalid_argument', 'invalid_value']).toContain((error as OutboxError).code);
      await expect(outbox.flush({ force: true })).resolves.toMatchObject({ claimed: 0 });
    },
  );

  it.each([
    { options: 'undefined', value: () => undefined },
    { options: 'null', value: () => null },
    { options: 'a string', value: () => '/sw.js' },
    { options: 'no owner', value: () => ({ swUrl: '/sw.js' }) },
    { options: 'an empty owner', value: () => ({ swUrl: '/sw.js', owner: '' }) },
    { options: 'no swUrl', value: () => ({ owner: 'alice' }) },
    ...HOSTILE.map((h) => ({ options: h.name, value: h.value })),
  ])('connectOutbox($options) is refused with invalid_argument', async ({ value }) => {
    const error = await refusal(() => connectOutbox(value() as never));
    expect(error).toBeInstanceOf(OutboxError);
    expect((error as OutboxError).code).toBe('invalid_argument');
  });
});
