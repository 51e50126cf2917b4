import { createHmac, timingSafeEqual } from 'node:crypto';

/** Demo user names: what `POST /auth/login` accepts and what becomes the ledger's principal. */
export const USER_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;

/** Verified tokens remembered; the cache is simply emptied when full. */
const VERIFIED_CACHE_SIZE = 10_000;

/** How a bearer token checked out. */
export type TokenCheck =
  | { kind: 'ok'; user: string }
  | { kind: 'missing' }
  | { kind: 'invalid' }
  | { kind: 'expired'; user: string };

/** Options of {@link DemoAuth}. */
export interface DemoAuthOptions {
  /** HMAC secret. Instances sharing a ledger must share it so a token works on each of them. */
  secret: string;
  /** Token lifetime. Default 24 h. */
  ttlMs?: number;
  now?: () => number;
}

/**
 * Demo auth (SPEC §15): a signed, stateless bearer token naming the user, so that several
 * instances accept each other's tokens. A real deployment plugs in its own auth; the ledger only
 * needs a principal. `expire(user)` opens a "401 window": every token issued so far is rejected
 * until the user logs in again (fault injection, per instance).
 */
export class DemoAuth {
  readonly #secret: string;
  readonly #ttlMs: number;
  readonly #now: () => number;
  /** user → tokens issued at or before this instant are expired. */
  readonly #expiredUntil = new Map<string, number>();
  /** Tokens whose signature was verified: an HMAC per request is a measurable share of a write. */
  readonly #verified = new Map<string, { user: string; issuedAt: number }>();

  constructor(options: DemoAuthOptions) {
    this.#secret = options.secret;
    this.#ttlMs = options.ttlMs ?? 24 * 60 * 60 * 1000;
    this.#now = options.now ?? Date.now;
  }

  /** A token for `user`, issued strictly after any expiry window so it is accepted. */
  issue(user: string): string {
    const cutoff = this.#expiredUntil.get(user) ?? Number.NEGATIVE_INFINITY;
    const issuedAt = Math.max(this.#now(), cutoff + 1);
    const payload = `${Buffer.from(user).toString('base64url')}.${issuedAt.toString(36)}`;
    return `${payload}.${this.#sign(payload)}`;
  }

  /** Checks an `Authorization` header value. */
  check(header: string | undefined): TokenCheck {
    if (header === undefined || !header.startsWith('Bearer ')) return { kind: 'missing' };
    const token = header.slice(7).trim();
    const claims = this.#verified.get(token) ?? this.#verify(token);
    if (!claims) return { kind: 'invalid' };
    const cutoff = this.#expiredUntil.get(claims.user);
    if (cutoff !== undefined && claims.issuedAt <= cutoff)
      return { kind: 'expired', user: claims.user };
    if (this.#now() - claims.issuedAt > this.#ttlMs) return { kind: 'expired', user: claims.user };
    return { kind: 'ok', user: claims.user };
  }

  #verify(token: string): { user: string; issuedAt: number } | undefined {
    const lastDot = token.lastIndexOf('.');
    const firstDot = token.indexOf('.');
    if (firstDot <= 0 || lastDot === firstDot) return undefined;
    const payload = token.slice(0, lastDot);
    const signature = Buffer.from(token.slice(lastDot + 1), 'base64url');
    const expected = Buffer.from(this.#sign(payload), 'base64url');
    if (signature.length !== expected.length || !timingSafeEqual(signature, expected))
      return undefined;
    const user = Buffer.from(payload.slice(0, firstDot), 'base64url').toString();
    const issuedAt = Number.parseInt(payload.slice(firstDot + 1), 36);
    if (!USER_PATTERN.test(user) || !Number.isFinite(issuedAt)) return undefined;
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.clear();
    const claims = { user, issuedAt };
    this.#verified.set(token, claims);
    return claims;
  }

  /** Expires every token issued to `user` so far (a 401 window until the next login). */
  expire(user: string): void {
    const previous = this.#expiredUntil.get(user) ?? Number.NEGATIVE_INFINITY;
    this.#expiredUntil.set(user, Math.max(this.#now(), previous + 1));
  }

  #sign(payload: string): string {
    return createHmac('sha256', this.#secret).update(payload).digest('base64url');
  }
}
