import { afterEach, describe, expect, it } from 'vitest';
import type { EndpointApi } from '../../shared/model/connection.ts';
import { OutboxError } from '../../shared/model/errors.ts';
import { openEndpoint } from '../../shared/runtime/open-endpoint.ts';
import { createSender } from '../../shared/runtime/sender.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import { restHandler } from '../../shared/wire/rest-handler.ts';
import { HOSTILE } from '../support/hostile.ts';
import { createNote } from '../support/intents.ts';

/**
 * SPEC §13, G7: every method of the page API refuses every class of hostile argument with an
 * `OutboxError` and a code — the same checks the page runs before it posts (client/connect.ts
 * calls `model/arguments.ts` too) — and keeps serving afterwards.
 */

const OWNER = 'alice';
let close: (() => void) | undefined;
afterEach(() => close?.());

async function endpoint(): Promise<EndpointApi> {
  const store = createMemoryStore({ name: `args-${Math.random()}` });
  close = () => store.close();
  const sender = createSender(
    {
      collections: { notes: restHandler({ baseUrl: '/api/notes' }) },
      store: async () => store,
      fetch: (async () => new Response(null, { status: 503 })) as typeof fetch,
    },
    { kind: 'sw', owners: async () => [OWNER] },
  );
  return (await openEndpoint(sender, OWNER)).api;
}

const listener = () => undefined;

interface MethodCase {
  method: string;
  call: (api: EndpointApi, bad: unknown) => Promise<unknown>;
  /** Codes a hostile value of the wrong type (not a cycle or depth problem) may get here. */
  typeCodes: string[];
}

/** `name(arg)`, called with the hostile value as its one argument. */
function alone(name: keyof EndpointApi, arg: string, typeCodes: string[]): MethodCase {
  return {
    method: `${name}(${arg})`,
    call: (api, bad) => (api[name] as (value: unknown) => Promise<unknown>).call(api, bad),
    typeCodes,
  };
}

/** Each method, with the hostile value put in one of its arguments. */
const METHODS: ReadonlyArray<MethodCase> = [
  alone('enqueue', 'input', ['invalid_intent', 'invalid_value']),
  {
    method: 'enqueue({ payload })',
    call: (a, bad) => a.enqueue({ collection: 'notes', kind: 'create', payload: bad as never }),
    typeCodes: ['invalid_value'],
  },
  {
    method: 'enqueue({ meta })',
    call: (a, bad) => a.enqueue({ collection: 'notes', kind: 'create', meta: bad as never }),
    typeCodes: ['invalid_value'],
  },
  alone('rows', 'filter', ['invalid_argument', 'invalid_value']),
  alone('row', 'id', ['invalid_id']),
  alone('retry', 'id', ['invalid_id']),
  alone('discard', 'id', ['invalid_id']),
  alone('receipt', 'requestId', ['invalid_id']),
  alone('conflicts', 'options', ['invalid_argument', 'invalid_value']),
  alone('restore', 'conflictId', ['invalid_id']),
  alone('receipts', 'options', ['invalid_argument', 'invalid_value']),
  alone('subscribe', 'listener', ['invalid_argument']),
  {
    method: 'subscribe(listener, filter)',
    call: (a, bad) => a.subscribe(listener, bad as never),
    typeCodes: ['invalid_argument', 'invalid_value'],
  },
  {
    method: 'watch(id)',
    call: (a, bad) => a.watch(bad as never, listener),
    typeCodes: ['invalid_id'],
  },
  {
    method: 'watch(id, listener)',
    call: (a, bad) => a.watch('notes-000000000000000000000001', bad as never),
    typeCodes: ['invalid_argument'],
  },
  alone('unsubscribe', 'id', ['invalid_id']),
  alone('setAuth', 'headers', ['invalid_argument', 'invalid_value']),
  {
    method: 'setAuth(headers, options)',
    call: (a, bad) => a.setAuth({ authorization: 'Bearer x' }, bad as never),
    typeCodes: ['invalid_argument', 'invalid_value'],
  },
];

/** Wrong types and shapes, beside the hostile values of `HOSTILE`. */
const WRONG: ReadonlyArray<{ name: string; value: () => unknown }> = [
  { name: 'the number 42', value: () => 42 },
  { name: 'a string', value: () => 'yes' },
  { name: 'true', value: () => true },
  { name: 'an array', value: () => [] },
  { name: 'an object with an unknown key', value: () => ({ surprise: 1 }) },
];

const cases = METHODS.flatMap((m) => [
  ...HOSTILE.map((h) => ({ ...m, value: h.name, bad: h.value, codes: [h.code, ...m.typeCodes] })),
  ...WRONG.map((w) => ({ ...m, value: w.name, bad: w.value, codes: m.typeCodes })),
]).filter(
  (c) =>
    // A string is a well-formed id: those methods answer it (not found, nothing to stop).
    !(c.typeCodes.includes('invalid_id') && c.value === 'a string') &&
    // Any JSON is a payload or meta; a function is what a listener is.
    !(c.method.includes('{ payload }') || c.method.includes('{ meta }')
      ? WRONG.some((w) => w.name === c.value)
      : c.method.includes('listener)') && c.value === 'a function'),
);

describe('the page API refuses hostile arguments with a typed error (SPEC §13, G7)', () => {
  it.each(cases)('$method with $value', async ({ call, bad, codes }) => {
    const api = await endpoint();
    const error = await call(api, bad()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OutboxError);
    expect(codes).toContain((error as OutboxError).code);
    // … and it keeps serving.
    await expect(api.enqueue(createNote({ title: 'after' }))).resolves.toMatchObject({
      outcome: 'queued',
    });
  });

  it('refuses a payload nested 1,500 levels, the depth that silenced the worker before', async () => {
    const api = await endpoint();
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 1500; i++) deep = deep.x = {} as Record<string, unknown>;
    await expect(
      api.enqueue({ collection: 'notes', kind: 'create', payload: root as never }),
    ).rejects.toMatchObject({ code: 'value_too_deep' });
  });
});
