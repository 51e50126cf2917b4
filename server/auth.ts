import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

/** Demo user names: what `POST /auth/login` accepts and what becomes the ledger's principal. */
export const USER_PATTERN = /^[A-Za-z0-9_.@-]{1,64}$/;

/** Verified tokens remembered; the cache is simply emptied when full. */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * The demo's token secret, public in this repository: a token signed with it proves nothing. The
 * server accepts it only while it serves loopback clients (see {@link secretWeakness}).
 */
export const DEMO_AUTH_SECRET = 'sw-outbox-demo-secret';

/** The shortest secret a server reachable beyond loopback accepts. */
export const MIN_AUTH_SECRET_LENGTH = 32;

/** How far in the future a token's issue time may lie (clocks of instances differ a little). */
export const DEFAULT_CLOCK_SKEW_MS = 60_000;

/**
 * Why `secret` must not sign tokens on a server that clients beyond loopback can reach, or
 * `undefined` when it may: no secret (the demo default), the published demo secret, or one too
 * short to resist guessing.
 */
export function secretWeakness(secret: string | undefined): string | undefined {
  if (secret === undefined || secret === '') return 'no auth secret is set';
  if (secret === DEMO_AUTH_SECRET) return 'the auth secret is the published demo secret';
  if (secret.length < MIN_AUTH_SECRET_LENGTH)
    return `the auth secret is shorter than ${MIN_AUTH_SECRET_LENGTH} characters`;
  return undefined;
}

/** Whether a host to listen on, or a peer's address, is loopback (127.0.0.0/8, ::1, localhost). */
export function isLoopback(address: string | undefined): boolean {
  if (address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1') return true;
  if (address === undefined) return false;
  const host = address.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return (
    host === 'localhost' ||
    host === '::1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) ||
    /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
  );
}

/** How a bearer token checked out. */
export type TokenCheck =
  | { kind: 'ok'; user: string }
  | { kind: 'missing' }
  | { kind: 'invalid' }
  | { kind: 'expired'; user: string };

/**
 * An app's own auth (SPEC §15: "a real deployment plugs in its own auth; the ledger only needs
 * a principal"): reads a request — its headers, cookies, peer — and says who sent it. `ok`
 * names the principal the ledger keys by; `expired` and `invalid` are answered 401 with
 * `WWW-Authenticate` (the client holds its rows until the app gives it new credentials);
 * `missing` is 401 too. It may return a promise (a token introspection, a session store); a
 * rejected promise is answered 503, so the client retries the same key later.
 */
export type Authenticate = (request: FastifyRequest) => TokenCheck | Promise<TokenCheck>;

/** Options of {@link DemoAuth}. */
export interface DemoAuthOptions {
  /** HMAC secret. Instances sharing a ledger must share it so a token works on each of them. */
  secret: string;
  /** Token lifetime. Default 24 h. */
  ttlMs?: number;
  /**
   * How far in the future a token's issue time may be and still be accepted. Default
   * {@link DEFAULT_CLOCK_SKEW_MS}. A token dated further ahead is invalid: it would otherwise
   * outlive its lifetime and every expiry window.
   */
  clockSkewMs?: number;
  now?: () => number;
}

/**
 * Demo auth (SPEC §15): a signed, stateless bearer token naming the user, so that several
 * instances accept each other's tokens. A real deployment plugs in its own auth; the ledger only
 * needs a principal. `expire(user)` opens a "401 window": every token issued so far is rejected
 * until the user logs in again (fault injection, per instance).
 *
 * A token names its user and its issue time (`iat`); it is valid from `iat - clockSkew` to
 * `iat + ttl`. An `iat` more than the clock skew ahead is refused, so every accepted token expires
 * within `ttl + clockSkew` of now and an expiry window covers every token accepted so far.
 */
export class DemoAuth {
  readonly #secret: string;
  readonly #ttlMs: number;
  readonly #clockSkewMs: number;
  readonly #now: () => number;
  /** user → tokens issued at or before this instant are expired. */
  readonly #expiredUntil = new Map<string, number>();
  /** Tokens whose signature was verified: an HMAC per request is a measurable share of a write. */
  readonly #verified = new Map<string, { user: string; issuedAt: number }>();

  constructor(options: DemoAuthOptions) {
    this.#secret = options.secret;
    this.#ttlMs = options.ttlMs ?? 24 * 60 * 60 * 1000;
    this.#clockSkewMs = options.clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS;
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
    const now = this.#now();
    const cutoff = this.#expiredUntil.get(claims.user);
    // A token issued right after an expiry window is dated just past it (see `issue`).
    const latest = Math.max(now + this.#clockSkewMs, (cutoff ?? Number.NEGATIVE_INFINITY) + 1);
    if (claims.issuedAt > latest) return { kind: 'invalid' };
    if (cutoff !== undefined && claims.issuedAt <= cutoff)
      return { kind: 'expired', user: claims.user };
    if (now - claims.issuedAt > this.#ttlMs) return { kind: 'expired', user: claims.user };
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
    if (!USER_PATTERN.test(user) || !Number.isSafeInteger(issuedAt) || issuedAt < 0)
      return undefined;
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.clear();
    const claims = { user, issuedAt };
    this.#verified.set(token, claims);
    return claims;
  }

  /**
   * Expires every token issued to `user` so far (a 401 window until the next login). The window
   * reaches the clock skew ahead, so tokens dated a little in the future expire too.
   */
  expire(user: string): void {
    const previous = this.#expiredUntil.get(user) ?? Number.NEGATIVE_INFINITY;
    this.#expiredUntil.set(user, Math.max(this.#now() + this.#clockSkewMs, previous + 1));
  }

  #sign(payload: string): string {
    return createHmac('sha256', this.#secret).update(payload).digest('base64url');
  }
}
