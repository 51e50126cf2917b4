import { deepEqual, type Json } from '../../shared/model/json.ts';
import { keyName } from '../../shared/model/row.ts';
import type {
  ConflictLedgerEntry,
  Receipt,
  ReplacePlan,
  Tombstone,
} from '../../shared/model/store.ts';
import { assignSeq } from '../../shared/store/commit.ts';
import type { Effect } from '../support/model-server.ts';
import { describeKey, KeyedMap, KeyedSet } from './keys.ts';

/**
 * The oracles of SPEC §20, one per guarantee. They watch every committed plan (a shadow of the
 * store built from the plans themselves, so a check never reads the store), every request that
 * leaves and every effect the model server applies, and record the first violation; the run
 * stops at the step that caused it. `quiescence()` adds the checks that need a drained outbox.
 */

export const GUARANTEES = ['G1', 'G2', 'G3', 'G4', 'G5', 'G6', 'G7'] as const;
export type Guarantee = (typeof GUARANTEES)[number];

/** What an oracle saw. `check` names the rule; `detail` says which ids broke it. */
export interface Violation {
  guarantee: Guarantee;
  check: string;
  detail: string;
}

type Raw = Record<string, unknown>;

function asRaw(value: unknown): Raw | undefined {
  return typeof value === 'object' && value !== null ? (value as Raw) : undefined;
}

interface RawClaim {
  holderId: string;
  expiresAt: number;
  fence: number;
}

function claimOf(raw: Raw | undefined): RawClaim | undefined {
  const claim = asRaw(raw?.claim);
  if (
    claim === undefined ||
    typeof claim.holderId !== 'string' ||
    typeof claim.expiresAt !== 'number' ||
    typeof claim.fence !== 'number'
  )
    return undefined;
  return claim as unknown as RawClaim;
}

/** One intent the app (or the legacy writer, or `restore`) committed to the outbox. */
export interface Edit {
  id: string;
  owner: string;
  collection: string;
  kind: string;
  /** As enqueued: a server id or `pending:<create id>`. */
  targetId: string;
  payload: Record<string, Json> | undefined;
  baseRevision: number | null | undefined;
  /** Position in the order edits were made (a retry of a never-applied row moves it last). */
  made: number;
  /** `page`: a request a Workbox route's plugin let through, a row only if it fails (§22). */
  by: 'app' | 'v0' | 'restore' | 'page';
}

/** What the app says about an edit before it enqueues it. */
export type EditDraft = Omit<Edit, 'made'>;

/** A request on the wire, from the moment it leaves until its answer arrives or it is aborted. */
export interface WireRequest {
  no: number;
  holder: string;
  owner: string;
  method: string;
  path: string;
  key: string | undefined;
  rowId?: string;
  fence?: number;
  record?: string;
  leftAt: number;
  /** Virtual time after which it outlives its claim. */
  deadline?: number;
  done: boolean;
  legacy: boolean;
  /** A legacy tab's request: the `sentAt` the tab wrote on its row as it sent it. */
  sentAt?: number;
  /** The server processed it (or it was lost before getting there): no copy of it lands later. */
  processed?: boolean;
  /**
   * Its holder was killed, or it was aborted after its bytes left: nobody reads its answer, yet
   * it may still land (SPEC §4's very risk), and is on the wire until it did.
   */
  orphaned?: boolean;
  /**
   * A page's request a Workbox route's `OutboxPlugin` let through (SPEC §22): it holds no claim
   * and is not a row yet — it becomes one, under the same key, only if it fails.
   */
  direct?: boolean;
}

/** Who committed a plan. */
export interface Committer {
  holder: string;
  owner: string;
  /** `core` for a v1 holder, `v0` for the legacy writer, `corrupt` for raw writes. */
  kind: 'core' | 'v0' | 'corrupt';
  /** The committer's clock. */
  now: number;
}

const APP_FIELDS = ['title', 'body', 'tag'] as const;

/** A row of a format version this bundle does not know (§17): a newer bundle's to send. */
function isFuture(row: Raw | undefined): boolean {
  // SPEC §17: only a whole `v` above 1 is a newer format; any other `v` is corrupt.
  return row !== undefined && Number.isSafeInteger(row.v) && (row.v as number) > 1;
}

/**
 * The server record a row's target names: a `requests` row's target is its URL (§22), whose last
 * segment is the record's id on the simulated server.
 */
export function recordName(targetId: unknown): string {
  const target = String(targetId);
  if (!target.includes('://')) return target;
  return decodeURIComponent(new URL(target).pathname.split('/').at(-1) ?? '');
}

function recordKey(owner: string, collection: string, targetId: string): string {
  return `${owner}\u0000${collection}\u0000${targetId}`;
}

/** Whether a stored row is in flight by the rules of SPEC §4, as `holderNow` sees it. */
function liveClaim(row: Raw, holderNow: number, leaseMs: number): boolean {
  const claim = claimOf(row);
  if (row.writer !== undefined && claim !== undefined && claim.expiresAt > holderNow) {
    return row.state === 'sending';
  }
  return (
    row.state === 'sending' && typeof row.sentAt === 'number' && holderNow - row.sentAt < leaseMs
  );
}

export class Truth {
  violation: Violation | undefined;
  /** How often each guarantee's checks ran on something that could break them. */
  readonly exercised: Record<Guarantee, number> = {
    G1: 0,
    G2: 0,
    G3: 0,
    G4: 0,
    G5: 0,
    G6: 0,
    G7: 0,
  };
  /** Named situations reached (merges of attempted rows, takeovers, replays...). */
  readonly reached = new Map<string, number>();

  /** The rows store as the committed plans left it, by key (a number key stays a number). */
  readonly rows = new KeyedMap<unknown>();
  /** Each owner's `seq` counter, as the store raises it (§6.1): the shadow stores what it does. */
  private readonly seqCounters = new Map<string, number>();
  readonly gone = new KeyedSet();
  readonly receipts = new Map<string, Receipt>();
  readonly tombstones = new Map<string, Tombstone>();
  readonly ledger = new Map<string, ConflictLedgerEntry>();
  /** Request id → row id. */
  readonly keyRow = new Map<string, string>();
  /** Row id → the edits it carries (its own and those merged, converted or superseded into it). */
  readonly carried = new Map<string, Set<string>>();
  readonly edits = new Map<string, Edit>();
  readonly drafts = new Map<string, EditDraft>();
  #made = 0;
  /** Latest claim of each holder on each row. */
  readonly claims = new Map<string, { fence: number; expiresAt: number }>();
  /** Attempts of a holder on a row that are on the wire, by fence. */
  readonly onWire = new Map<string, Set<number>>();
  readonly wire: WireRequest[] = [];
  /** Keys a holder got a 412 answer for. */
  readonly conflictAnswers = new Set<string>();
  /**
   * Keys the server refused for a stale base revision (412), answered or not: no copy of one can
   * ever apply, since revisions only grow and every copy carries the same base revision (§9).
   */
  readonly outdated = new Set<string>();
  /** What the server answered each key that met a revision conflict: status and revision. */
  readonly conflictsSent = new Map<string, Array<{ status: number; currentRevision: unknown }>>();
  /** Keys the server's validation refused (422 `validation-failed`): every copy is refused. */
  readonly refused = new Set<string>();
  /** Superseded key → its conflict successor. */
  readonly superseded = new Map<string, string>();
  /** How many conflict successors stand before a row (K1 → K2 → …). */
  readonly chain = new Map<string, number>();
  readonly conflicted = new Set<string>();
  /** Keys with an effect, and the edits each applied. */
  readonly applied = new Map<string, Effect>();
  /** Applied keys that carried a conflicted edit when they took effect. */
  readonly resends = new Set<string>();
  readonly appliedBy = new Map<string, string>();
  readonly createdRecord = new Map<string, string>();
  readonly lastPosition = new Map<string, number>();
  readonly lastApplied = new Map<string, string>();
  readonly cancelled = new Set<string>();
  readonly cancelledIn = new Map<string, string>();
  readonly discarded = new Set<string>();
  /** Rows the legacy writer settled (it writes no receipt). */
  readonly legacySettled = new Set<string>();
  /** Corrupt values written straight into the store, by key. */
  readonly corrupt = new KeyedMap<{ owner: string; value: unknown }>();
  /** What a row went through that explains a failure (merges, blind enqueues, overtaking claims). */
  readonly notes = new Map<string, string[]>();
  /**
   * Records the legacy writer sent out of order (it knows no successors, only `savedAt`): where
   * its edits land is the old bundle's doing, not this one's. The order checks still judge this
   * bundle's edits of them (G4): their effects in the order they were made, and the final value
   * with each legacy edit taken where it landed.
   */
  readonly legacyReordered = new Set<string>();
  /** Every effect's place in the order the server applied them, by edit. */
  readonly landed = new Map<string, number>();
  /** Edits a legacy tab's request applied: it sent them where it chose. */
  readonly legacyApplied = new Set<string>();
  #landings = 0;
  /** Edits the app retried (a blocked row of theirs queued again). */
  readonly retried = new Set<string>();
  /**
   * Each retry of a moved edit: where the edit stood among the edits just before that retry, and
   * how many effects the server had applied by then. A retry places the edit as made then (SPEC
   * §6.1), so each retry is judged from where the one before left it.
   */
  readonly retries = new Map<string, Array<{ made: number; landings: number }>>();
  /** Each record's newest applied position after each effect that raised it: [landing, position]. */
  readonly positions = new Map<string, Array<[number, number]>>();
  /**
   * Edits the app re-issued under a new key after the server forgot the old one: SPEC §15 "when
   * the server no longer knows the key the row is blocked with `retention_exceeded` ... for the
   * app to `retry` (a new key, through the revision check and the conflict rule, §10)". Nothing
   * can tell whether the old key was applied: the app's retry may apply the edit again.
   */
  readonly reissued = new Set<string>();
  /**
   * Where each edit stood when it last landed. A re-issued edit is "ordered as made at the retry"
   * (§6.1) only if its new key lands: discarded or blocked before that, the server holds it where
   * its old key landed.
   */
  readonly madeAtLanding = new Map<string, number>();
  /**
   * The rows of its record each row's writer read when it made the row (§6.1): committed before
   * it, so the row goes only once each of them settled. A conflict successor takes its
   * original's; a retried row is made anew at the retry.
   */
  readonly madeAfter = new Map<string, Set<string>>();
  /** Row ids of merged-away rows and what they were when absorbed (for diagnosis). */
  readonly absorbed = new Map<string, string>();

