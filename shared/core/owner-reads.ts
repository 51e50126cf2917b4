import { inspectJson } from '../model/json-bounds.ts';
import type { OutboxStats, RowFilter, RowView } from '../model/page-api.ts';
import type { Observed } from '../model/row.ts';
import { decodeRow, type OutboxRow, type RowStatus } from '../model/row.ts';
import type { ConflictLedgerEntry, RowCursor } from '../model/store.ts';
import { withHistoryExpiry } from '../plan/conflict-ledger.ts';
import { ROW_STATUSES } from '../plan/health.ts';
import { requestOrigin } from '../plan/origin-recovery.ts';
import { rowStatus } from '../plan/row-status.ts';
import type { PredecessorState } from '../plan/select.ts';
import { observeStored } from '../plan/unknown-version.ts';
import type { OwnerApi } from './outbox-api.ts';
import type { OwnerContext } from './owner-context.ts';
import { lookupPredecessors } from './predecessors.ts';

/** The retention published by the server that keeps an entry's history (§15), if known. */
function historyRetention({ deps }: OwnerContext, entry: ConflictLedgerEntry): number | undefined {
  const handler = deps.handlers[entry.collection];
  if (!entry.historyRef || handler?.historyUrl === undefined) return undefined;
  try {
    return deps.retention.get(requestOrigin(handler.historyUrl(entry.historyRef)));
  } catch {
    return undefined;
  }
}

/**
 * The read side of the owner API: rows with their derived status (SPEC §2), counts, receipts and
 * the conflict ledger, all of one owner. `allRows` is for the manual actions, never the page.
 */
export function createOwnerReads(ctx: OwnerContext): Pick<
  OwnerApi,
  'rows' | 'row' | 'stats' | 'viewsOf' | 'receipts' | 'receipt' | 'conflicts'
> & {
  allRows(): Promise<Observed[]>;
} {
  const { store, owner } = ctx;
  const allRows = () => readAllRows(ctx);
  const viewsOf = (rows: OutboxRow[]) => viewsOfRows(ctx, rows);
  const views = (observed: Observed[]) => viewsOf(observed.map(({ row }) => row));

  return {
    allRows,
    viewsOf,
    async rows(filter: RowFilter = {}) {
      // One record: read it through its index, not the whole outbox (live views call this
      // after every committed transaction).
      if (filter.collection !== undefined && filter.targetId !== undefined) {
        const { collection, targetId } = filter;
        const raws = await store.byTarget(owner, collection, targetId);
        const rows = raws.flatMap((raw) => observeStored(decodeRow(raw)) ?? []);
        rows.sort((a, b) => a.row.savedAt - b.row.savedAt || (a.row.id < b.row.id ? -1 : 1));
        return views(rows);
      }
      const all = await views(await allRows());
      return all.filter(
        (view) =>
          (filter.collection === undefined ||
            (view.row as OutboxRow).collection === filter.collection) &&
          (filter.targetId === undefined || (view.row as OutboxRow).targetId === filter.targetId),
      );
    },

    async row(id: string) {
      const raw = await store.get(id, owner);
      const observed = raw === undefined ? undefined : observeStored(decodeRow(raw));
      if (observed === undefined || observed.row.owner !== owner) return undefined;
      const [view] = await views([observed]);
      return view;
    },

    async stats(): Promise<OutboxStats> {
      const all = await views(await allRows());
      const counts = Object.fromEntries(ROW_STATUSES.map((s) => [s, 0])) as Record<
        RowStatus,
        number
      >;
      for (const view of all) counts[view.status]++;
      const oldest = all.reduce<number | null>((min, v) => {
        const at = (v.row as OutboxRow).savedAt;
        return min === null || at < min ? at : min;
      }, null);
      return { counts, total: all.length, oldestSavedAt: oldest };
    },

    async conflicts(options = {}) {
      const { deps } = ctx;
      const entries = await store.listConflicts(owner, options.limit ?? 50);
      const judge = () => {
        const now = deps.clock.now();
        return entries.map((entry) =>
          withHistoryExpiry(entry, { now, retentionMs: historyRetention(ctx, entry) }),
        );
      };
      const judged = judge();
      // An entry that looks expired by what this holder knows may not be under a longer
      // retention kept in `meta` (a restarted worker): read it before saying so.
      if (!judged.some((entry) => entry.historyExpired)) return judged;
      const loading = deps.retention.load();
      if (loading === undefined) return judged;
      await loading;
      return judge();
    },

    async receipts(options = {}) {
      return store.listReceipts(owner, options.limit ?? 50);
    },

    async receipt(requestId) {
      const receipt = await store.getReceipt(requestId, owner);
      return receipt?.owner === owner ? receipt : undefined;
    },
  };
}

/** Every row of the owner in queue order, readable or of an unknown version; corrupt ones left out. */
async function readAllRows({ store, owner }: OwnerContext): Promise<Observed[]> {
  const rows: Observed[] = [];
  let after: RowCursor | undefined;
  for (;;) {
    const batch = await store.scan(owner, { after, limit: 500 });
    for (const raw of batch) {
      const observed = observeStored(decodeRow(raw));
      if (observed !== undefined) rows.push(observed);
    }
    if (batch.length < 500) return rows;
    const last = batch[batch.length - 1] as RowCursor;
    after = { savedAt: last.savedAt, id: last.id };
  }
}

/** How deep a quarantined raw value may nest and still be handed to the page. */
const MAX_VIEW_RAW_DEPTH = 256;

/**
 * A row as the page receives it (G7): a quarantined value nested too deep to cross to the page
 * (a browser may fail to clone it, or hand nothing back) is left out of the view, which says so
 * and how to read it; the store keeps it whole, and `discard` removes it.
 */
function forThePage(row: OutboxRow): OutboxRow {
  const { raw } = row as { raw?: unknown };
  if (raw === undefined || typeof raw !== 'object' || raw === null) return row;
  if (inspectJson(raw, { maxDepth: MAX_VIEW_RAW_DEPTH })?.code !== 'value_too_deep') return row;
  const { raw: _raw, ...rest } = row as OutboxRow & { raw?: unknown };
  return {
    ...rest,
    rawOmitted: `The raw value nests deeper than ${MAX_VIEW_RAW_DEPTH} levels and is not handed to the page. It is kept as it was in the outbox's IndexedDB database (object store "rows", key ${JSON.stringify(row.id)}, field "raw"): read it there (a service worker script or the browser's IndexedDB inspector); discard(id) removes it.`,
  } as OutboxRow;
}

/** Rows with their status now; the predecessors they wait on are read when not among them. */
async function viewsOfRows(
  { deps, store, owner }: OwnerContext,
  rows: OutboxRow[],
): Promise<RowView[]> {
  const known = new Map<string, PredecessorState>();
  for (const row of rows) known.set(row.id, row.state === 'blocked' ? 'blocked' : 'present');
  const predecessor = await lookupPredecessors(
    store,
    owner,
    rows.map((row) => row.successorOf),
    known,
  );
  const now = deps.clock.now();
  return rows.map((row) => {
    const status = rowStatus(row, { now, leaseMs: deps.leaseMs }, predecessor);
    const view: RowView = { row: forThePage(row), id: row.id, status };
    if (status === 'sending' && row.claim !== undefined) view.holderId = row.claim.holderId;
    return view;
  });
}
