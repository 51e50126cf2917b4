/**
 * The variants of the IndexedDB floor (`bench/browser/floor.ts`, run in the worker by
 * `app/floor.ts`): which IndexedDB work each batch of rows gets. Shared by the runner and the
 * worker, so both name them alike.
 */

/**
 * Each variant's label in the table; the first one is the per-row contract of SPEC §4/§5 itself,
 * the floor SPEC §19's ratio is taken against. The second adds what §6.1 asks of every row
 * besides: the last look at its record before the wire, and the record read and the name written
 * under both of its names (a record named by a server id has a second name to look up; a
 * `pending:` target, as every create the bench queues, has none).
 */
export const FLOOR_VARIANTS = {
  contract: 'contract: claim put; record check + delete + receipt put',
  'contract-with-names': 'contract + §6.1: last look, names of server ids read, names written',
  'contract-no-record-check': 'contract without the record check',
  'claim-only': 'claim put only',
  'settle-only': 'settle only: delete + receipt put',
  'delete-only': 'delete only',
  'engine-transactions': "the engine's transactions: contract + scan + compare reads",
  'batch-level': 'batch-level claim and receipt (not allowed by SPEC §4/§5)',
} as const;

/** A variant of {@link FLOOR_VARIANTS}. */
export type FloorVariant = keyof typeof FLOOR_VARIANTS;

/** Every variant, in table order. */
export const FLOOR_VARIANT_IDS = Object.keys(FLOOR_VARIANTS) as FloorVariant[];

/**
 * The order of the variants in round `round` (from 0): the table order, every other round
 * reversed (A B C, C B A, A B C, …), so that a load that drifts during a run weighs on every
 * variant alike rather than on the ones measured last.
 */
export function roundOrder<T>(items: readonly T[], round: number): T[] {
  return round % 2 === 0 ? [...items] : [...items].reverse();
}
