import type { EnqueueResult } from '../../client/index.ts';

/**
 * How many edits this device made, by how `enqueue` placed them (SPEC §6): a new request, an
 * edit folded into an earlier unsent one, or a create and delete that cancelled out. Kept per
 * user in `localStorage`, so it survives closing the tab like the outbox does.
 */
export interface Tally {
  made: number;
  merged: number;
  cancelled: number;
}

const key = (user: string) => `sw-outbox-demo:tally:${user}`;

export function loadTally(user: string): Tally {
  try {
    const value = JSON.parse(localStorage.getItem(key(user)) ?? 'null') as Tally | null;
    if (value && typeof value.made === 'number') return value;
  } catch {
    // Start counting again rather than show nonsense.
  }
  return { made: 0, merged: 0, cancelled: 0 };
}

export function countEdit(user: string, outcome: EnqueueResult['outcome']): Tally {
  const tally = loadTally(user);
  if (outcome === 'existing') return tally;
  tally.made++;
  if (outcome === 'coalesced') tally.merged++;
  if (outcome === 'cancelled') tally.cancelled++;
  localStorage.setItem(key(user), JSON.stringify(tally));
  return tally;
}
