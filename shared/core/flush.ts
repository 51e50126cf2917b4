import type { Outcome } from '../model/outcome.ts';
import { emptyFlushReport, type FlushReport } from '../model/page-api.ts';
import type { TransportResult } from '../model/ports.ts';
import type { OutboxRow } from '../model/row.ts';
import type { OutboxStore } from '../model/store.ts';
import type { RecordSeen } from '../plan/claim.ts';
import { isNetworkDown } from '../plan/classify.ts';
import type { CorruptHold } from '../plan/quarantine.ts';
import { targetKey } from '../plan/select.ts';
import type { CoreDeps } from './config.ts';
import { createGroupCommit, type GroupCommit } from './group-commit.ts';
import { Semaphore } from './semaphore.ts';
import { guardStore } from './storage-guard.ts';

/**
 * One flush of one holder for one owner (SPEC §4–§8, §11, §12): the ports it runs with and
 * everything it counts and remembers until it ends. The dispatcher, the send path and the settle
 * path all take the flush and read what they need from it.
 */
export class Flush {
  /** The core's ports and tuning, as configured. */
  readonly deps: CoreDeps;
  /**
   * The store as the flush sees it: a storage fault stops the flush as a device-side transient
   * (`FlushStop('storage')`, SPEC §11, G7), here once rather than at every call.
   */
  readonly store: OutboxStore;
  readonly owner: string;
  /** An explicit flush also sends rows waiting out their backoff (§12). */
  readonly force: boolean;
  readonly report: FlushReport = emptyFlushReport();
  /** Rows this flush selected to send: none is sent twice in one flush. */
  readonly attempted = new Set<string>();
  /** Records with a row in flight or in a batch being gathered (G4). */
  readonly busyTargets = new Set<string>();
  /** Conflict successors written per record, against the storm cap (§10). */
  readonly conflictsPerTarget = new Map<string, number>();
  /** Rows this flush deferred (transient outcomes), with their `nextAttemptAt`. */
  readonly deferred = new Map<string, number>();
  /** Origins a request succeeded to: their rows deferred for network reasons are due (§12). */
  readonly recovered = new Set<string>();
  /** Rows whose claim another holder's write beat: the next pass looks at them once more. */
  readonly lost = new Set<string>();
  /** Held rows this flush queued again because it has the credentials they waited for. */
  readonly released = new Set<string>();
  /** Whether this holder has credentials for the owner: asked once, when a scan first needs it. */
  credentialed?: Promise<boolean>;
  /** Rows the latest pass saw waiting on backoff or on another holder's lease, and until when. */
  readonly waiting = new Map<string, number>();
  /** For each row selected, its record as seen: its claim holds only while it still is (§6.1). */
  readonly seen = new Map<string, RecordSeen>();
  /** `superseded` tombstones read (row id → its conflict successor's), each once per flush (§10). */
  readonly supersededHops = new Map<string, string>();
  /** Orphan intents (§8) whose create this flush looked up: once per flush. */
  readonly orphansLooked = new Set<string>();
  /**
   * Per collection, the earliest `seq` of an intent whose record is unknown yet (§6.1): no later
   * row of that collection goes until it is resolved — any of them could be its record.
   */
  readonly orphanSeq = new Map<string, number>();
  /**
   * Records held by a value that failed to parse while on the wire (§6.1, G4), until its lease
   * ends; under `null`, the end of a hold whose record could not be read: every record waits.
   */
  readonly corruptHolds = new Map<string | null, number>();
  /** At most `concurrency` requests on the network at once; claims and ACKs run beside them. */
  readonly sends: Semaphore;
  /** Claims and ACKs of this flush, committed together when they arrive together. */
  readonly writes: GroupCommit;
  /** Why the flush stops early; once set, no further request leaves. */
  stop?: FlushReport['stopped'];

  constructor(deps: CoreDeps, owner: string, force: boolean) {
    this.deps = deps;
    this.store = guardStore(deps.store, 'flush');
    this.owner = owner;
    this.force = force;
    this.sends = new Semaphore(deps.concurrency);
    this.writes = createGroupCommit(this.store, deps.plansPerCommit);
  }

  /**
   * Stops the flush as `offline` when an answer says the network itself is down (SPEC §12): every
   * other row would fail the same way. The first reason to stop stands.
   */
  stopIfNetworkDown(answers: readonly (TransportResult | Outcome)[]): void {
    if (answers.some(isNetworkDown)) this.stop ??= 'offline';
  }

  /** Holds the rows of `intent`'s collection made after it, while its record is unknown (§6.1). */
  holdAfter(intent: OutboxRow): void {
    const seq = intent.seq ?? Number.NEGATIVE_INFINITY;
    const held = this.orphanSeq.get(intent.collection);
    if (held === undefined || seq < held) this.orphanSeq.set(intent.collection, seq);
  }

  /** Whether `row` waits on an unresolved intent of its collection made before it (§6.1). */
  isHeldByOrphan(row: OutboxRow): boolean {
    const held = this.orphanSeq.get(row.collection);
    return held !== undefined && (row.seq === undefined || row.seq > held);
  }

  /**
   * Holds the record of a value that failed to parse but may still be on the wire (§4, §6.1):
   * no row of it goes, and the flush wakes when the lease ends, to quarantine it then.
   */
  holdForCorrupt(id: string, hold: CorruptHold): void {
    const key = hold.record === undefined ? null : targetKey(hold.record);
    this.corruptHolds.set(key, Math.max(this.corruptHolds.get(key) ?? hold.until, hold.until));
    this.waiting.set(id, hold.until);
  }

  /** Whether `row`'s record is held by a value that may still be on the wire (§6.1, G4). */
  isHeldByCorrupt(row: OutboxRow, now: number): boolean {
    return [targetKey(row), null].some((key) => (this.corruptHolds.get(key) ?? -Infinity) > now);
  }

  /** Counts a committed claim and reports it (`claimed`). */
  noteClaimed(row: OutboxRow, fence: number): void {
    this.report.claimed++;
    this.deps.onEvent?.({ type: 'claimed', id: row.id, holderId: this.deps.holderId, fence });
  }

  /**
   * Counts claims another holder's write beat (`stale`). Such a row changed since the scan —
   * another holder may be sending it, or have held it for want of credentials this one has — so
   * the next pass looks at it again, once per flush: it waits out that holder's lease or goes.
   */
  noteLost(rows: readonly OutboxRow[]): void {
    this.report.stale += rows.length;
    for (const row of rows) {
      if (this.lost.has(row.id)) continue;
      this.lost.add(row.id);
      this.attempted.delete(row.id);
    }
  }
}