  constructor(
    readonly leaseMs: number,
    private readonly restorePayload: (entry: ConflictLedgerEntry) => Json | undefined,
  ) {}

  fail(guarantee: Guarantee, check: string, detail: string): void {
    this.violation ??= { guarantee, check, detail };
  }

  note(rowId: string, what: string): void {
    const list = this.notes.get(rowId) ?? [];
    if (!list.includes(what)) list.push(what);
    this.notes.set(rowId, list);
  }

  /** The rows of one record in the shadow, but `except`. */
  recordRows(owner: string, collection: unknown, targetId: unknown, except?: unknown): Raw[] {
    const out: Raw[] = [];
    for (const [id, value] of this.rows) {
      const row = asRaw(value);
      if (id === except || !row || row.owner !== owner) continue;
      if (row.collection === collection && row.targetId === targetId) out.push(row);
    }
    return out;
  }

  /**
   * Whether a live row may stay after the drain: blocked with a reason, or an intent (an edit of
   * a create with no server id, §8) whose create is blocked — it waits on the app's retry or
   * discard of that create, which takes it along.
   */
  mayRemain(row: Raw, seen = new Set<unknown>()): boolean {
    if (isFuture(row)) return true;
    if (row.state === 'blocked') return typeof row.blockedCode === 'string';
    const intent =
      row.request === undefined &&
      typeof row.targetId === 'string' &&
      row.targetId.startsWith('pending:');
    // An edit of a create no receipt is known of does not wait forever either (G1): once the
    // network is up and nothing is in flight it is resolved, or blocked with its reason. Nor
    // does a row of a record that holds a newer bundle's row: it goes at once (§6, §17).
    if (typeof row.successorOf !== 'string' || seen.has(row.id)) return false;
    seen.add(row.id);
    // The predecessor, or what it became (merged or superseded into).
    let id: string | undefined = row.successorOf;
    for (let hop = 0; hop < 16 && id !== undefined && !this.rows.has(id); hop++)
      id = this.tombstones.get(id)?.into;
    const before = asRaw(id === undefined ? undefined : this.rows.get(id));
    if (before === undefined || isFuture(before)) return false;
    // An intent waits on its blocked create: the app's retry or discard of it takes it along.
    return intent && this.mayRemain(before, seen);
  }

  /** Request ids whose receipt a prune removed (§2: kept 500 per owner / 7 days). */
  readonly prunedReceipts = new Set<string>();
  /** Which holder (or `v0`) wrote each row last, for ties of clocks across writers. */
  readonly writer = new KeyedMap<string>();

