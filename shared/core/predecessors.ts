import { decodeRow, type OutboxRow } from '../model/row.ts';
import type { Expectation, OutboxStore } from '../model/store.ts';
import { holdsNothing, type PredecessorLookup, type PredecessorState } from '../plan/select.ts';
import { observeStored } from '../plan/unknown-version.ts';

interface Resolved {
  state: PredecessorState;
  /** The ids walked through `superseded` tombstones, the first one included. */
  chain: string[];
  /** The row found at the end of the chain, as read. */
  found?: Expectation;
}

/**
 * Looks up `successorOf` rows missing from `known` (SPEC §7). A row replaced by its conflict
 * successor lives on in that successor (§10): its `superseded` tombstone is followed, so an edit
 * that waited on the original keeps waiting until the resend is settled (G4) — except for the
 * resend itself, whose predecessor is simply gone.
 */
export async function lookupPredecessors(
  store: OutboxStore,
  owner: string,
  ids: Iterable<string | undefined>,
  known: Map<string, PredecessorState>,
  /** Filled with each blocked predecessor read here, by the id asked for, as it was read. */
  blocked?: Map<string, Expectation>,
  /** `superseded` hops already read (row id → its successor's), kept by the caller. */
  hops?: Map<string, string>,
): Promise<PredecessorLookup> {
  const resolved = new Map<string, Resolved>();
  for (const [id, state] of known) resolved.set(id, { state, chain: [id] });
  const missing = new Set<string>();
  for (const id of ids) if (id !== undefined && !resolved.has(id)) missing.add(id);
  // Shared by the walks of this look, and kept by the caller for later looks when it passes one.
  const kept = hops ?? new Map<string, string>();
  await Promise.all(
    [...missing].map(async (id) => {
      const entry = await resolve(store, owner, id, kept);
      resolved.set(id, entry);
      if (entry.state === 'blocked' && entry.found) blocked?.set(id, entry.found);
    }),
  );
  return (id, askerId) => {
    const entry = resolved.get(id);
    if (entry === undefined) return 'absent';
    return askerId !== undefined && entry.chain.includes(askerId) ? 'absent' : entry.state;
  };
}

/**
 * Looks up the predecessor of every row of a scan (SPEC §7): the scanned rows are known as they
 * were read, the others are read from the store ({@link lookupPredecessors}).
 */
export function lookupPredecessorsOf(
  store: OutboxStore,
  owner: string,
  rows: readonly OutboxRow[],
  /** Filled with each blocked predecessor read here, by the id asked for, as it was read. */
  blocked?: Map<string, Expectation>,
  /** `superseded` hops already read (row id → its successor's), kept by the caller. */
  hops?: Map<string, string>,
): Promise<PredecessorLookup> {
  const known = new Map<string, PredecessorState>();
  for (const row of rows) known.set(row.id, holdsNothing(row) ? 'blocked' : 'present');
  return lookupPredecessors(
    store,
    owner,
    rows.map((row) => row.successorOf),
    known,
    blocked,
    hops,
  );
}

/**
 * Only the owner's rows and tombstones are read (G6): another owner's row is absent here. A hop
 * in `hops` is not read again: a superseded row is gone for good (its id is never written again),
 * so a chain that grows by one conflict at a time costs one hop per look, not its whole length.
 */
async function resolve(
  store: OutboxStore,
  owner: string,
  id: string,
  hops: Map<string, string>,
): Promise<Resolved> {
  // Every `superseded` hop is followed: each is one revision conflict of the record, and a
  // record that keeps conflicting over many flushes builds a long chain. Only a cycle (a corrupt
  // tombstone) stops the walk.
  const chain = [id];
  let current = id;
  for (;;) {
    let into = hops.get(current);
    if (into === undefined) {
      const raw = await store.get(current, owner);
      if (raw !== undefined) {
        const observed = observeStored(decodeRow(raw));
        return {
          state: observed !== undefined && holdsNothing(observed.row) ? 'blocked' : 'present',
          chain,
          found: { id: current, row: raw },
        };
      }
      const tombstone = await store.getTombstone(current, owner);
      if (tombstone?.reason !== 'superseded' || tombstone.into === undefined) break;
      into = tombstone.into;
      hops.set(current, into);
    }
    if (chain.includes(into)) break;
    current = into;
    chain.push(current);
  }
  return { state: 'absent', chain };
}
