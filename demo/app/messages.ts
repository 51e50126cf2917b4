import { ERROR_CODES } from '../../client/index.ts';
import { byId, h } from './dom.ts';
import { HttpError } from './server-api.ts';

/**
 * Every message the demo shows a person: errors with their stable code and how to recover, and
 * short confirmations. Library errors keep `code` across Comlink (SPEC §13), so the hint comes
 * from the same table the library documents (`ERROR_CODES`).
 */

export type Tone = 'error' | 'info' | 'ok';

export interface Explained {
  title: string;
  code?: string;
  hint?: string;
  detail?: string;
}

/** Turns anything thrown into a title, its code and a hint. */
export function explain(error: unknown, doing: string): Explained {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && Object.hasOwn(ERROR_CODES, code)) {
    return {
      title: `Could not ${doing}`,
      code,
      hint: ERROR_CODES[code as keyof typeof ERROR_CODES],
      detail: (error as Error).message,
    };
  }
  if (error instanceof HttpError) return explainHttp(error, doing);
  if (error instanceof TypeError) {
    return {
      title: `Could not ${doing}`,
      hint: 'The server could not be reached. Is `npm start` still running?',
      detail: error.message,
    };
  }
  return { title: `Could not ${doing}`, detail: String((error as Error)?.message ?? error) };
}

function explainHttp(error: HttpError, doing: string): Explained {
  const { status, problem, path } = error;
  const hints: Record<number, string> = {
    401: 'Your sign-in expired: sign in again.',
    404: path.startsWith('/__')
      ? 'The server runs without admin routes; start it with `npm start` (admin on) to use the fault controls.'
      : 'Not found.',
    422: 'The server rejected the input.',
    503: 'The server refuses requests right now (or the demo is "offline"); this device keeps its copy.',
  };
  return {
    title: `Could not ${doing}`,
    code: `http_${status}`,
    ...(hints[status] ? { hint: hints[status] } : {}),
    detail: problem.detail ?? problem.title ?? path,
  };
}

/** The hint for a blocked row's `blockedCode` (`http_<status>` or a library code). */
export function blockedHint(code: string | undefined): string {
  if (code === undefined) return '';
  if (Object.hasOwn(ERROR_CODES, code)) return ERROR_CODES[code as keyof typeof ERROR_CODES];
  if (code === 'http_422')
    return 'The server rejected the data (e.g. an empty title): discard it, or fix and retry.';
  if (code === 'http_404') return 'The note no longer exists on the server: discard this change.';
  if (code.startsWith('http_'))
    return 'The server refused the request for good: retry or discard it.';
  return 'See the detail below.';
}

const TIMEOUT_MS: Record<Tone, number> = { error: 15_000, info: 4000, ok: 3000 };

/** Shows a message in the notices area; errors stay longer and can be dismissed. */
export function notify(tone: Tone, message: Explained | string): void {
  const m = typeof message === 'string' ? { title: message } : message;
  const close = () => item.remove();
  const item = h(
    'li',
    { class: `notice ${tone}`, role: tone === 'error' ? 'alert' : 'status' },
    h('strong', {}, m.title),
    m.code ? h('code', { class: 'code' }, m.code) : null,
    m.hint ? h('span', { class: 'hint' }, m.hint) : null,
    m.detail && m.detail !== m.hint ? h('small', { class: 'detail' }, m.detail) : null,
    h('button', { class: 'link', onclick: close, 'aria-label': 'dismiss' }, '×'),
  );
  const list = byId('notices');
  list.prepend(item);
  while (list.children.length > 2) list.lastElementChild?.remove();
  setTimeout(close, TIMEOUT_MS[tone]);
}

/** Runs an action and reports its failure; returns undefined when it failed. */
export async function attempt<T>(doing: string, action: () => Promise<T>): Promise<T | undefined> {
  try {
    return await action();
  } catch (error) {
    notify('error', explain(error, doing));
    return undefined;
  }
}
