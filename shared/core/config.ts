import type { CollectionHandler } from '../model/handler.ts';
import type { OutboxEvent } from '../model/page-api.ts';
import type { Clock, IdSource, Logger, Transport } from '../model/ports.ts';
import type { OutboxStore } from '../model/store.ts';
import type { RetentionBook } from './retention-book.ts';
import type { OutboxTuning } from './tuning.ts';

/** Everything a core needs: ports, handlers and identity. One core = one holder (§4). */
export interface OutboxCoreConfig extends Partial<OutboxTuning> {
  store: OutboxStore;
  transport: Transport;
  clock: Clock;
  ids: IdSource;
  logger?: Logger;
  handlers: Record<string, CollectionHandler>;
  /** This sender instance's holder id (a new one per worker start / per tab). */
  holderId: string;
  /** Library version written to `writer.bundle` (§4). */
  bundle: string;
  onEvent?: (event: OutboxEvent) => void;
  /**
   * Whether this holder has credentials for an owner now (§13). A holder that has them sends the
   * rows any holder held for want of them (`auth_required`, never sent). Absent: it has none.
   */
  hasCredentials?: (owner: string) => Promise<boolean>;
}

/**
 * What the core's functions run with: the config with every tunable filled in, and what the
 * holder learns of its servers as it goes (their retention, SPEC §15).
 */
export type CoreDeps = OutboxCoreConfig & OutboxTuning & { retention: RetentionBook };
