import type { ConflictLedgerEntry, FlushReport, Receipt, RowView } from '../../client/index.ts';
import type { HolderInfo, LoggedEvent } from '../protocol.ts';
import type { Card } from './cards.ts';
import { type EffectStats, type FaultRule, isOfflineRule, type ServerNote } from './server-api.ts';
import type { Session } from './session.ts';
import type { Tally } from './tally.ts';

/** Everything the views draw from. Only `DemoApp` writes it; views only read it. */
export interface AppState {
  session: Session;
  connection: 'connecting' | 'worker' | 'page' | 'failed';
  rows: RowView[];
  receipts: Receipt[];
  conflicts: ConflictLedgerEntry[];
  notes: ServerNote[];
  /** Whether the notes shown came from the server just now or from this device's copy. */
  notesFrom: 'server' | 'device';
  stats?: EffectStats;
  /** Whether the server has its admin routes (fault injection, effect counter). */
  admin: boolean;
  faults: FaultRule[];
  holder?: HolderInfo;
  events: LoggedEvent[];
  tally: Tally;
  lastFlush?: { at: number; report: FlushReport };
  /** Rows settled since the outbox was last empty, and how many are still to go. */
  progress: { done: number; left: number };
  /**
   * Rows that left the outbox whose receipts are not read yet: the editor keeps showing their
   * changes until the receipts put them into the notes, so a synced note never blinks out.
   */
  settling: RowView[];
}

/** What the views may ask for. */
export interface Actions {
  create(title: string, body: string): void;
  edit(card: Card, title: string, body: string): void;
  remove(card: Card): void;
  editElsewhere(card: Card): void;
  readonly faults: FaultActions;
  signInAgain(): void;
  flushNow(): void;
  stopHolder(): void;
  refreshNotes(): void;
  signOut(): void;
}

/** The fault controls (fault-controls.ts): rules on the server for this user only. */
export interface FaultActions {
  goOffline(): void;
  goOnline(): void;
  clearFaults(): void;
  dropResponses(): void;
  slowServer(): void;
  burst503(): void;
  expireToken(): void;
}

/** "Offline" here means the server refuses this user's requests: an open-ended 503 rule. */
export function isOffline(state: AppState): boolean {
  return state.faults.some(isOfflineRule);
}

/** Rows that wait for a new sign-in (SPEC §11: 401 → held until `resumeHeld`). */
export function heldCount(state: AppState): number {
  return state.rows.filter((row) => row.status === 'held').length;
}
