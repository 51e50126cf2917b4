import { PROBLEM } from 'sw-outbox/wire';
import { MAX_PARAM_LENGTH } from '../error-handler.ts';
import { type Answer, problemAnswer } from '../problem.ts';

/**
 * A path pattern of static segments and `:name` parameters (`/api/todos/:id`), as Express, Hono
 * and Fastify write them, matched against a request's path as sent (percent-encoded). The kit
 * matches requests alone and batch items with it (SPEC §15.1), so both reach the same handler.
 */
export interface RoutePattern {
  readonly path: string;
  /**
   * The decoded parameters when `path` has the pattern's shape: `undefined` when it does not
   * (another route's, or none), an answer when it does but cannot be read (400 for bad
   * percent-encoding, 414 for a segment over {@link MAX_PARAM_LENGTH} characters as sent).
   */
  match(path: string): Record<string, string> | Answer | undefined;
}

/** Compiles a pattern; throws `TypeError` for one the kit cannot match. */
export function routePattern(path: string): RoutePattern {
  if (!path.startsWith('/')) throw new TypeError(`a route path starts with "/": ${path}`);
  const pattern = path.split('/');
  for (const segment of pattern) {
    if (/[*?()]/.test(segment)) {
      throw new TypeError(`only static segments and :name parameters are supported: ${path}`);
    }
  }
  return {
    path,
    match(target) {
      const query = target.indexOf('?');
      const segments = (query === -1 ? target : target.slice(0, query)).split('/');
      if (segments.length !== pattern.length) return undefined;
      for (let i = 0; i < pattern.length; i++) {
        if (!pattern[i]!.startsWith(':') && pattern[i] !== segments[i]) return undefined;
      }
      const params: Record<string, string> = {};
      for (let i = 0; i < pattern.length; i++) {
        const expected = pattern[i]!;
        if (!expected.startsWith(':')) continue;
        const actual = segments[i]!;
        if (actual.length > MAX_PARAM_LENGTH) {
          return problemAnswer(414, PROBLEM.uriTooLong, {
            detail: `a path segment may be at most ${MAX_PARAM_LENGTH} characters`,
          });
        }
        let value: string;
        try {
          value = decodeURIComponent(actual);
        } catch {
          return problemAnswer(400, PROBLEM.badRequest, {
            detail: 'the path is not valid percent-encoding',
          });
        }
        // No text column of PostgreSQL stores a NUL: a handler passing the id on would fail.
        if (value.includes('\0')) {
          return problemAnswer(400, PROBLEM.badRequest, {
            detail: 'a path segment may not contain NUL (%00)',
          });
        }
        params[expected.slice(1)] = value;
      }
      return params;
    },
  };
}
