import { describe, expect, it } from 'vitest';
import { createFlightRecorder, traceLines } from '../../shared/runtime/flight-recorder.ts';

/** SPEC §23: the flight recorder keeps the last events, oldest first, with no credentials. */
describe('the flight recorder', () => {
  it('keeps only the last events of its ring, oldest first, each with its time', () => {
    let now = 0;
    const recorder = createFlightRecorder({ now: () => now++ }, 3);
    for (const id of ['a', 'b', 'c', 'd']) recorder.record({ type: 'claimed', id } as never);
    expect(recorder.entries()).toEqual([
      { at: 1, type: 'claimed', id: 'b' },
      { at: 2, type: 'claimed', id: 'c' },
      { at: 3, type: 'claimed', id: 'd' },
    ]);
  });

  it('drops every field named like a credential, whatever the event', () => {
    const recorder = createFlightRecorder({ now: () => 5 });
    recorder.record({
      type: 'x',
      authorization: 'Bearer t',
      headers: { cookie: 'c' },
      accessToken: 't',
      setCookie: 'c',
      password: 'p',
      clientSecret: 's',
      at: 99,
      id: 'kept',
    } as never);
    expect(traceLines(recorder.entries())).toBe('{"at":5,"type":"x","id":"kept"}\n');
  });

  it('hands out copies: an export cannot change the ring', () => {
    const recorder = createFlightRecorder({ now: () => 1 });
    recorder.record({ type: 'sent' });
    recorder.entries().pop();
    expect(recorder.entries()).toHaveLength(1);
  });
});
