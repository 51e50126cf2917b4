import { byId, h, mount, relativeTime } from './dom.ts';
import type { FaultRule } from './server-api.ts';
import { type Actions, type AppState, heldCount, isOffline } from './state.ts';

/**
 * The banner (offline, signed out, no worker), the sync progress indicator and the fault
 * controls. The demo cannot switch the browser's network, so "offline" asks the server to refuse
 * this user's requests; the controls say so.
 */
export function renderStatus(state: AppState, actions: Actions): void {
  const held = heldCount(state);
  const offline = isOffline(state);
  const banners = [
    state.connection === 'failed'
      ? h(
          'p',
          { class: 'banner error' },
          'No service worker answered, so changes cannot be saved. Reload the page; this browser needs service workers (a private window may not allow them).',
        )
      : null,
    held > 0
      ? h(
          'p',
          { class: 'banner warn', 'data-banner': 'held' },
          `Your sign-in expired (401). ${held} change${held === 1 ? ' is' : 's are'} held — kept, not sent — until you sign in again. `,
          h('button', { onclick: () => actions.signInAgain() }, 'Sign in again'),
        )
      : null,
    typeof navigator !== 'undefined' && navigator.onLine === false
      ? h(
          'p',
          { class: 'banner offline', 'data-banner': 'browser-offline' },
          'This browser is offline. Keep editing: changes wait in the outbox, and the worker sends them once the network is back — with this tab closed too.',
        )
      : null,
    offline
      ? h(
          'p',
          { class: 'banner offline', 'data-banner': 'offline' },
          'Offline (simulated): the server refuses every request of yours with 503. Keep editing — changes wait in the outbox. ',
          h('button', { onclick: () => actions.faults.goOnline() }, 'Go online'),
        )
      : null,
  ];
  mount(byId('banner'), banners);
  renderProgress(state);
}

function renderProgress(state: AppState): void {
  const container = byId('progress');
  const { done, left } = state.progress;
  const blocked = state.rows.filter((row) => row.status === 'blocked').length;
  if (left === 0) {
    mount(
      container,
      blocked > 0
        ? h(
            'p',
            { class: 'sync attention' },
            `${blocked} change${blocked === 1 ? ' needs' : 's need'} attention (blocked): see the inspector.`,
          )
        : h(
            'p',
            { class: 'sync idle' },
            state.rows.length > 0
              ? ''
              : state.settling.length > 0
                ? 'Reading the server’s answers…'
                : 'All changes are on the server.',
          ),
    );
    return;
  }
  const next = state.rows
    .map((row) => (row.row as { nextAttemptAt?: number }).nextAttemptAt)
    .filter((at): at is number => typeof at === 'number' && at > Date.now())
    .sort((a, b) => a - b)[0];
  mount(
    container,
    h(
      'div',
      { class: 'sync busy', role: 'status', 'data-left': String(left) },
      h('progress', { max: done + left, value: done }),
      h(
        'span',
        {},
        `Syncing: ${done} of ${done + left} sent`,
        next !== undefined ? [' · next try ', relativeTime(next)] : '',
        isOffline(state) ? ' · offline' : '',
      ),
    ),
  );
}

/** The fault controls and the flush / holder buttons. */
export function renderControls(state: AppState, actions: Actions): void {
  const offline = isOffline(state);
  const report = state.lastFlush?.report;
  const control = (label: string, action: () => void, explain: string, name: string) =>
    h(
      'li',
      {},
      h(
        'button',
        {
          onclick: action,
          'data-control': name,
          disabled: !state.admin && name !== 'flush' && name !== 'stop-holder',
        },
        label,
      ),
      h('span', { class: 'explain' }, explain),
    );
  mount(
    byId('controls'),
    h(
      'ul',
      { class: 'controls' },
      offline
        ? control(
            'Go online',
            () => actions.faults.goOnline(),
            'The server accepts your requests again; the outbox sends at once, ignoring backoff.',
            'online',
          )
        : control(
            'Go offline',
            () => actions.faults.goOffline(),
            'A page cannot switch the browser’s network, so the server refuses your requests (503) instead. For real offline use DevTools → Network → Offline: the app still opens from the worker’s cache.',
            'offline',
          ),
      control(
        'Drop 2 responses',
        () => actions.faults.dropResponses(),
        'The server commits your next 2 writes, then cuts the connection before answering. Chromium usually re-sends such a request itself (the row still shows 1 try); otherwise the outbox resends the same key. Either way the server answers the copy from its ledger: see “replays” under The server.',
        'drop',
      ),
      control(
        'Slow server',
        () => actions.faults.slowServer(),
        'Holds your next write 8 s before it commits — longer than the lease. Copies sent meanwhile get 409 (in progress) and wait; then try stopping the holder while it waits.',
        'slow',
      ),
      control(
        '503 burst',
        () => actions.faults.burst503(),
        'Your next 3 requests get 503 + Retry-After: the rows wait (deferred) and go again.',
        'burst',
      ),
      control(
        '401 window',
        () => actions.faults.expireToken(),
        'Expires your token: the next write is held until you sign in again.',
        'expire',
      ),
      control(
        'Flush now',
        () => actions.flushNow(),
        'Sends what is due at once, ignoring backoff.',
        'flush',
      ),
      control(
        'Stop the worker’s holder',
        () => actions.stopHolder(),
        'The current holder stops mid-send, like a killed worker: a new holder takes its rows over after the lease, with a higher fence and the same keys.',
        'stop-holder',
      ),
    ),
    state.faults.length > 0
      ? h(
          'p',
          { class: 'fine', 'data-faults': '' },
          `Active fault rules for you: ${state.faults.map(describeRule).join(', ')} `,
          h('button', { class: 'link', onclick: () => actions.faults.clearFaults() }, 'clear them'),
        )
      : null,
    report
      ? h(
          'p',
          { class: 'fine', 'data-flush-report': '' },
          `Last flush: claimed ${report.claimed}, succeeded ${report.succeeded}, transient ${report.transient}, held ${report.held}, blocked ${report.blocked}, conflicts ${report.conflicts}, stale ${report.stale}, still waiting ${report.remaining}${report.stopped ? `, stopped: ${report.stopped}` : ''}.`,
        )
      : null,
  );
}

function describeRule(rule: FaultRule): string {
  const left = rule.count === undefined ? '' : ` (${rule.count - rule.fired} left)`;
  return `${rule.kind}${left}`;
}
