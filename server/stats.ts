/** What this process did for one principal (`GET /__stats`). */
export interface PrincipalCounters {
  /** Writes committed by this process: each is exactly one effect. */
  effects: number;
  /** Completed keys answered from the ledger (checks 1, 2 or 3). */
  replays: number;
  /** 409 `request-in-progress` answers. */
  inProgress: number;
  /** 412 `revision-conflict` answers. */
  conflicts: number;
  /** 422 `idempotency-key-reused` answers. */
  keyReused: number;
  /** Batch requests whose items ran (SPEC §15.1); the items count above as requests do. */
  batches: number;
}

/** What `GET /__stats?user=` reports for one principal: the counters and effects per key. */
export type PrincipalStats = PrincipalCounters & { effectsByKey: Record<string, number> };

type Counter = keyof PrincipalCounters;

/**
 * Per-process counters so end-to-end tests can assert "exactly one effect" per key (G2).
 * Counting per key is kept only when admin routes are on; several instances are summed by the
 * caller, or read from the store's {@link StoreSummary} which covers every instance.
 */
export class ServerStats {
  readonly #byPrincipal = new Map<string, PrincipalCounters>();
  readonly #effectsByKey = new Map<string, Map<string, number>>();
  readonly #perKey: boolean;

  constructor(options: { perKey: boolean }) {
    this.#perKey = options.perKey;
  }

  count(principal: string, counter: Counter): void {
    let counters = this.#byPrincipal.get(principal);
    if (!counters) {
      counters = { effects: 0, replays: 0, inProgress: 0, conflicts: 0, keyReused: 0, batches: 0 };
      this.#byPrincipal.set(principal, counters);
    }
    counters[counter]++;
  }

  /** Records one committed write for `key`. */
  effect(principal: string, key: string): void {
    this.count(principal, 'effects');
    if (!this.#perKey) return;
    let keys = this.#effectsByKey.get(principal);
    if (!keys) {
      keys = new Map();
      this.#effectsByKey.set(principal, keys);
    }
    keys.set(key, (keys.get(key) ?? 0) + 1);
  }

  /** Counters of one principal plus its effects per key. */
  principal(principal: string): PrincipalStats {
    const counters = this.#byPrincipal.get(principal) ?? {
      effects: 0,
      replays: 0,
      inProgress: 0,
      conflicts: 0,
      keyReused: 0,
      batches: 0,
    };
    return {
      ...counters,
      effectsByKey: Object.fromEntries(this.#effectsByKey.get(principal) ?? []),
    };
  }

  /** Counters summed over every principal. */
  total(): PrincipalCounters & { principals: number } {
    const total = {
      effects: 0,
      replays: 0,
      inProgress: 0,
      conflicts: 0,
      keyReused: 0,
      batches: 0,
      principals: 0,
    };
    for (const counters of this.#byPrincipal.values()) {
      total.principals++;
      for (const name of Object.keys(counters) as Counter[]) total[name] += counters[name];
    }
    return total;
  }

  reset(): void {
    this.#byPrincipal.clear();
    this.#effectsByKey.clear();
  }
}
