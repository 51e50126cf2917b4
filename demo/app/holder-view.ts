import { byId, h, mount, short } from './dom.ts';
import type { AppState } from './state.ts';

/**
 * The worker's current holder (SPEC §4) above the inspector: its id and which holder of this
 * worker start it is, so "stop the worker's holder" shows a new one take over. The rows, receipts
 * and the conflict ledger are the `sw-outbox/inspector` element's (see `inspector.ts`).
 */
export function renderHolder(state: AppState): void {
  const { holder } = state;
  mount(
    byId('holder'),
    holder
      ? [
          'Worker holder ',
          h('code', { title: holder.holderId }, short(holder.holderId, 8)),
          ` (holder #${holder.generation} of this worker start, lease ${holder.leaseMs / 1000} s)`,
        ]
      : state.connection === 'failed'
        ? 'No service worker answered.'
        : 'Asking the worker…',
  );
}
