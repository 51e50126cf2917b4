import type { PrincipalStats } from '../../server/stats.ts';
/**
 * The page's direct calls to the reference server (SPEC §15): demo sign-in, reading notes, and
 * the admin routes that inject faults and count effects. Writes never go this way: every create,
 * edit and delete goes through the outbox.
 */

/** A note as the server stores it. */
export interface ServerNote {
  id: string;
  revision: number;
  title: string;
  body: string;
  deleted?: boolean;
}

/**
 * A version of a note as the server keeps it (SPEC §10.1): one a write superseded, or the
 * current one (`supersededBy` and `supersededAt` null).
 */
export interface NoteVersion {
  id: string;
  revision: number;
  value: { title?: string; body?: string };
  supersededBy: string | null;
  supersededAt: number | null;
}

/** The server's counters for one user (`GET /__stats?user=`). */
export type EffectStats = PrincipalStats;

/** A fault rule as the server lists it (server/faults.ts). */
export interface FaultRule {
  id: number;
  kind: 'drop-after-commit' | 'delay' | 'unavailable';
  user?: string;
  count?: number;
  fired: number;
  [field: string]: unknown;
}

/** A non-2xx answer, with the problem document's title and detail when there was one. */
export class HttpError extends Error {
  override readonly name = 'HttpError';
  constructor(
    readonly status: number,
    readonly problem: { type?: string; title?: string; detail?: string },
    readonly path: string,
  ) {
    super(`${path} answered ${status}${problem.title ? ` ${problem.title}` : ''}`);
  }
}

async function call<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers: Record<string, string> = { ...(init.headers as Record<string, string>) };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { ...init, headers, cache: 'no-store' });
  const text = await response.text();
  const body = text === '' ? undefined : safeJson(text);
  if (!response.ok) {
    throw new HttpError(response.status, (body ?? {}) as HttpError['problem'], path);
  }
  return body as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { detail: text.slice(0, 200) };
  }
}

const json = (value: unknown) => JSON.stringify(value);

/** `POST /auth/login { user }` → a bearer token. */
export async function login(user: string): Promise<string> {
  return (await call<{ token: string }>('/auth/login', { method: 'POST', body: json({ user }) }))
    .token;
}

/** The user's notes on the server. */
export async function listNotes(token: string): Promise<ServerNote[]> {
  const { items } = await call<{ items: ServerNote[] }>('/api/notes', {
    headers: { authorization: `Bearer ${token}` },
  });
  return items.filter((note) => !note.deleted);
}

/** `GET /api/notes/:id/history/:revision`: one version of the user's note, or undefined (404). */
export async function noteVersion(
  token: string,
  id: string,
  revision: number,
): Promise<NoteVersion | undefined> {
  try {
    return await call<NoteVersion>(`/api/notes/${encodeURIComponent(id)}/history/${revision}`, {
      headers: { authorization: `Bearer ${token}` },
    });
  } catch (error) {
    if (error instanceof HttpError && error.status === 404) return undefined;
    throw error;
  }
}

export async function stats(user: string): Promise<EffectStats> {
  return (await call<{ process: EffectStats }>(`/__stats?user=${encodeURIComponent(user)}`))
    .process;
}

export async function faultRules(user: string): Promise<FaultRule[]> {
  const { rules } = await call<{ rules: FaultRule[] }>('/__faults');
  return rules.filter((rule) => rule.user === user);
}

export async function addFault(rule: Record<string, unknown>): Promise<void> {
  await call('/__faults', { method: 'POST', body: json(rule) });
}

/** Removes the fault rules of one user that `match`, or all of the user's rules. */
export async function removeFaults(
  user: string,
  match?: (rule: FaultRule) => boolean,
): Promise<void> {
  if (match === undefined) {
    await call(`/__faults?user=${encodeURIComponent(user)}`, { method: 'DELETE' });
    return;
  }
  const rules = (await faultRules(user)).filter(match);
  await Promise.all(
    rules.map((rule) =>
      // A rule whose count ran out is gone already: that is what was asked for.
      call(`/__faults/${rule.id}`, { method: 'DELETE' }).catch((error: unknown) => {
        if (!(error instanceof HttpError && error.status === 404)) throw error;
      }),
    ),
  );
}

/** The rule behind the demo's "offline": every request of the user refused with 503. */
export const isOfflineRule = (rule: FaultRule): boolean =>
  rule.kind === 'unavailable' && rule.count === undefined;

/** Opens a 401 window: every token issued to `user` so far is refused until a new sign-in. */
export async function expireToken(user: string): Promise<void> {
  await call('/__faults/expire-token', { method: 'POST', body: json({ user }) });
}

/** "Another device" edits a note: the server bumps its revision behind this device's back. */
export async function editOnAnotherDevice(
  user: string,
  id: string,
  patch: { title?: string; body?: string },
): Promise<ServerNote> {
  return call<ServerNote>('/__faults/edit', { method: 'POST', body: json({ user, id, ...patch }) });
}
