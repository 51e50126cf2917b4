import { DemoApp } from './app.ts';
import { renderControls, renderStatus } from './controls-view.ts';
import { byId, h, mount } from './dom.ts';
import { renderEditor, wireEditor } from './editor-view.ts';
import { renderEffects } from './effects-view.ts';
import { renderEvents } from './events-view.ts';
import { renderHolder } from './holder-view.ts';
import { attempt } from './messages.ts';
import { type Session, savedSession, signIn, USER_PATTERN } from './session.ts';

/**
 * The demo page: sign in (any name; the demo server issues a token), then the notes editor and
 * the outbox inspector side by side.
 */

function boot(): void {
  if (!('serviceWorker' in navigator)) {
    mount(
      byId('banner'),
      h(
        'p',
        { class: 'banner error' },
        'This browser (or this private window) has no service workers, which the outbox runs in. Open the demo in a current Chromium, Firefox or Safari window.',
      ),
    );
    return;
  }
  const session = savedSession();
  if (session) start(session);
  else showSignIn();
}

function showSignIn(): void {
  const section = byId('signin');
  const form = byId<HTMLFormElement>('signin-form');
  section.hidden = false;
  byId('app').hidden = true;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const user = String(new FormData(form).get('user') ?? '').trim();
    if (!USER_PATTERN.test(user)) {
      byId('signin-error').textContent =
        'Use 1–64 letters, digits or . _ @ - (the demo server’s rule for user names).';
      return;
    }
    const session = await attempt('sign in', () => signIn(user));
    if (session === undefined) return;
    section.hidden = true;
    start(session);
  });
}

function start(session: Session): void {
  byId('app').hidden = false;
  let app: DemoApp | undefined;
  let queued = false;
  // Many events arrive together (a subscription snapshot, receipts, counters): draw once a frame.
  const render = () => {
    if (queued || app === undefined) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      draw(app!);
    });
  };
  app = new DemoApp(session, render);
  // The browser's own network state has a banner of its own (DevTools → Network → Offline).
  window.addEventListener('online', render);
  window.addEventListener('offline', render);
  wireEditor(app);
  mount(
    byId('account'),
    'Signed in as ',
    h('strong', { 'data-user': session.user }, session.user),
    ' ',
    h('button', { class: 'link', onclick: () => app.signOut() }, 'switch user'),
  );
  void app.start();
}

const painted = new Map<string, string>();

/**
 * Redraws a section only when what it shows changed, so a button is not replaced under the
 * pointer by an unrelated update (a counter refresh, another section's rows).
 */
function section(name: string, inputs: unknown, paint: () => void): void {
  const key = JSON.stringify(inputs);
  if (painted.get(name) === key) return;
  painted.set(name, key);
  paint();
}

function draw(app: DemoApp): void {
  const s = app.state;
  // Each key holds everything its view reads: a settled row leaving `settling` must redraw.
  section(
    'status',
    [s.connection, s.rows, s.faults, s.progress, s.settling.length > 0, navigator.onLine],
    () => renderStatus(s, app),
  );
  section('editor', [s.notes, s.rows, s.settling, s.receipts, s.notesFrom], () =>
    renderEditor(s, app),
  );
  section('controls', [s.faults, s.admin, s.lastFlush], () => renderControls(s, app));
  section('effects', [s.stats, s.tally, s.receipts, s.rows.length, s.admin], () =>
    renderEffects(s),
  );
  section('holder', [s.holder, s.connection], () => renderHolder(s));
  section('events', [s.events.at(-1)?.seq, s.events.length, s.holder], () => renderEvents(s));
}

boot();
