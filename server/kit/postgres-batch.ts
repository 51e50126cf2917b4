import type pg from 'pg';
import type { Answer } from '../problem.ts';
import {
  isStoredStatus,
  type LedgerClaim,
  type LedgerWork,
  type StoredResponse,
  storedResponseOf,
  type TransactOutcome,
} from './ledger.ts';

/** What the batch transaction needs of the PostgreSQL ledger (postgres-ledger.ts). */
export interface PostgresBatchParts {
  pool: pg.Pool;
  /** `BEGIN …; SET LOCAL lock_timeout = …`. */
  begin: string;
  /** The claim of a key as literals, or `undefined` when a value cannot be one. */
  claimText(client: pg.PoolClient, claim: LedgerClaim): string | undefined;
  /** The stored answer over this transaction's own claim (no COMMIT), or `undefined`. */
  completeText(
    client: pg.PoolClient,
    claim: LedgerClaim,
    response: StoredResponse,
  ): string | undefined;
  lookup: string;
}

/** One write of the batch as it went out. */
interface Sent {
  claimed: Promise<pg.QueryResult[]>;
  outcome: { kind: 'applied'; response: StoredResponse } | { kind: 'refused'; answer: Answer };
}

/**
 * The writes of a batch (SPEC §15.1) in one transaction on one pipelined client, a savepoint
 * each: every write's claim, its handler's statements (deferred ones without waiting), its stored
 * answer (over its own claim only) or a rollback to its savepoint, then one COMMIT — one round
 * trip for a batch of creates whose handlers defer their inserts, where one transaction per write
 * takes one each. Anything unexpected — a key another transaction completed, a statement that
 * failed, a handler that threw, a value that cannot be a literal — and the transaction rolls back
 * whole: `undefined`, and the caller runs each write alone, as its request alone would run, so one
 * write's trouble never undoes another's effect and nothing was answered before. A write whose
 * outcome is `undefined` in the array runs alone too.
 */
export async function transactTogether<Tx extends pg.PoolClient>(
  parts: PostgresBatchParts,
  jobs: ReadonlyArray<{ claim: LedgerClaim; work: LedgerWork<Tx> }>,
): Promise<Array<TransactOutcome | undefined> | undefined> {
  let client: pg.PoolClient;
  try {
    client = await parts.pool.connect();
  } catch {
    return undefined;
  }
  if ((client as { pipeline?: boolean }).pipeline !== true) {
    client.release();
    return undefined;
  }
  const pending: Array<Promise<unknown>> = [];
  const watch = <T>(promise: Promise<T>) => {
    promise.catch(() => {});
    pending.push(promise);
    return promise;
  };
  let broken = false;
  try {
    watch(client.query(parts.begin));
    const sent: Sent[] = [];
    for (const [index, { claim, work }] of jobs.entries()) {
      const claimText = parts.claimText(client, claim);
      if (claimText === undefined) throw new Error('not inlinable');
      const claimed = watch(
        client.query(`SAVEPOINT w${index}; ${claimText}`) as unknown as Promise<pg.QueryResult[]>,
      );
      const answer = await work(client as Tx, (statement) => {
        watch(Promise.resolve(statement));
      });
      if (!isStoredStatus(answer.status)) {
        watch(client.query(`ROLLBACK TO SAVEPOINT w${index}; RELEASE SAVEPOINT w${index}`));
        sent.push({ claimed, outcome: { kind: 'refused', answer } });
        continue;
      }
      const response = storedResponseOf(claim.fingerprint, answer);
      const completeText = parts.completeText(client, claim, response);
      if (completeText === undefined) throw new Error('not inlinable');
      watch(client.query(`${completeText}; RELEASE SAVEPOINT w${index}`));
      sent.push({ claimed, outcome: { kind: 'applied', response } });
    }
    const committed = watch(client.query('COMMIT'));
    const settled = await Promise.allSettled(pending);
    if (settled.some((result) => result.status === 'rejected')) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      return undefined;
    }
    // An aborted transaction answers COMMIT with ROLLBACK.
    if ((await committed).command !== 'COMMIT') return undefined;
    const outcomes: Array<TransactOutcome | undefined> = [];
    for (const [index, { claimed, outcome }] of sent.entries()) {
      const won = ((await claimed).at(-1)?.rowCount ?? 0) > 0;
      if (won) {
        outcomes.push(outcome);
        continue;
      }
      // Refused here, while another transaction completed the key: its answer stands.
      const { principal, key } = jobs[index]!.claim;
      const stored = (await client.query<StoredResponse>(parts.lookup, [principal, key])).rows[0];
      // Gone again (swept): that write runs alone.
      outcomes.push(stored && { kind: 'completed', response: stored });
    }
    return outcomes;
  } catch {
    await Promise.allSettled(pending);
    await client.query('ROLLBACK').catch(() => (broken = true));
    return undefined;
  } finally {
    client.release(broken);
  }
}
