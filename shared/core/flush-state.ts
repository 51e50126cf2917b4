import type { FlushReport } from '../model/page-api.ts';
import type { Expectation } from '../model/store.ts';
import type { GroupCommit } from './group-commit.ts';
import type { Semaphore } from './semaphore.ts';

/** Per-flush bookkeeping: what was attempted, counted, and how many conflicts per record. */
export interface FlushState {
  owner: string;
  force: boolean;
  report: FlushReport;
  attempted: Set<string>;
  busyTargets: Set<string>;
  conflictsPerTarget: Map<string, number>;
  /** Rows this flush deferred (transient outcomes), with their `nextAttemptAt`. */
  deferred: Map<string, number>;
  /** Origins a request succeeded to: their rows deferred for network reasons are due (§12). */
  recovered: Set<string>;
  /** Rows whose claim another holder's write beat: the next pass looks at them once more. */
  lost: Set<string>;
  /** Held rows this flush queued again because it has the credentials they waited for. */
  released: Set<string>;
  /** Whether this holder has credentials for the owner: asked once, when a scan first needs it. */
  credentialed?: Promise<boolean>;
  /** Rows the latest pass saw waiting on backoff, with their `nextAttemptAt`. */
  waiting: Map<string, number>;
  /**
   * For each row selected, the blocked rows of its record it was let past, as they were seen:
   * its claim holds only while they still are (§7).
   */
  passedOver: Map<string, Expectation[]>;
  /** At most `concurrency` requests on the network at once; claims and ACKs run beside them. */
  sends: Semaphore;
  /** Claims and ACKs of this flush, committed together when they arrive together. */
  writes: GroupCommit;
  stop?: FlushReport['stopped'];
}
