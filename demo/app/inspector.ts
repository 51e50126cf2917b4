import type { EnqueueResult, OutboxClient } from '../../client/index.ts';
import { defineOutboxInspector, type InspectorAction } from '../../client/inspector.ts';
import { byId } from './dom.ts';
import { explain, notify } from './messages.ts';
import { noteVersion } from './server-api.ts';

/**
 * The demo's outbox inspector is the package's `<outbox-inspector>` (`sw-outbox/inspector`,
 * SPEC §23): rows with status, holder, fence, tries, next try and links, receipts, the conflict
 * ledger with restore, retry and discard, health and the trace export. The demo gives it the
 * outbox and a way to read a note's older versions from the server's history, and answers what
 * a person did in it with a notice.
 */
export function mountInspector(
  outbox: OutboxClient,
  token: () => string,
  onRestored: (result: EnqueueResult) => void,
): void {
  defineOutboxInspector();
  const inspector = byId('outbox') as HTMLElementTagNameMap['outbox-inspector'];
  inspector.readVersion = async (entry, revision) => {
    const version = await noteVersion(token(), entry.targetId, revision);
    if (version === undefined) return null;
    const value = version.value as { title?: unknown; body?: unknown } | null;
    return [value?.title, value?.body].filter((part) => typeof part === 'string').join('\n');
  };
  inspector.outbox = outbox;
  if (inspector.dataset.listening !== undefined) return;
  inspector.dataset.listening = '';
  inspector.addEventListener('outbox-inspector-action', (event) => tell(event.detail, onRestored));
}

const DOING = {
  retry: 'retry the row',
  discard: 'discard the row',
  restore: 'restore the other device’s version',
};

function tell(action: InspectorAction, onRestored: (result: EnqueueResult) => void): void {
  if (action.error !== undefined) {
    notify('error', explain(action.error, DOING[action.action]));
    return;
  }
  if (action.action !== 'restore') return;
  onRestored(action.result as EnqueueResult);
  notify('ok', {
    title: 'The other device’s version goes back through the outbox.',
    hint: 'It is an ordinary update at the current revision with its own idempotency key: durable first, then sent once; the ledger entry notes it was restored.',
  });
}
