/**
 * Keys being processed by this process right now, with the fingerprint of the request holding
 * each. A copy that arrives meanwhile gets 409 `request-in-progress` (SPEC §15) instead of
 * queueing behind the first. Across processes the ledger's primary key does the same job: the
 * second copy's claim waits for the first transaction and then finds the key completed.
 */
export class InflightKeys {
  readonly #keys = new Map<string, string>();

  /** The fingerprint of the request holding `key`, if one is in progress here. */
  get(principal: string, key: string): string | undefined {
    return this.#keys.get(`${principal}\n${key}`);
  }

  /** Marks `key` in progress; `false` when another request already holds it. */
  acquire(principal: string, key: string, fingerprint: string): boolean {
    const id = `${principal}\n${key}`;
    if (this.#keys.has(id)) return false;
    this.#keys.set(id, fingerprint);
    return true;
  }

  release(principal: string, key: string): void {
    this.#keys.delete(`${principal}\n${key}`);
  }

  get size(): number {
    return this.#keys.size;
  }
}
