import { describe, expect, it } from 'vitest';
import type { OutboxRow } from '../../shared/model/row.ts';
import { type ClaimContext, isClaimMine, planClaim } from '../../shared/plan/claim.ts';
import { sendDeadline } from '../../shared/plan/lease.ts';
import { createMemoryStore } from '../../shared/store/memory.ts';
import {
  BUNDLE,
  claimedBy,
  createRow,
  deferred,
  intentRow,
  LEASE,
  legacySending,
  ME,
  NOW,
  OTHER,
  OWNER,
  updateRow,
} from './fixtures.ts';

const ctx: ClaimContext = { owner: OWNER, holderId: ME, now: NOW, leaseMs: LEASE, bundle: BUNDLE };

function claimed(observed: OutboxRow) {
  const planned = planClaim(observed, structuredClone(observed), ctx);
  if (planned.kind !== 'claim') throw new Error(`expected a claim, got skip:${planned.reason}`);
  return planned;
}

/** SPEC §4 table: what acquiring a row writes, one case per field row. */
describe('planClaim writes the claim fields of SPEC §4', () => {
  const observed = deferred(updateRow(), 2);
  const { row } = claimed(observed);

  it.each([
    { field: 'claim.holderId is this holder', actual: () => row.claim?.holderId, expected: ME },
    {
      field: 'claim.expiresAt is now plus the lease',
      actual: () => row.claim?.expiresAt,
      expected: NOW + LEASE,
    },
    {
      field: 'claim.fence is the previous fence plus one',
      actual: () => row.claim?.fence,
      expected: 3,
    },
    { field: 'state is "sending"', actual: () => row.state, expected: 'sending' },
    {
      field: 'sentAt is now, half a millisecond in: no legacy tab writes that (§17)',
      actual: () => row.sentAt,
      expected: NOW + 0.5,
    },
    {
      field:
        'evidence counts one more attempt at now, keeps the last error code and dates the key at now: every earlier answer (503) said nothing was applied, so the server keeps nothing of it to forget (SPEC §15)',
      actual: () => row.evidence,
      expected: {
        attemptCount: 3,
        lastAttemptAt: NOW,
        lastErrorCode: 'http_503',
        firstAttemptAt: NOW,
      },
    },
    {
      field: 'writer names this bundle at now',
      actual: () => row.writer,
      expected: { bundle: BUNDLE, at: NOW + 0.5 },
    },
  ])('$field', ({ actual, expected }) => {
    expect(actual()).toEqual(expected);
  });

  it('the plan is one compare-and-swap on the row exactly as observed', () => {
    const raw = structuredClone(observed);
    const planned = planClaim(observed, raw, ctx);
    expect(planned).toMatchObject({
      kind: 'claim',
      fence: 3,
      plan: { owner: OWNER, expected: [{ id: observed.id, row: raw }], put: [row] },
    });
  });
});

describe('the first fence is 1 and every handover adds one', () => {
  it.each([
    { name: 'a row never claimed gets fence 1', observed: updateRow(), fence: 1 },
    {
      name: 'a legacy sending row whose lease ran out (no claim) gets fence 1',
      observed: legacySending(updateRow(), NOW - LEASE),
      fence: 1,
    },
    {
      name: 'a row settled after fence 1 gets fence 2',
      observed: deferred(updateRow(), 1),
      fence: 2,
    },
    {
      name: 'a row whose holder died with fence 4 is taken over with fence 5',
      observed: claimedBy(updateRow(), OTHER, 4, NOW - LEASE),
      fence: 5,
    },
  ])('$name', ({ observed, fence }) => {
    expect(claimed(observed).fence).toBe(fence);
    expect(claimed(observed).row.claim?.fence).toBe(fence);
  });
});

