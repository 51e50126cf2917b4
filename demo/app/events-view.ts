import type { EngineEvent } from '../../sw/index.ts';
import type { LoggedEvent } from '../protocol.ts';
import { byId, clock, h, mount, short } from './dom.ts';
import type { AppState } from './state.ts';

const SHOWN = 25;

/** The engine's own account of what happened (SPEC §14 `onEvent`), newest first. */
export function renderEvents(state: AppState): void {
  const container = byId('events');
  const events = state.events.filter((logged) => describeEvent(logged.event) !== undefined);
  if (events.length === 0) {
    mount(container, h('li', { class: 'empty' }, 'Nothing yet since the worker started.'));
    return;
  }
  mount(
    container,
    events
      .slice(-SHOWN)
      .reverse()
      .map((logged) => item(logged, state.holder?.holderId)),
  );
}

function item(logged: LoggedEvent, current: string | undefined) {
  return h(
    'li',
    { class: 'event', 'data-event': logged.event.type },
    h('time', {}, clock(logged.at)),
    ' ',
    h(
      'code',
      { class: logged.holderId === current ? 'holder' : 'holder other', title: logged.holderId },
      short(logged.holderId, 6),
    ),
    ' ',
    describeEvent(logged.event) ?? '',
  );
}

/** One line per event; routine bookkeeping (a flush that found nothing) is left out. */
function describeEvent(event: EngineEvent): string | undefined {
  switch (event.type) {
    case 'enqueued':
      return `enqueued ${short(event.id)} (${event.outcome})`;
    case 'claimed':
      return `claimed ${short(event.id)} with fence ${event.fence}`;
    case 'sent':
      return `sent ${short(event.id)} as ${short(event.requestId, 8)}`;
    case 'settled':
      return `settled ${short(event.id)}: ${event.outcome}${event.status ? ` (${event.status})` : ''}${event.stale ? ' — claim lost, nothing written' : ''}`;
    case 'converted':
      return `intent ${short(event.intentId)} became request ${short(event.into)}`;
    case 'conflict':
      return `conflict on ${short(event.id)}: server at revision ${event.currentRevision ?? '?'}${event.successorId ? `, resend ${short(event.successorId)} stored` : ''}`;
    case 'storm':
      return `conflict storm on ${short(event.targetId)}: paused until the next flush`;
    case 'held':
      return `held ${short(event.id)}: no valid sign-in`;
    case 'blocked':
      return `blocked ${short(event.id)}: ${event.code}`;
    case 'quarantined':
      return `quarantined ${short(event.id)}: ${event.issues}`;
    case 'flushed':
      return event.remaining > 0 || event.stopped
        ? `flush (${event.trigger}) left ${event.remaining} waiting${event.stopped ? `, stopped: ${event.stopped}` : ''}`
        : undefined;
    case 'sync_retry':
      return `asked the browser to sync again (${event.remaining} waiting)`;
    case 'trigger_failed':
      return `flush (${event.trigger}) failed: ${event.error}`;
    default:
      return undefined;
  }
}
