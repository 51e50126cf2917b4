import { z } from 'zod';

/**
 * Fault injection for tests and the demo (SPEC §15), off unless rules are added. Rules match
 * requests by route and user; each fires at most `count` times (unlimited when omitted), each
 * time with probability `rate` (1 when omitted).
 *
 * Body shape of `POST /__faults` (one rule, or `{ "rules": [ … ] }`):
 * ```
 * { "kind": "drop-after-commit", "route"?: RouteSelector, "user"?: string, "count"?: n, "rate"?: p }
 *     the write commits, then the socket is destroyed instead of answering
 * { "kind": "delay", "ms": n, "phase"?: "before-commit" | "after-commit", route, user, count, rate }
 *     hold the request (before-commit: the key is in progress, copies get 409) for `ms`, or
 *     until `POST /__faults/release` lets it go
 * { "kind": "unavailable", "status"?: 503 | 429, "retryAfter"?: seconds, route, user, count, rate }
 *     answer before auth and before the ledger; nothing is stored
 * ```
 * `RouteSelector` is `"*"` (every `/api/` route, the default), `"write"` (POST, PATCH, DELETE
 * under `/api/`), or `"<METHOD> <route pattern>"`, e.g. `"PATCH /api/notes/:id"`.
 *
 * Batches (SPEC §15.1): each item is matched as the request it stands for (`"*"`, `"write"`,
 * `"POST /api/notes"`, …), the batch request itself only by its own route (`"POST /sync/batch"`).
 * A rule acts where it can: `unavailable` on an item answers that item (503/429), on the batch
 * the whole batch; `delay` on items or the batch holds the batch's writes (before-commit: the
 * longest delay, with every key of the batch in progress) or its answer (after-commit);
 * `drop-after-commit` on an applied item or on a batch with an applied item loses the whole
 * batch answer after its writes committed.
 */
export const FaultRuleInputSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('drop-after-commit'),
    ...commonFields(),
  }),
  z.strictObject({
    kind: z.literal('delay'),
    ms: z.number().int().min(0).max(120_000),
    phase: z.enum(['before-commit', 'after-commit']).default('before-commit'),
    ...commonFields(),
  }),
  z.strictObject({
    kind: z.literal('unavailable'),
    status: z.union([z.literal(503), z.literal(429)]).default(503),
    retryAfter: z.number().int().min(0).max(3600).default(1),
    ...commonFields(),
  }),
]);

function commonFields() {
  return {
    route: z.string().min(1).max(200).default('*'),
    user: z.string().min(1).max(64).optional(),
    count: z.number().int().min(1).optional(),
    rate: z.number().min(0).max(1).default(1),
  };
}

/** A rule as submitted. */
export type FaultRuleInput = z.input<typeof FaultRuleInputSchema>;
/** A rule with defaults applied, as stored. */
export type FaultRuleSpec = z.output<typeof FaultRuleInputSchema>;
/** A stored rule: its spec, an id and how often it has fired. */
export type FaultRule = FaultRuleSpec & { id: number; fired: number };

/** What a request looks like to the matcher. */
export interface FaultTarget {
  method: string;
  /** The route pattern, e.g. `/api/notes/:id`. */
  route: string;
  user: string | undefined;
  /** The batch request itself (SPEC §15.1): matched only by its own `"<METHOD> <route>"`. */
  batch?: boolean;
}

/** The per-process fault registry. */
export class FaultInjector {
  #rules: FaultRule[] = [];
  #nextId = 1;
  readonly #random: () => number;
  readonly #held = new Set<{ user: string | undefined; release: () => void }>();

  constructor(options: { random?: () => number } = {}) {
    this.#random = options.random ?? Math.random;
  }

  /** Adds rules (validated by {@link FaultRuleInputSchema}); returns them with their ids. */
  add(inputs: readonly FaultRuleInput[]): FaultRule[] {
    const added = inputs.map((input) => ({
      ...FaultRuleInputSchema.parse(input),
      id: this.#nextId++,
      fired: 0,
    }));
    this.#rules.push(...added);
    return added;
  }

  list(): FaultRule[] {
    return this.#rules.map((rule) => ({ ...rule }));
  }

  /** Removes every rule, or only the rules of `user`; returns how many were removed. */
  clear(user?: string): number {
    const before = this.#rules.length;
    this.#rules = user === undefined ? [] : this.#rules.filter((rule) => rule.user !== user);
    return before - this.#rules.length;
  }

  /** Removes one rule by id; `false` when there is no such rule (it may have fired out). */
  remove(id: number): boolean {
    const before = this.#rules.length;
    this.#rules = this.#rules.filter((rule) => rule.id !== id);
    return this.#rules.length < before;
  }

  /**
   * Holds a request for a `delay` rule: `ms`, or until {@link release} lets it go, so a test can
   * act while a request is known to be in flight and end the wait without sleeping it out.
   */
  hold(ms: number, user: string | undefined): Promise<void> {
    return new Promise((resolve) => {
      const entry = {
        user,
        release: () => {
          clearTimeout(timer);
          this.#held.delete(entry);
          resolve();
        },
      };
      const timer = setTimeout(entry.release, ms);
      this.#held.add(entry);
    });
  }

  /** Lets the held requests of `user` (every user's when omitted) go now; returns how many. */
  release(user?: string): number {
    const entries = [...this.#held].filter((e) => user === undefined || e.user === user);
    for (const entry of entries) entry.release();
    return entries.length;
  }

  /** Whether any rule exists: the hot path skips matching entirely when none do. */
  get active(): boolean {
    return this.#rules.length > 0;
  }

  /**
   * The first rule of `kind` that matches `target` and fires now (counting it), if any. A rule
   * whose count is used up is removed.
   */
  take<K extends FaultRule['kind']>(
    kind: K,
    target: FaultTarget,
  ): Extract<FaultRule, { kind: K }> | undefined {
    for (const rule of this.#rules) {
      if (rule.kind !== kind || !matches(rule, target)) continue;
      if (rule.rate < 1 && this.#random() >= rule.rate) continue;
      rule.fired++;
      if (rule.count !== undefined && rule.fired >= rule.count) {
        this.#rules = this.#rules.filter((other) => other !== rule);
      }
      return rule as Extract<FaultRule, { kind: K }>;
    }
    return undefined;
  }
}

function matches(rule: FaultRule, target: FaultTarget): boolean {
  if (rule.user !== undefined && rule.user !== target.user) return false;
  const api = !target.batch && target.route.startsWith('/api/');
  if (rule.route === '*') return api;
  if (rule.route === 'write') return api && target.method !== 'GET' && target.method !== 'HEAD';
  return rule.route === `${target.method} ${target.route}`;
}