describe('planClaim skips rows it must not take', () => {
  it.each([
    {
      name: "another owner's row is never claimed (G6)",
      observed: updateRow({ owner: 'user-2' }),
      reason: 'other_owner',
    },
    {
      name: 'an intent row with no request is never sent as it is (§8)',
      observed: intentRow('c'),
      reason: 'no_request',
    },
    {
      name: 'a held row waits for resumeHeld',
      observed: updateRow({ state: 'held' }),
      reason: 'not_queued',
    },
    {
      name: 'a blocked row waits for the app',
      observed: updateRow({ state: 'blocked' }),
      reason: 'not_queued',
    },
    {
      name: 'a row in an unknown state is never sent (§2)',
      observed: updateRow({ state: 'archived' }),
      reason: 'not_queued',
    },
    {
      name: "another holder's live claim is left alone",
      observed: claimedBy(updateRow(), OTHER, 1, NOW - 1),
      reason: 'in_flight',
    },
    {
      name: "a legacy tab's fresh sending row is left alone (§4 rule 2)",
      observed: legacySending(updateRow(), NOW - 1),
      reason: 'in_flight',
    },
  ])('$name', ({ observed, reason }) => {
    expect(planClaim(observed, structuredClone(observed), ctx)).toEqual({ kind: 'skip', reason });
  });
});

describe('two holders that observed the same row', () => {
  it('the second claim is stale and writes nothing', async () => {
    const store = createMemoryStore({ name: `claim-race-${Math.random()}` });
    const observed = createRow();
    await store.replace({
      owner: OWNER,
      expected: [{ id: observed.id, row: null }],
      put: [observed],
      reason: 'enqueue',
    });
    const raw = await store.get(observed.id);
    const first = planClaim(observed, raw, ctx);
    const second = planClaim(observed, raw, { ...ctx, holderId: OTHER });
    if (first.kind !== 'claim' || second.kind !== 'claim') throw new Error('both should plan');
    expect(await store.replace(first.plan)).toBe('committed');
    expect(await store.replace(second.plan)).toBe('stale');
    expect(await store.get(observed.id)).toEqual(first.row);
    store.close();
  });
});

/** SPEC §5: a settle writes only while `holderId` and `fence` are still the ones it claimed with. */
describe('isClaimMine', () => {
  const mine = claimedBy(updateRow(), ME, 2);
  it.each([
    { name: 'the row as I claimed it is mine', row: mine, result: true },
    {
      name: 'my claim whose lease ran out, with no one taking over, is still mine to settle',
      row: claimedBy(updateRow(), ME, 2, NOW - 2 * LEASE),
      result: true,
    },
    { name: 'a row that is gone is not mine', row: undefined, result: false },
    {
      name: 'a row claimed by another holder is not mine',
      row: claimedBy(mine, OTHER, 3),
      result: false,
    },
    {
      name: 'a row I claimed again with a newer fence is not the claim I hold',
      row: claimedBy(mine, ME, 3),
      result: false,
    },
    { name: 'a row with no claim is not mine', row: updateRow(), result: false },
  ])('$name', ({ row, result }) => {
    expect(isClaimMine(row, ME, 2)).toBe(result);
  });
});

/** SPEC §4 "No request leaves after its lease": the deadline a claimed request is sent under. */
describe('sendDeadline', () => {
  it.each([
    {
      name: 'by default it leaves by expiresAt minus 20 % of the lease and is aborted at expiresAt',
      margin: undefined,
      expected: { leaveBy: NOW + LEASE - LEASE * 0.2, abortAt: NOW + LEASE },
    },
    {
      name: 'a configured margin replaces the default',
      margin: 1_000,
      expected: { leaveBy: NOW + LEASE - 1_000, abortAt: NOW + LEASE },
    },
    {
      name: 'a negative margin counts as none: never past expiresAt',
      margin: -5,
      expected: { leaveBy: NOW + LEASE, abortAt: NOW + LEASE },
    },
  ])('$name', ({ margin, expected }) => {
    const { row } = claimed(deferred(updateRow(), 1));
    expect(
      sendDeadline(row.claim!, {
        leaseMs: LEASE,
        ...(margin === undefined ? {} : { marginMs: margin }),
      }),
    ).toEqual(expected);
  });
});
