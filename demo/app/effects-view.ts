import { byId, h, mount } from './dom.ts';
import type { AppState } from './state.ts';

/**
 * Exactly-once, side by side (G2): the edits made on this device and how many requests they
 * became, next to the writes the server says it committed for this user and how many retries it
 * answered from its idempotency ledger instead of applying again.
 */
export function renderEffects(state: AppState): void {
  const container = byId('effects');
  const { tally, stats, receipts } = state;
  if (!state.admin || stats === undefined) {
    mount(
      container,
      h(
        'p',
        { class: 'empty' },
        state.admin
          ? 'Reading the server’s counters…'
          : 'The server runs without admin routes, so it publishes no effect counter. Start it with `npm start`.',
      ),
    );
    return;
  }
  const applied = receipts.filter((receipt) => receipt.status < 300);
  const counted = applied.filter((receipt) => stats.effectsByKey[receipt.requestId] !== undefined);
  const twice = Object.values(stats.effectsByKey).filter((count) => count > 1).length;
  const once = counted.every((receipt) => stats.effectsByKey[receipt.requestId] === 1);
  const pending = state.rows.length;

  mount(
    container,
    h(
      'div',
      { class: 'tallies' },
      h(
        'section',
        { class: 'tally', 'data-side': 'device' },
        h('h4', {}, 'This device'),
        figure('edits made', tally.made, 'edits-made'),
        figure('folded into an earlier unsent edit', tally.merged, 'edits-merged'),
        figure(
          'cancelled (created and deleted before sending)',
          tally.cancelled,
          'edits-cancelled',
        ),
        figure('changes still in the outbox', pending, 'rows-pending'),
        figure('requests the server confirmed (receipts)', applied.length, 'receipts'),
      ),
      h(
        'section',
        { class: 'tally', 'data-side': 'server' },
        h('h4', {}, 'The server'),
        figure('effects applied', stats.effects, 'effects'),
        figure('idempotency keys applied more than once', twice, 'applied-twice'),
        figure('retries answered from its ledger (replays)', stats.replays, 'replays'),
        figure('revision conflicts answered (412)', stats.conflicts, 'conflicts'),
      ),
    ),
    verdict(applied.length, twice === 0 && once, stats.replays),
    h(
      'p',
      { class: 'fine' },
      'Server counts are kept by the server process since it started; receipts by this browser (the latest 100).',
    ),
  );
}

function figure(label: string, value: number, name: string) {
  return h(
    'div',
    { class: 'figure', 'data-figure': name },
    h('span', { class: 'value' }, String(value)),
    h('span', { class: 'label' }, label),
  );
}

function verdict(confirmed: number, exactlyOnce: boolean, replays: number) {
  if (confirmed === 0) {
    return h('p', { class: 'verdict', 'data-verdict': 'none' }, 'No request confirmed yet.');
  }
  if (!exactlyOnce) {
    return h(
      'p',
      { class: 'verdict bad', 'data-verdict': 'bad' },
      'A request was applied more than once: that breaks guarantee G2.',
    );
  }
  const retries = replays === 1 ? '1 retry' : `${replays} retries`;
  return h(
    'p',
    { class: 'verdict ok', 'data-verdict': 'ok' },
    'Exactly once: every confirmed request was applied once, and no key twice',
    replays > 0 ? `, though ${retries} reached the server` : '',
    '.',
  );
}
