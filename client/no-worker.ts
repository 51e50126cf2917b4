import type { OutboxError } from '../shared/model/errors.ts';

/**
 * Why no service worker can serve the page (SPEC §13), said as soon as the browser knows instead
 * of after the connection's timeout: the browser's own reason for refusing the registration (its
 * error's message) or the failed install, what usually causes it, and what to do. Loaded on
 * demand, only when that happened, so the page's first load does not carry the table.
 */

/** What made the registration fail, as far as the browser's message tells. */
export type RegistrationFailure =
  | 'unsupported'
  | 'not_found'
  | 'not_a_script'
  | 'script_error'
  | 'install_failed'
  | 'scope'
  | 'insecure'
  | 'refused';

/** Each cause, the messages of Chromium, Firefox and WebKit that name it, and its hint. */
const CAUSES: ReadonlyArray<readonly [RegistrationFailure, RegExp, string]> = [
  [
    'not_found',
    /\b404\b/,
    'Nothing is served at swUrl: check the path and that the server serves the file (a build ' +
      'emits it, e.g. /sw.js; vite-plugin-pwa serves /dev-sw.js?dev-sw in `vite dev`).',
  ],
  [
    'not_a_script',
    /MIME|Content-Type/i,
    'swUrl answered with something that is not JavaScript, often the app’s index.html from a ' +
      'single-page fallback: check swUrl and that the file exists.',
  ],
  [
    'install_failed',
    /install/i,
    'The worker ran but its install event failed, so it never became active: a URL it ' +
      'precaches that does not load (check the precache list against what the server serves), ' +
      'or an install handler that threw; its console shows which.',
  ],
  [
    'script_error',
    /evaluat|exception|threw|SyntaxError|import/i,
    'The worker threw while it first ran; its console shows the error (DevTools → Application → ' +
      "Service workers). A module worker registered with type 'classic' fails on its first " +
      'import; with vite-plugin-pwa (injectManifest) in `vite dev`, set ' +
      "devOptions.navigateFallback so that createHandlerBoundToURL('index.html') finds its entry.",
  ],
  [
    'scope',
    /scope/i,
    'The scope is above the worker script’s folder: serve the script from higher up, or send ' +
      'a Service-Worker-Allowed header with it.',
  ],
  [
    'insecure',
    /secure|security/i,
    'Service workers need a secure context: https, or http://localhost and http://127.0.0.1.',
  ],
];

const UNSUPPORTED =
  'This page has no service workers (navigator.serviceWorker is missing): it is not a secure ' +
  'context, a private window of a browser that turns them off, or a browser without them. ' +
  'Pass `pageSender` to connectOutbox to run the outbox in the tab there.';

const REFUSED =
  'The browser refused to register the worker; its reason is in `details.reason`. Check swUrl, ' +
  'scope and type.';

/** The cause and hint for a registration that failed with `reason` (undefined: no API at all). */
export function diagnoseRegistration(reason: unknown): {
  cause: RegistrationFailure;
  hint: string;
} {
  if (reason === undefined) return { cause: 'unsupported', hint: UNSUPPORTED };
  const text = messageOf(reason);
  const [cause, , hint] = CAUSES.find(([, pattern]) => pattern.test(text)) ?? [
    'refused',
    /$/,
    REFUSED,
  ];
  return { cause, hint };
}

/**
 * What `connectOutbox` rejects with when no worker will come (a refused registration, no service
 * workers, a failed install): a `worker_unavailable` error with the browser's reason (which
 * names the script) in its message and `details`, and the cause's hint. The page passes the
 * error class it already loaded, so this chunk shares no module with the page's first load.
 */
export default function noWorker(reason: unknown, Failure: typeof OutboxError): OutboxError {
  const { cause, hint } = diagnoseRegistration(reason);
  const text = reason === undefined ? 'service workers are not available' : messageOf(reason);
  return new Failure(
    'worker_unavailable',
    `No service worker can serve this page: ${text}`,
    { cause, reason: text },
    hint,
  );
}

function messageOf(reason: unknown): string {
  return reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
}
