import { login } from './server-api.ts';

/**
 * The demo sign-in: a user name exchanged for a bearer token (`POST /auth/login`). The token is
 * kept in `localStorage` for the page's own reads and handed to the worker with `setAuth`; rows
 * never hold it (SPEC §2).
 */
export interface Session {
  user: string;
  token: string;
}

const KEY = 'sw-outbox-demo:session';
/** What the server accepts as a user name (server/auth.ts). */
export const USER_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;

export function savedSession(): Session | undefined {
  try {
    const value = JSON.parse(localStorage.getItem(KEY) ?? 'null') as Partial<Session> | null;
    if (typeof value?.user === 'string' && typeof value.token === 'string') {
      return { user: value.user, token: value.token };
    }
  } catch {
    // A damaged entry is the same as none: the person signs in again.
  }
  return undefined;
}

export async function signIn(user: string): Promise<Session> {
  const session = { user, token: await login(user) };
  localStorage.setItem(KEY, JSON.stringify(session));
  return session;
}

export function signOut(): void {
  localStorage.removeItem(KEY);
}

/** The headers the worker adds at send time. */
export const authHeaders = (session: Session) => ({ authorization: `Bearer ${session.token}` });