  /** The server answered a key with a revision conflict (§10, §15): what it said. */
  conflictSent(key: string, status: number, body: unknown): void {
    let parsed: unknown = body;
    if (typeof body === 'string')
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = undefined;
      }
    const currentRevision = asRaw(parsed)?.currentRevision ?? null;
    const list = this.conflictsSent.get(key) ?? [];
    list.push({ status, currentRevision });
    this.conflictsSent.set(key, list);
  }

  /**
   * G5: conflict evidence says what the server really answered (§6.1, §10): the key that met the
   * conflict (the last of its lineage) got an answer with that status and current revision.
   */
  private checkEvidence(by: Committer, plan: ReplacePlan): void {
    for (const value of plan.put ?? []) {
      const row = asRaw(value);
      const evidence = asRaw(row?.conflict);
      if (row === undefined || evidence === undefined) continue;
      const before = asRaw(this.rows.get(row.id));
      if (deepEqual(before?.conflict, row.conflict)) continue;
      // A merge carries a row's evidence on (§6): it was judged when it was written.
      const carried = plan.expected.some((e) => deepEqual(asRaw(e.row)?.conflict, row.conflict));
      if (carried) continue;
      this.exercise('G5');
      const lineage = Array.isArray(evidence.lineage) ? evidence.lineage : [];
      const last = asRaw(lineage.length > 0 ? lineage[lineage.length - 1] : evidence.predecessor);
      const key = String(last?.requestId);
      const failure = asRaw(evidence.failure);
      const sent = this.conflictsSent.get(key) ?? [];
      const matches = sent.some(
        (a) => a.status === failure?.status && a.currentRevision === failure?.currentRevision,
      );
      if (!matches)
        this.fail(
          'G5',
          'evidence-not-what-the-server-said',
          `${by.holder}'s ${plan.reason} wrote ${String(row.id)} with evidence of ${String(failure?.status)} at revision ${String(failure?.currentRevision)} for ${key}, but the server answered ${sent.length ? sent.map((a) => `${a.status} at ${String(a.currentRevision)}`).join(', ') : 'no conflict'}${this.why(String(row.id))}`,
        );
    }
  }

  /**
   * G5: a ledger entry is written once per overwrite (§10, §20): with its resend, before it can be
   * sent, saying the revision the conflict named and no final one yet (`unsettled`); completed
   * only when the resend settled applied, with the final revision the applying write made. It
   * changes only from unsettled to settled (or by `restore`, not judged here).
   */
  private checkLedger(by: Committer, plan: ReplacePlan): void {
    for (const id of plan.ledgerDelete ?? []) {
      const entry = this.ledger.get(id);
      if (entry !== undefined && entry.owner !== by.owner)
        this.fail(
          'G6',
          'row-of-other-owner',
          `${by.holder} for ${by.owner} deleted the ledger entry ${id} of ${entry.owner}`,
        );
      if (entry !== undefined && !entry.unsettled)
        this.fail(
          'G5',
          'ledger-entry-lost',
          `${by.holder}'s ${plan.reason} deleted the settled ledger entry of ${id}`,
        );
    }
    for (const entry of plan.ledger ?? []) {
      if (entry.restoredBy !== undefined) continue;
      this.exercise('G5');
      const earlier = this.ledger.get(entry.successorId);
      const base = (e: ConflictLedgerEntry) => ({
        ...e,
        restoredBy: undefined,
        finalRevision: undefined,
        settledAt: undefined,
        unsettled: undefined,
      });
      if (earlier !== undefined) {
        const same = deepEqual(
          { ...earlier, restoredBy: undefined },
          { ...entry, restoredBy: undefined },
        );
        if (!same && !(earlier.unsettled && deepEqual(base(earlier), base(entry))))
          this.fail(
            'G5',
            'ledger-entry-twice',
            `${by.holder}'s ${plan.reason} wrote a second, different ledger entry for ${entry.successorId}`,
          );
        if (same) continue;
      }
      // The row the entry is about: written in this plan (a resend), or settled by it.
      const written = (plan.put ?? []).map(asRaw).find((r) => r?.id === entry.successorId);
      const row = written ?? asRaw(this.rows.get(entry.successorId));
      const failure = asRaw(asRaw(row?.conflict)?.failure);
      if (entry.overwrittenRevision !== (failure?.currentRevision ?? null))
        this.fail(
          'G5',
          'ledger-not-what-the-server-said',
          `the ledger entry of ${entry.successorId} says r${String(entry.overwrittenRevision)} was overwritten; the conflict named r${String(failure?.currentRevision)}`,
        );
      if (entry.unsettled) {
        if (entry.finalRevision !== null)
          this.fail(
            'G5',
            'ledger-not-what-the-server-said',
            `the unsettled ledger entry of ${entry.successorId} names a final revision r${entry.finalRevision}`,
          );
        continue;
      }
      const key = asRaw(row?.request)?.requestId;
      const effect = typeof key === 'string' ? this.applied.get(key) : undefined;
      if (effect === undefined) {
        this.fail(
          'G5',
          'ledger-without-overwrite',
          `${by.holder}'s ${plan.reason} settled a ledger entry for ${entry.successorId}, whose request the server never applied`,
        );
        continue;
      }
      if (entry.finalRevision !== effect.revision)
        this.fail(
          'G5',
          'ledger-not-what-the-server-said',
          `the ledger entry of ${entry.successorId} says r${String(entry.overwrittenRevision)} → r${String(entry.finalRevision)}; ${String(key)} made r${effect.revision}`,
        );
    }
  }

  /**
   * G4: a new edit made while rows of its record are in flight follows the one of them made last
   * (SPEC §6: "the new row gets `successorOf: <that row id>` (the one made last, by `seq`, §6.1 —
   * never by `sentAt`)"). Judged on the rows the enqueue observed, by its writer's clock, where
   * every row in flight carries `seq`, by `seq`; a merged row that keeps the link of the row it
   * replaces (§6) is not judged here.
   */
  private checkSuccessorLink(by: Committer, plan: ReplacePlan): void {
    const observed = new Map<unknown, Raw>();
    for (const e of plan.expected) {
      const row = asRaw(e.row);
      if (row !== undefined) observed.set(e.id, row);
    }
    for (const value of plan.put ?? []) {
      const row = asRaw(value);
      if (row === undefined || observed.has(row.id) || typeof row.successorOf !== 'string')
        continue;
      const inherited = (plan.tombstones ?? []).some(
        (t) => t.into === row.id && observed.get(t.id)?.successorOf === row.successorOf,
      );
      if (inherited) continue;
      const name = recordName(row.targetId);
      const inFlight = [...observed.values()].filter(
        (other) =>
          other.collection === row.collection &&
          recordName(other.targetId) === name &&
          liveClaim(other, by.now, this.leaseMs),
      );
      if (inFlight.length < 2) continue;
      this.reach('edit-beside-two-in-flight');
      // With a row of unknown place among them the new edit waits for every one of them (§6.1).
      if (!inFlight.every((other) => typeof other.seq === 'number')) continue;
      const followed = inFlight.find((other) => other.id === row.successorOf);
      if (followed === undefined) continue;
      this.exercise('G4');
      // SPEC §6.1: "A smaller `seq` was committed earlier", and a retried row "is ordered as
      // made then", at the retry.
      const last = inFlight.reduce((a, b) => (Number(b.seq) > Number(a.seq) ? b : a));
      // Where the senders' clocks say otherwise, only the order of the store names the right one.
      if (inFlight.some((other) => Number(other.sentAt) > Number(last.sentAt)))
        this.reach('edit-beside-two-in-flight-clocks-against');
      if (Number(last.seq) > Number(followed.seq))
        this.fail(
          'G4',
          'successor-of-an-older-row-in-flight',
          `${by.holder}'s new edit ${String(row.id)} follows ${String(followed.id)} while ${String(last.id)}, made after it, is in flight too`,
        );
    }
  }

  /** A prune left these receipts of an owner: the others it knew are gone. Returns how many. */
  receiptsKept(owner: string, kept: readonly string[]): number {
    const left = new Set(kept);
    let pruned = 0;
    for (const [id, receipt] of this.receipts)
      if (receipt.owner === owner && !left.has(id) && !this.prunedReceipts.has(id)) {
        this.prunedReceipts.add(id);
        pruned++;
      }
    if (pruned > 0) this.reach('receipt-pruned');
    return pruned;
  }

  /** Whether the receipt of the create C was pruned (its intents then meet C by its name, §6.1). */
  createReceiptPruned(createId: string): boolean {
    const key = this.appliedBy.get(createId);
    return key !== undefined && this.prunedReceipts.has(key);
  }

  reach(what: string): void {
    this.reached.set(what, (this.reached.get(what) ?? 0) + 1);
  }

  /** The record (as `recordKey` names it) of each page request the plugin let through, by key. */
  readonly directRecord = new Map<string, string>();
  /**
   * Page requests whose answer went to the page, not to a row (SPEC §22): applied or refused
   * there, or failed with nothing queued (the page saw the error, as without the plugin).
   */
  readonly pageAnswered = new Set<string>();
  /**
   * Page requests on the wire when their worker was killed: the page saw a network error, a new
   * worker knows nothing of them, and they land wherever the network puts them.
   */
  readonly pagePlaced = new Set<string>();

  /** Page requests the plugin let onto the wire (§22). */
  readonly pageLeft = new Set<string>();
  /** Page requests queued as rows before they ever left: placed where their row was written. */
  readonly pageQueued = new Set<string>();

  /** A place in the order edits are made, for one made before its id is known. */
  reserveMade(): number {
    return ++this.#made;
  }

  /**
   * A page made a request through the plugin (at `made`): its id is its key, and the row it may
   * become carries it under the same id.
   */
  pageRequest(draft: EditDraft, made: number, record: string): void {
    this.drafts.set(draft.id, draft);
    this.edits.set(draft.id, { ...draft, made });
    this.carriedBy(draft.id).add(draft.id);
    this.keyRow.set(draft.id, draft.id);
    this.directRecord.set(draft.id, record);
  }

  exercise(guarantee: Guarantee): void {
    this.exercised[guarantee]++;
  }

  carriedBy(rowId: string | undefined): Set<string> {
    if (rowId === undefined) return new Set();
    let set = this.carried.get(rowId);
    if (!set) {
      set = new Set();
      this.carried.set(rowId, set);
    }
    return set;
  }

  /** The server record an edit is about, once known. */
  recordOf(edit: Edit): string | undefined {
    if (edit.kind === 'create') return this.createdRecord.get(edit.id);
    if (!edit.targetId.startsWith('pending:')) return edit.targetId;
    return this.createdRecord.get(edit.targetId.slice('pending:'.length));
  }

  /** The latest revision a receipt of this owner named for a server record (what the app knows). */
  knownRevision(owner: string, serverId: string): number | undefined {
    let best: number | undefined;
    for (const receipt of this.receipts.values()) {
      if (receipt.owner !== owner || receipt.serverId !== serverId) continue;
      if (receipt.revision !== undefined && (best === undefined || receipt.revision > best))
        best = receipt.revision;
    }
    return best;
  }

  // ---------------------------------------------------------------- store commits (G3, G6, G7)

  /** Checks a plan about to be applied against the shadow, then applies it. */
  commit(by: Committer, plan: ReplacePlan): void {
    if (by.kind === 'core') this.checkCommit(by, plan);
    this.track(by, plan);
    this.apply(plan, by.holder);
  }

  private checkCommit(by: Committer, plan: ReplacePlan): void {
    this.checkEvidence(by, plan);
    this.checkLedger(by, plan);
    if (plan.reason === 'enqueue') this.checkSuccessorLink(by, plan);
    this.exercise('G6');
    if (plan.owner !== by.owner)
      this.fail('G6', 'plan-owner', `${by.holder} for ${by.owner} wrote a plan of ${plan.owner}`);
    const foreign = (id: unknown, what: string) => {
      const stored = asRaw(this.rows.get(id));
      if (stored !== undefined && typeof stored.owner === 'string' && stored.owner !== by.owner)
        this.fail(
          'G6',
          'row-of-other-owner',
          `${by.holder} for ${by.owner} ${what} ${String(id)} of ${stored.owner} (${plan.reason})`,
        );
    };
    for (const { id } of plan.expected) foreign(id, 'observed');
    for (const id of plan.delete ?? []) foreign(id, 'deleted');
    for (const value of plan.put ?? []) {
      const row = asRaw(value);
      if (row === undefined) continue;
      foreign(row.id, 'overwrote');
      if (row.owner !== by.owner)
        this.fail(
          'G6',
          'row-of-other-owner',
          `${by.holder} for ${by.owner} put a row of ${row.owner}`,
        );
    }
    for (const item of [
      ...(plan.receipts ?? []),
      ...(plan.tombstones ?? []),
      ...(plan.ledger ?? []),
    ])
      if (item.owner !== by.owner)
        this.fail(
          'G6',
          'row-of-other-owner',
          `${by.holder} for ${by.owner} wrote ${plan.reason} data of ${item.owner}`,
        );

    // G3: no deleted row comes back; fences only grow while a row lives.
    for (const value of plan.put ?? []) {
      const row = asRaw(value);
      if (row === undefined) continue;
      this.exercise('G3');
      if (this.gone.has(row.id) && !(plan.delete ?? []).includes(row.id as string))
        this.fail(
          'G3',
          'resurrected',
          `row ${String(row.id)} came back after it was deleted (${plan.reason})`,
        );
      const before = asRaw(this.rows.get(row.id));
      const fenceBefore = claimOf(before)?.fence;
      const fenceAfter = claimOf(row)?.fence;
      if (fenceBefore !== undefined && plan.reason !== 'quarantine') {
        if (fenceAfter === undefined)
          this.fail(
            'G3',
            'fence-removed',
            `${plan.reason} of ${String(row.id)} removed its claim (fence ${fenceBefore})`,
          );
        else if (fenceAfter < fenceBefore)
          this.fail(
            'G3',
            'fence-shrank',
            `${plan.reason} of ${String(row.id)}: fence ${fenceBefore} → ${fenceAfter}`,
          );
      }
      if (isFuture(before) && !deepEqual(before, row))
        this.fail(
          'G7',
          'future-row-rewritten',
          `${plan.reason} rewrote ${String(row.id)}, a row of format v${String(before!.v)} this bundle must leave alone`,
        );
      // G7: a quarantined corrupt row is never rewritten, except by the app (retry/discard).
      if (before?.blockedCode === 'row_corrupt' && !deepEqual(before, row))
        this.fail(
          'G7',
          'quarantine-rewritten',
          `${plan.reason} rewrote the quarantined row ${String(row.id)}`,
        );
    }
    for (const id of plan.delete ?? []) {
      const before = asRaw(this.rows.get(id));
      if (isFuture(before))
        this.fail(
          'G7',
          'future-row-rewritten',
          `${plan.reason} deleted ${id}, a row of format v${String(before!.v)} this bundle must leave alone`,
        );
      if (before?.blockedCode === 'row_corrupt' && plan.reason !== 'discard')
        this.fail(
          'G7',
          'quarantine-absorbed',
          `${plan.reason} deleted the quarantined row ${id} (its raw value is gone)`,
        );
    }

    if (plan.reason === 'claim') {
      for (const value of plan.put ?? []) {
        const row = asRaw(value)!;
        const before = asRaw(this.rows.get(row.id));
        if (row.state !== 'sending') {
          // Not a claim: a blocked row of the record the claimed row goes past, marked so
          // (§6, §7). The mark is all a claim may change of it.
          const { overtakenBy: _mark, ...rest } = row;
          const { overtakenBy: _was, ...was } = before ?? {};
          if (before?.state !== 'blocked' || !deepEqual(rest, was))
            this.fail(
              'G4',
              'claim-rewrote-another-row',
              `${by.holder}'s claim rewrote ${String(row.id)} (${String(before?.state)}) beyond marking it overtaken${this.why(String(row.id))}`,
            );
          continue;
        }
        this.exercise('G3');
        // Judged by the clock the claim was planned with (its sentAt): a clock may step between.
        const plannedAt = typeof row.sentAt === 'number' ? row.sentAt : by.now;
        if (before !== undefined && liveClaim(before, plannedAt, this.leaseMs))
          this.fail(
            'G3',
            'live-claim-taken',
            `${by.holder} claimed ${String(row.id)} while ${claimOf(before)?.holderId ?? 'a legacy tab'} held it`,
          );
        const claim = claimOf(row);
        if (claim)
          this.claims.set(`${by.holder}\u0000${String(row.id)}`, {
            fence: claim.fence,
            expiresAt: claim.expiresAt,
          });
        // §6.1: "A row is sent only when every earlier row of its record is settled (deleted,
        // or blocked / held)": the rows its writer read when it made the row were committed first.
        for (const earlier of this.madeAfter.get(String(row.id)) ?? []) {
          const other = asRaw(this.rows.get(earlier));
          if (other === undefined || isFuture(other)) continue;
          if (other.state !== 'queued' && other.state !== 'sending') continue;
          this.fail(
            'G4',
            'sent-before-an-earlier-row',
            `${by.holder} claimed ${String(row.id)} while ${earlier}, made before it in its record, was ${String(other.state)}${this.why(String(row.id))}`,
          );
        }
        const position = (r: Raw) => [Number(r.savedAt), String(r.id)] as const;
        const [at, id] = position(row);
        for (const other of this.recordRows(by.owner, row.collection, row.targetId, row.id)) {
          const [oAt, oId] = position(other);
          if (other.state === 'blocked' || !(oAt < at || (oAt === at && oId < id))) continue;
          this.note(
            String(row.id),
            `claimed by ${by.holder} while the earlier ${oId} (${String(other.state)}${other.successorOf ? '' : ', unlinked'}) of its record waited`,
          );
        }
        if (before && claimOf(before) && claimOf(before)!.holderId !== by.holder)
          this.reach('takeover');
      }
    }
    if (plan.reason === 'settle' || plan.reason === 'conflict') {
      const sent = plan.expected[0];
      const before = asRaw(sent && this.rows.get(sent.id));
      if (sent !== undefined && before !== undefined) {
        this.exercise('G3');
        const claim = claimOf(before);
        const mine = this.claims.get(`${by.holder}\u0000${sent.id}`);
        const onWire = this.onWire.get(`${by.holder}\u0000${sent.id}`);
        if (
          claim === undefined ||
          claim.holderId !== by.holder ||
          mine === undefined ||
          claim.fence !== mine.fence ||
          onWire?.has(claim.fence)
        )
          this.fail(
            'G3',
            'late-answer-applied',
            `${by.holder} settled ${sent.id} (${plan.reason}) without holding its claim (row claim ${claim ? `${claim.holderId}/${claim.fence}` : 'none'})`,
          );
      }
    }
  }

  /** Lineage of edits through tombstones, new edits, retries; G5 bookkeeping. */
  private track(by: Committer, plan: ReplacePlan): void {
    if (plan.reason === 'enqueue' || plan.reason === 'v0-enqueue') {
      const seen = new Set(plan.expected.map((e) => e.id));
      for (const value of plan.put ?? []) {
        const row = asRaw(value);
        if (!row) continue;
        const unseen = this.recordRows(by.owner, row.collection, row.targetId, row.id).filter(
          (other) => !seen.has(String(other.id)) && !(plan.delete ?? []).includes(String(other.id)),
        );
        for (const other of unseen)
          this.note(String(row.id), `enqueued without seeing ${String(other.id)} of its record`);
        // The legacy writer queues by `savedAt` alone: a row it saves before an earlier edit's
        // row (its clock behind a holder's) is its own disorder, not this bundle's.
        const at = [Number(row.savedAt), String(row.id)] as const;
        if (
          plan.reason === 'v0-enqueue' &&
          unseen.some(
            (o) =>
              Number(o.savedAt) > at[0] || (Number(o.savedAt) === at[0] && String(o.id) > at[1]),
          )
        )
          this.legacyReordered.add(`${by.owner}\u0000${recordName(row.targetId)}`);
      }
    }
    this.trackMadeAfter(plan);
    this.reachPrunedAndTies(by, plan);
    if (plan.reason === 'enqueue') {
      for (const value of plan.put ?? []) {
        const before = asRaw(this.rows.get(asRaw(value)?.successorOf));
        const claim = claimOf(before);
        if (before && before.state !== 'sending' && claim && claim.expiresAt > by.now)
          this.reach('successor-of-expired-claim');
      }
    }
    if (plan.reason === 'settle') {
      for (const id of plan.delete ?? []) {
        const create = asRaw(this.rows.get(id));
        if (create?.kind !== 'create') continue;
        const seen = new Set([...plan.expected.map((e) => e.id), ...(plan.delete ?? [])]);
        const orphans = this.recordRows(by.owner, create.collection, `pending:${id}`).filter(
          (r) => !seen.has(String(r.id)),
        );
        if (orphans.length > 0) this.reach('ack-left-an-intent-behind');
      }
    }
    const newId =
      plan.reason === 'enqueue'
        ? plan.absent?.receipts?.[0]
        : plan.reason === 'v0-enqueue'
          ? (asRaw(plan.put?.[0])?.id as string | undefined)
          : undefined;
    if (newId !== undefined) this.register(newId, plan);
    for (const value of plan.put ?? []) {
      const row = asRaw(value);
      const request = asRaw(row?.request);
      if (row && typeof row.id === 'string' && request && typeof request.requestId === 'string')
        this.keyRow.set(request.requestId, row.id);
    }
    for (const tomb of plan.tombstones ?? []) {
      if (tomb.into !== undefined) {
        const into = this.carriedBy(tomb.into);
        for (const edit of this.carriedBy(tomb.id)) into.add(edit);
        // What explains a row explains what it became.
        for (const line of this.notes.get(tomb.id) ?? []) this.note(tomb.into, line);
      }
      if (tomb.reason === 'coalesced') {
        const before = asRaw(this.rows.get(tomb.id));
        if (before) {
          const attempted =
            before.sentAt !== undefined ||
            claimOf(before) !== undefined ||
            asRaw(before.evidence)?.attemptCount;
          const code = (before.blockedCode ??
            asRaw(before.evidence)?.lastErrorCode ??
            '') as string;
          const others = plan.expected
            .filter((e) => e.id !== tomb.id && e.row !== null)
            .some((e) => {
              const r = asRaw(e.row);
              return r !== undefined && liveClaim(r, by.now, this.leaseMs);
            });
          const what = `${String(before.kind)} ${String(before.state)}${code ? `/${code}` : ''}${attempted ? ' attempted' : ''}${others ? ' beside a row in flight' : ''}`;
          this.absorbed.set(tomb.id, what);
          if (tomb.into !== undefined) this.note(tomb.into, `merged ${tomb.id}: ${what}`);
          if (attempted) this.reach('merge-of-attempted-row');
        }
      }
      if (tomb.reason === 'superseded' && tomb.into !== undefined) {
        this.exercise('G5');
        if (this.superseded.has(tomb.id))
          this.fail(
            'G5',
            'superseded-twice',
            `${tomb.id} got a second conflict successor ${tomb.into}`,
          );
        // A retry after a newer edit was applied meets it through the server's own answer too
        // (§6.1): no successor is written from a receipt.
        if (!this.conflictAnswers.has(tomb.id))
          this.fail(
            'G5',
            'successor-without-conflict',
            `${tomb.id} was superseded by ${tomb.into} without a 412 answer`,
          );
        this.superseded.set(tomb.id, tomb.into);
        const chain = (this.chain.get(tomb.id) ?? 0) + 1;
        this.chain.set(tomb.into, chain);
        if (chain > 8) this.reach('conflict-chain-over-8');
        for (const edit of this.carriedBy(tomb.id)) this.conflicted.add(edit);
        this.reach('conflict-successor');
      }
      if (tomb.reason === 'cancelled') {
        const before = asRaw(this.rows.get(tomb.id));
        if (before) {
          const code = (before.blockedCode ??
            asRaw(before.evidence)?.lastErrorCode ??
            '') as string;
          const attempted = before.sentAt !== undefined || claimOf(before) !== undefined;
          this.note(
            tomb.id,
            `cancelled as ${String(before.kind)} ${String(before.state)}${code ? `/${code}` : ''}${attempted ? ' attempted' : ''}`,
          );
        }
        for (const edit of this.carriedBy(tomb.id)) {
          this.cancelled.add(edit);
          this.cancelledIn.set(edit, tomb.id);
        }
      }
      if (tomb.reason === 'discarded')
        for (const edit of this.carriedBy(tomb.id)) this.discarded.add(edit);
    }
    if (plan.reason === 'retry') {
      // A retried row goes when the app says: what it carries may land after newer edits of its
      // record, through the revision check (G4, checked where it lands).
      // SPEC §6.1: "`retry` is the app's new decision: the retried row takes a new `seq` at the
      // retry (it is ordered as made then)".
      // In the order the plan gives them their `seq`. A row put back exactly as it was is only
      // given its place among the sequenced rows of its record (a legacy row the retry's read
      // found, §6.1) and keeps the place its edit was made in: the app retried the row it
      // changed, and only that one is made anew.
      const put = new Map((plan.put ?? []).map((value) => [asRaw(value)?.id, value]));
      for (const rowId of plan.seq ?? []) {
        const value = put.get(rowId);
        const row = asRaw(value);
        if (row === undefined || deepEqual(value, this.rows.get(rowId))) continue;
        const reissue = asRaw(row.evidence)?.lastErrorCode === 'retention_exceeded';
        // The edits it carries move together, in the order they had among themselves.
        const carried = [...this.carriedBy(String(rowId))].sort(
          (a, b) => (this.edits.get(a)?.made ?? 0) - (this.edits.get(b)?.made ?? 0),
        );
        for (const id of carried) {
          this.retried.add(id);
          if (reissue) this.reissued.add(id);
          const edit = this.edits.get(id);
          // An edit the server applied under the key the row still carries (its 2xx answer's
          // handling failed) is answered from the ledger: its effect stays where it happened.
          // A create stays first of its record, with the edits merged into it: the edits made
          // through `pending:<C>` follow it whenever it goes (§8).
          // A re-issued edit is applied anew, as made at the retry, whatever its old key did;
          // so is one whose key now is a re-issue's that was never applied.
          const key = asRaw(row.request)?.requestId;
          const stays =
            this.appliedBy.has(id) && !reissue && typeof key === 'string' && this.applied.has(key);
          if (edit === undefined || stays || row.kind === 'create') continue;
          const retries = this.retries.get(id) ?? [];
          retries.push({ made: edit.made, landings: this.#landings });
          this.retries.set(id, retries);
          edit.made = ++this.#made;
        }
      }
    }
    if (plan.reason === 'quarantine') this.reach('quarantine');
    if (by.kind === 'v0' && plan.reason === 'v0-settle')
      for (const id of plan.delete ?? []) this.legacySettled.add(String(id));
    if (by.kind === 'corrupt')
      for (const value of plan.put ?? [])
        this.corrupt.set(asRaw(value)?.id, { owner: by.owner, value: structuredClone(value) });
  }

  /**
   * Reach (SPEC §20): an edit of `pending:<C>` enqueued, or an intent of C converted, after C's
   * receipt was pruned; and rows of one record whose clock readings (`savedAt`, `sentAt`) tie
   * within a millisecond across two writers.
   */
  private reachPrunedAndTies(by: Committer, plan: ReplacePlan): void {
    const deleted = new Set((plan.delete ?? []).map(String));
    for (const value of plan.put ?? []) {
      const row = asRaw(value);
      if (row === undefined || typeof row.id !== 'string') continue;
      const target = String(row.targetId);
      // As the app made it: the engine may have named the record by its server id at once.
      const made = this.drafts.get(row.id)?.targetId ?? target;
      if (plan.reason === 'enqueue' && made.startsWith('pending:')) {
        if (this.createReceiptPruned(made.slice('pending:'.length)))
          this.reach('edit-after-receipt-pruned');
      }
      // A converted intent: it was written for pending:<C> and now names the server id.
      for (const id of deleted) {
        const before = asRaw(this.rows.get(id));
        const was = String(before?.targetId ?? '');
        if (
          before?.request === undefined &&
          was.startsWith('pending:') &&
          !target.startsWith('pending:') &&
          [...this.carriedBy(id)].some((e) => this.carriedBy(row.id as string).has(e)) &&
          this.createReceiptPruned(was.slice('pending:'.length))
        )
          this.reach('intent-converted-after-receipt-pruned');
      }
      const before = asRaw(this.rows.get(row.id));
      const fresh = before === undefined;
      const claimed =
        plan.reason === 'claim' && row.state === 'sending' && typeof row.sentAt === 'number';
      if (!fresh && !claimed) continue;
      for (const other of this.recordRows(by.owner, row.collection, row.targetId, row.id)) {
        const writer = this.writer.get(other.id);
        if (writer === undefined || writer === by.holder) continue;
        if (fresh && other.savedAt === row.savedAt) this.reach('clock-tie');
        if (claimed && other.sentAt === row.sentAt) this.reach('clock-tie');
      }
    }
  }

  /** What each new row's writer knew to be earlier in its record (§6.1), for the claim check. */
  private trackMadeAfter(plan: ReplacePlan): void {
    const deleted = new Set<unknown>(plan.delete ?? []);
    if (plan.reason === 'conflict') {
      // The successor carries its original's edit and place.
      for (const value of plan.put ?? []) {
        const row = asRaw(value);
        const original = row?.successorOf;
        if (row === undefined || typeof original !== 'string' || !deleted.has(original)) continue;
        this.madeAfter.set(String(row.id), new Set(this.madeAfter.get(original)));
        for (const set of this.madeAfter.values())
          if (set.delete(original)) set.add(String(row.id));
      }
      return;
    }
    if (plan.reason !== 'enqueue' && plan.reason !== 'retry') return;
    for (const value of plan.put ?? []) {
      const row = asRaw(value);
      if (row === undefined) continue;
      const id = String(row.id);
      const fresh = !this.rows.has(id);
      const retried = plan.reason === 'retry' && asRaw(this.rows.get(id))?.state === 'blocked';
      if (!fresh && !retried) continue;
      const earlier = new Set<string>();
      this.madeAfter.set(id, earlier);
      // Made at the retry: the rows made before it are earlier now (§6.1)...
      if (retried) for (const [other, set] of this.madeAfter) if (other !== id) set.delete(id);
      // ...but a create stays first of its record (its intents follow it, §8), and an edit the
      // server already applied is answered from the ledger where it landed.
      const carried = [...this.carriedBy(id)];
      if (retried && (row.kind === 'create' || carried.some((e) => this.appliedBy.has(e))))
        continue;
      for (const { id: other } of plan.expected) {
        if (typeof other !== 'string' || other === id || deleted.has(other)) continue;
        const seen = asRaw(this.rows.get(other));
        if (seen?.owner === row.owner && seen?.collection === row.collection) earlier.add(other);
      }
      for (const gone of deleted) {
        for (const o of this.madeAfter.get(String(gone)) ?? []) earlier.add(o);
        earlier.delete(String(gone));
      }
    }
  }

  private register(id: string, plan: ReplacePlan): void {
    let draft = this.drafts.get(id);
    const restored = plan.ledger?.find((entry) => entry.restoredBy?.rowId === id);
    if (restored) {
      const payload = this.restorePayload(restored);
      draft = {
        id,
        owner: plan.owner,
        collection: restored.collection,
        kind: 'update',
        targetId: restored.targetId,
        payload: asRaw(payload) as Record<string, Json> | undefined,
        baseRevision: restored.finalRevision,
        by: 'restore',
      };
    }
    if (draft === undefined) return;
    const known = this.edits.get(id);
    if (known !== undefined) {
      // A page's request the plugin queued before it ever left (§22) takes its place as the
      // row it became is written: that is where the plugin orders it behind what waits of its
      // URL, and an app's `retry` committed before it is earlier (§6.1). One that left holds
      // the place of its request, which may have landed.
      if (known.by === 'page' && !this.pageLeft.has(id) && !this.pageQueued.has(id)) {
        this.pageQueued.add(id);
        const place = ++this.#made;
        this.edits.set(id, { ...known, made: place });
        // The requests of its URL the page made after it keep their turn behind it (§22 "a
        // request of a URL never leaves while an earlier request of that URL is on the wire or
        // queued"), in the order they were made; one the app retried is ordered at the retry.
        const url = this.directRecord.get(id);
        const later = [...this.edits.values()]
          .filter(
            (e) =>
              e.by === 'page' &&
              e.id !== id &&
              !this.retried.has(e.id) &&
              this.directRecord.get(e.id) === url &&
              e.made > known.made &&
              e.made < place,
          )
          .sort((a, b) => a.made - b.made);
        later.forEach((e, i) => {
          this.edits.set(e.id, { ...e, made: place + (i + 1) / 1000 });
        });
      }
      return;
    }
    this.edits.set(id, { ...draft, made: ++this.#made });
    if ((plan.put ?? []).some((value) => asRaw(value)?.id === id)) this.carriedBy(id).add(id);
    if ((plan.tombstones ?? []).some((t) => t.id === id && t.reason === 'cancelled'))
      this.cancelled.add(id);
  }

  private apply(plan: ReplacePlan, writer?: string): void {
    for (const id of plan.delete ?? []) {
      this.rows.delete(id);
      this.gone.add(id);
    }
    const fresh = assignSeq(plan, this.seqCounters.get(plan.owner) ?? 0);
    this.seqCounters.set(plan.owner, fresh.counter);
    for (const value of fresh.put) {
      const id = asRaw(value)?.id;
      if (writer !== undefined) this.writer.set(id, writer);
      this.rows.set(id, structuredClone(value));
      this.gone.delete(id);
    }
    for (const receipt of plan.receipts ?? []) this.receipts.set(receipt.requestId, receipt);
    for (const tomb of plan.tombstones ?? []) this.tombstones.set(tomb.id, tomb);
    for (const id of plan.ledgerDelete ?? []) this.ledger.delete(id);
    for (const entry of plan.ledger ?? []) this.ledger.set(entry.successorId, entry);
  }

  // ---------------------------------------------------------------- the wire (G3, G4, G5)

  /** A request leaves a holder: it must hold a live claim on its row (G3), be durable (G5), alone for its record (G4). */
  leave(req: WireRequest, holderNow: number, now: number): void {
    this.wire.push(req);
    if (req.key === undefined) return;
    const rowId = this.keyRow.get(req.key);
    req.rowId = rowId;
    const row = asRaw(rowId === undefined ? undefined : this.rows.get(rowId));
    if (row) req.record = recordKey(req.owner, String(row.collection), String(row.targetId));
    if (req.direct) req.record = this.directRecord.get(req.key);
    if (!req.legacy && !req.direct) {
      this.exercise('G3');
      this.exercise('G5');
      const claim = claimOf(row);
      const mine = rowId === undefined ? undefined : this.claims.get(`${req.holder}\u0000${rowId}`);
      if (row === undefined) {
        this.fail(
          'G5',
          'sent-before-durable',
          `${req.holder} sent ${req.key}, which is not in the outbox`,
        );
        return;
      }
      // G6 (SPEC §13): a row goes only with its own owner's credentials, never with none or
      // another owner's.
      this.exercise('G6');
      if (req.owner !== row.owner)
        this.fail(
          'G6',
          'sent-with-other-credentials',
          `${req.holder} sent ${req.key} of ${String(row.owner)} with ${req.owner === '' ? 'no credentials' : `${req.owner}'s credentials`}`,
        );
      if (
        claim === undefined ||
        mine === undefined ||
        claim.holderId !== req.holder ||
        claim.fence !== mine.fence
      ) {
        this.fail(
          'G3',
          'sent-without-claim',
          `${req.holder} sent ${req.key} without holding its claim (row claim ${claim ? `${claim.holderId}/${claim.fence}` : 'none'})`,
        );
        return;
      }
      if (holderNow >= claim.expiresAt) {
        this.fail(
          'G3',
          'sent-after-lease',
          `${req.holder} sent ${req.key} ${holderNow - claim.expiresAt} ms after its claim expired`,
        );
        return;
      }
      req.fence = claim.fence;
      req.deadline = now + (claim.expiresAt - holderNow);
      const key = `${req.holder}\u0000${rowId}`;
      const set = this.onWire.get(key) ?? new Set();
      set.add(claim.fence);
      this.onWire.set(key, set);
      const edits = this.carriedBy(rowId);
      if ([...edits].some((e) => this.conflicted.has(e)) && row.conflict === undefined)
        this.fail(
          'G5',
          'overwrite-without-evidence',
          `${req.key} resends a conflicted edit without its conflict evidence${this.why(rowId)}`,
        );
    }
    if (req.legacy && row) {
      if (typeof row.sentAt === 'number') req.sentAt = row.sentAt;
      const mine = [...this.carriedBy(rowId)].map((e) => this.edits.get(e)?.made ?? -1);
      const newest = Math.max(-1, ...mine);
      for (const other of this.recordRows(req.owner, row.collection, row.targetId, rowId)) {
        const earlier = [...this.carriedBy(String(other.id))].some(
          (e) => (this.edits.get(e)?.made ?? Infinity) < newest && !this.appliedBy.has(e),
        );
        if (earlier) {
          this.legacyReordered.add(`${req.owner}\u0000${recordName(row.targetId)}`);
          this.reach('legacy-sent-out-of-order');
        }
      }
    }
    // G4: never two requests of one record on the wire at once (unless the other one already applied).
    // The legacy tab's own sends of a record it reordered are its doing; this bundle's are judged.
    const reordered =
      row !== undefined &&
      this.legacyReordered.has(`${req.owner}\u0000${recordName(row.targetId)}`);
    if (reordered && req.legacy) return;
    this.exercise('G4');
    // A copy of a key the server already applied, or refused as outdated or for what its bytes
    // say, changes nothing, whenever it lands: it is on the wire only until the server processed
    // that key.
    const spent = (key: string | undefined) =>
      key !== undefined &&
      (this.applied.has(key) || this.outdated.has(key) || this.refused.has(key));
    if (spent(req.key)) return;
    for (const other of this.wire) {
      if (other === req || other.done || other.record !== req.record || other.key === req.key)
        continue;
      if (spent(other.key)) continue;
      // A request the server has processed lands nothing more, whoever sent it; only its answer
      // still travels, and a late answer to a holder that lost its claim changes nothing (G3).
      // A legacy tab has no lease and no abort: its request is on the wire until the server
      // processed it, however long that takes. Yet a holder counts it in flight only for the
      // lease after the `sentAt` its tab wrote, by the holder's own clock (§4 rule 2, §17).
      if (other.processed) continue;
      // A page's request its killed worker let through: the page saw the error, and the worker
      // that took over never knew of it (SPEC §22 keeps order within one worker's life).
      if (other.direct && other.orphaned) continue;
      const lapsed =
        other.legacy &&
        !req.legacy &&
        other.sentAt !== undefined &&
        holderNow - other.sentAt >= this.leaseMs;
      if (lapsed) continue;
      this.fail(
        'G4',
        'two-on-the-wire',
        `${req.holder} sent ${req.key} while ${other.holder}'s ${other.key} of the same record was on the wire${this.why(rowId)}${this.why(other.rowId)}`,
      );
    }
  }

  /**
   * Nobody reads the request's answer any more (its holder died, or aborted it after its bytes
   * left): its holder may act on the row as it would after any abort, while the request itself
   * stays on the wire until it lands (G4).
   */
  orphaned(req: WireRequest): void {
    req.orphaned = true;
    if (req.rowId !== undefined && req.fence !== undefined)
      this.onWire.get(`${req.holder}\u0000${req.rowId}`)?.delete(req.fence);
  }

  /** The request's answer arrived, or it was aborted. */
  arrived(req: WireRequest): void {
    req.done = true;
    if (req.rowId !== undefined && req.fence !== undefined)
      this.onWire.get(`${req.holder}\u0000${req.rowId}`)?.delete(req.fence);
  }

  /** After every step: no request of a holder is on the wire past its claim (by its own clock). */
  afterStep(now: number): void {
    for (const req of this.wire) {
      // An orphaned request has nobody left to abort it: it is watched on the wire (G4), not here.
      if (req.done || req.deadline === undefined || req.orphaned) continue;
      if (now > req.deadline)
        this.fail(
          'G3',
          'on-wire-after-lease',
          `${req.holder}'s ${req.key} was still on the wire ${now - req.deadline} ms after its claim expired`,
        );
    }
    if (this.wire.length > 64) {
      const live = this.wire.filter((r) => !r.done);
      this.wire.length = 0;
      this.wire.push(...live);
    }
  }

  /**
   * Keys a legacy v0 tab resent after the server's ledger forgot them: SPEC §17 "an older bundle
   * that sends from the page ... knows nothing of claim, writer, evidence" — it predates §15's
   * "a key is only safe while the server remembers it", so its second effect is not this
   * bundle's (G2 holds for what v1 holders send).
   */
  readonly legacyPastRetention = new Set<string>();

  /** The server applied a write (G2, G4); `legacy` when a legacy tab's request carried it. */
  effect(effect: Effect, legacy = false): void {
    this.exercise('G2');
    const again = this.applied.has(effect.key);
    if (again && !this.legacyPastRetention.has(effect.key))
      this.fail('G2', 'key-applied-twice', `${effect.key} has two effects`);
    // Its second landing is placed where the legacy tab sent it, as its first was placed by
    // whoever sent that: the tab predates §15 (above), so the record's order is its doing too.
    if (again && legacy) this.legacyReordered.add(`${effect.owner}\u0000${effect.id}`);
    this.applied.set(effect.key, effect);
    const rowId = this.keyRow.get(effect.key);
    const edits = this.carriedBy(rowId);
    // A resend of a conflicted edit: it overwrote what the conflict found (G5). An effect before
    // the conflict (an edit applied, its answer lost, merged later into a conflicted row) is not.
    if ([...edits].some((e) => this.conflicted.has(e))) this.resends.add(effect.key);
    for (const id of edits) {
      const first = this.appliedBy.get(id);
      if (first !== undefined && first !== effect.key && !this.reissued.has(id))
        this.fail(
          'G2',
          'intent-applied-twice',
          `edit ${id} was applied under ${first} and again under ${effect.key}${this.why(rowId)}`,
        );
      this.appliedBy.set(id, effect.key);
      const edit = this.edits.get(id);
      if (edit?.kind === 'create' && effect.method === 'POST')
        this.createdRecord.set(id, effect.id);
    }
    const landing = ++this.#landings;
    // Where an edit lands again — re-issued past retention under a new key (§15), or its key
    // resent by a legacy tab after the server forgot it — the server holds its latest landing.
    for (const id of edits) {
      this.landed.set(id, landing);
      this.madeAtLanding.set(id, this.edits.get(id)?.made ?? -1);
    }
    if (legacy) for (const id of edits) this.legacyApplied.add(id);
    // G4: a record's effects follow the order its edits were made. Where a legacy tab reordered
    // the record, its edits land where it sent them: this bundle's are judged among themselves.
    const reordered = this.legacyReordered.has(`${effect.owner}\u0000${effect.id}`);
    const record = `${effect.owner}\u0000${effect.id}${reordered ? '\u0000v1' : ''}`;
    const judged = reordered ? [...edits].filter((id) => !this.legacyPlaced(id)) : [...edits];
    if (judged.length === 0) return;
    this.exercise('G4');
    let position = -1;
    for (const id of judged) position = Math.max(position, this.edits.get(id)?.made ?? -1);
    if (position < 0) return;
    const last = this.lastPosition.get(record) ?? -1;
    const lastRow = this.lastApplied.get(record);
    const carried = judged.flatMap((id) => this.edits.get(id) ?? []);
    // Retried edits a newer one overtook, alone or merged into an edit made after that one. SPEC
    // §6.1: the retried row "meets any newer edit already applied through the conflict rule" —
    // newer than where the edit stood at a retry, and applied before that retry; one made before
    // a retry and applied after it is older than the retried row, which is "ordered as made
    // then", and goes before it as any older edit does. Once met at a retry, it stays met.
    const appliedBy = (at: number) =>
      Math.max(-1, ...(this.positions.get(record) ?? []).flatMap(([l, p]) => (l <= at ? [p] : [])));
    const overtaken = carried.filter((e) => {
      if (!this.retried.has(e.id)) return false;
      const retries = this.retries.get(e.id);
      if (retries === undefined) return e.made < last;
      return retries.some(({ made, landings }) => made < appliedBy(landings));
    });
    // A retried edit landed after a newer edit the server applied before the retry (§6.1).
    if (overtaken.length > 0) this.reach('retry-after-newer-edit');
    if (overtaken.length > 0 && (position < last || overtaken.length < carried.length)) {
      // The app retried an edit a newer one overtook: it lands over it, but only through the
      // revision check and the conflict rule, with evidence — never silently (G4). A request
      // with no base revision has nothing for the server to check: a merge keeps the oldest
      // row's (§6), and a resend of an attempt whose outcome is unknown keeps its bytes (§9).
      const row = asRaw(rowId === undefined ? undefined : this.rows.get(rowId));
      const unchecked =
        row === undefined
          ? overtaken.every((e) => e.baseRevision == null)
          : row.baseRevision == null;
      if (row?.conflict === undefined && !unchecked)
        this.fail(
          'G4',
          'retry-silently-overwrote',
          `${effect.key} wrote the retried ${overtaken.map((e) => e.id).join(',')} over a newer edit of ${effect.id} without a revision conflict`,
        );
      // They now sit just after the newest edit applied before them, and still before every
      // edit that was queued behind them, or merged into them.
      let step = 0;
      for (const edit of overtaken.sort((x, y) => x.made - y.made))
        edit.made = Math.max(edit.made, last + ++step / 1000);
      position = Math.max(...carried.map((e) => e.made));
      for (const edit of carried) this.madeAtLanding.set(edit.id, edit.made);
    }
    if (position < last)
      this.fail(
        'G4',
        'effects-out-of-order',
        `${effect.key} (${[...edits].join(',')}) landed on ${effect.id} after ${lastRow ?? 'a later edit'}${this.why(rowId)}${this.why(lastRow)}`,
      );
    if (position >= last) {
      this.lastPosition.set(record, position);
      this.positions.set(record, [...(this.positions.get(record) ?? []), [landing, position]]);
      if (rowId !== undefined) this.lastApplied.set(record, rowId);
    }
  }

  /**
   * The fold order of a record a legacy tab reordered: this bundle's edits in the order they
   * were made, each edit the legacy tab placed (its own, or one it sent) where it landed — after every edit of this bundle applied before
   * it, and among the edits it was merged with by when it was made.
   */
  private landedPlaces(edits: Edit[]): Map<Edit, number> {
    const ours = edits.filter((e) => !this.legacyPlaced(e.id));
    const place = new Map<Edit, number>();
    for (const edit of edits) {
      if (!this.legacyPlaced(edit.id)) {
        place.set(edit, this.madeAsLanded(edit));
        continue;
      }
      const at = this.landed.get(edit.id) ?? 0;
      const before = ours.filter((e) => (this.landed.get(e.id) ?? Infinity) < at);
      const after = Math.max(-1, ...before.map((e) => this.madeAsLanded(e)));
      // Merged with edits of this bundle, it takes its place among them by when it was made:
      // the merge is this bundle's, and folds in that order (§6).
      const merged = ours.some((e) => this.landed.get(e.id) === at);
      place.set(edit, merged && edit.made > after ? edit.made : after + 0.5 + at / 1e9);
    }
    return place;
  }

  /**
   * When an edit counts as made for the order its record's value folds in: a re-issued edit
   * (§15) as made at the retry only if its new key landed, else where its old key landed.
   */
  private madeAsLanded(edit: Edit): number {
    return this.reissued.has(edit.id) ? this.madeAtLanding.get(edit.id)! : edit.made;
  }

  /** Whether a legacy tab decided where an edit landed: its own edit, or one it sent. */
  private legacyPlaced(editId: string): boolean {
    return (
      this.edits.get(editId)?.by === 'v0' ||
      this.legacyApplied.has(editId) ||
      this.pagePlaced.has(editId)
    );
  }

  /** What was merged into a row, for a failure's detail. */
  why(rowId: string | undefined): string {
    if (rowId === undefined) return '';
    const parts = this.notes.get(rowId) ?? [];
    return parts.length ? ` [${rowId}: ${parts.join('; ')}]` : '';
  }

  // ---------------------------------------------------------------- quiescence (G1, G2, G4, G5, G7)

  /**
   * The checks of a drained outbox. `serverRecord` gives a record's final state; `remaining`
   * says whether a live row may stay (blocked with a reason).
   */
  quiescence(server: {
    record(id: string): { data: Record<string, Json>; deleted: boolean; owner: string } | undefined;
  }): void {
    const live = new Map<string, Raw>();
    for (const [id, value] of this.rows) {
      const row = asRaw(value);
      if (row && typeof id === 'string') live.set(id, row);
    }
    // Which live rows carry each edit.
    const carriers = new Map<string, string[]>();
    for (const id of live.keys())
      for (const edit of this.carriedBy(id))
        carriers.set(edit, [...(carriers.get(edit) ?? []), id]);

    // G1: every edit ends applied, coalesced into something that ended, quarantined, cancelled or discarded.
    for (const edit of this.edits.values()) {
      this.exercise('G1');
      const rows = carriers.get(edit.id) ?? [];
      for (const id of rows) {
        const row = live.get(id)!;
        if (!this.mayRemain(row))
          this.fail(
            'G1',
            'left-undrained',
            `edit ${edit.id} still waits in ${id} (${String(row.state)}) after the drain`,
          );
      }
      const key = this.appliedBy.get(edit.id);
      // The page got this request's answer, or its error, and nothing was queued (§22).
      if (rows.length === 0 && this.pageAnswered.has(edit.id)) continue;
      if (key !== undefined) {
        const rowId = this.keyRow.get(key);
        const discarded = this.discarded.has(edit.id);
        if (this.cancelled.has(edit.id))
          this.fail(
            'G2',
            'cancelled-but-applied',
            `edit ${edit.id} was cancelled although ${key} applied it${this.why(this.cancelledIn.get(edit.id))}`,
          );
        if (
          rows.length === 0 &&
          !discarded &&
          !this.receipts.has(key) &&
          !(rowId && this.legacySettled.has(rowId))
        )
          this.fail(
            'G1',
            'applied-without-receipt',
            `edit ${edit.id} was applied under ${key} but no receipt was kept`,
          );
        continue;
      }
      if (rows.length > 0 || this.cancelled.has(edit.id) || this.discarded.has(edit.id)) continue;
      this.fail(
        'G1',
        'intent-lost',
        `edit ${edit.id} (${edit.kind} ${edit.targetId}) vanished: no row, effect, cancel or discard`,
      );
    }

    // G5: every applied resend of a conflicted edit left exactly one ledger entry.
    for (const [key] of this.applied) {
      const rowId = this.keyRow.get(key);
      if (!this.resends.has(key) || this.superseded.has(key)) continue;
      // Every overwrite has exactly one ledger entry (§20): whoever sent the resend (a legacy tab
      // too) and whatever became of its row (discarded after its handler failed on the answer).
      // SPEC §15: "when the server no longer knows the key the row is blocked with
      // retention_exceeded and its evidence kept": the evidence stays in the row, since no
      // answer ever said the resend was applied.
      const kept = asRaw(rowId === undefined ? undefined : this.rows.get(rowId));
      if (kept?.state === 'blocked' && kept.blockedCode === 'retention_exceeded' && kept.conflict)
        continue;
      this.exercise('G5');
      // Written once, with the resend (checkLedger judges every later write of it).
      if (!this.ledger.has(rowId!))
        this.fail(
          'G5',
          'overwrite-without-ledger',
          `${key} overwrote a conflicting version and the ledger has no entry for it${this.why(rowId)}`,
        );
    }

    // G5: and none for a resend the server never applied, once nothing can send it any more.
    const appliedRows = new Set([...this.applied.keys()].map((key) => this.keyRow.get(key)));
    for (const [id, entry] of this.ledger) {
      if (!entry.unsettled || this.rows.has(id) || appliedRows.has(id)) continue;
      this.exercise('G5');
      // What the engine cannot know: a row discarded after an answer that may have followed an
      // effect (§6), or re-issued past the server's retention (§15) and then superseded, whose
      // old key may have been applied.
      const tomb = this.tombstones.get(id);
      if (tomb?.reason === 'discarded') continue;
      if ([...this.carriedBy(id)].some((edit) => this.reissued.has(edit))) continue;
      this.fail(
        'G5',
        'ledger-without-overwrite',
        `the ledger keeps an entry for ${id}, ${tomb ? `${tomb.reason} without` : 'gone without'} ever being applied${this.why(id)}`,
      );
    }

    // G4: each record's final value is the fold of its applied edits in the order they were made.
    const byRecord = new Map<string, Edit[]>();
    for (const edit of this.edits.values()) {
      if (!this.appliedBy.has(edit.id)) continue;
      const record = this.recordOf(edit);
      if (record === undefined) continue;
      const list = byRecord.get(`${edit.owner}\u0000${record}`) ?? [];
      list.push(edit);
      byRecord.set(`${edit.owner}\u0000${record}`, list);
    }
    for (const [key, edits] of byRecord) {
      const id = key.split('\u0000')[1]!;
      const notes = [...new Set(edits.map((e) => this.keyRow.get(this.appliedBy.get(e.id)!)))]
        .map((r) => this.why(r))
        .join('');
      const found = server.record(id);
      if (found === undefined || found.owner !== edits[0]!.owner) continue;
      this.exercise('G4');
      const place = this.legacyReordered.has(key) ? this.landedPlaces(edits) : undefined;
      edits.sort((a, b) =>
        place ? place.get(a)! - place.get(b)! : this.madeAsLanded(a) - this.madeAsLanded(b),
      );
      const expected: Record<string, Json> = {};
      let deleted = false;
      for (const edit of edits) {
        if (edit.kind === 'delete') deleted = true;
        for (const field of APP_FIELDS)
          if (edit.payload && field in edit.payload) expected[field] = edit.payload[field]!;
      }
      if (deleted !== found.deleted) {
        this.fail(
          'G4',
          'final-value',
          `${id} is ${found.deleted ? 'deleted' : 'alive'} on the server, the last applied edit says ${deleted ? 'deleted' : 'alive'}${notes}`,
        );
        continue;
      }
      if (deleted) continue;
      for (const field of APP_FIELDS) {
        if (!(field in expected)) continue;
        if (!deepEqual(found.data[field], expected[field]))
          this.fail(
            'G4',
            'final-value',
            `${id}.${field} is ${JSON.stringify(found.data[field])} on the server, the last applied edit set ${JSON.stringify(expected[field])}${notes}`,
          );
      }
    }

    // G7: every corrupt value stays quarantined with its raw value, unless the app discarded it.
    for (const [id, { value }] of this.corrupt) {
      this.exercise('G7');
      // A value under a key that is not a string is quarantined, and discarded, by its key's name.
      const name = typeof id === 'string' ? id : keyName(id);
      if (this.tombstones.get(name)?.reason === 'discarded') continue;
      if (isFuture(asRaw(value))) {
        if (!deepEqual(this.rows.get(id), value))
          this.fail(
            'G7',
            'future-row-rewritten',
            `${String(id)}, a row of a newer format, was not left as it was written`,
          );
        continue;
      }
      const kept = [...this.rows.values()].some((row) => {
        const r = asRaw(row);
        return r?.state === 'blocked' && r.blockedCode === 'row_corrupt' && deepEqual(r.raw, value);
      });
      if (!kept)
        this.fail(
          'G7',
          'corrupt-not-quarantined',
          `the corrupt value under ${describeKey(id)} is not quarantined with its raw value`,
        );
    }
  }
}
