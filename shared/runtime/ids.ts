import type { IdSource } from '../model/ports.ts';

/**
 * Randomness from `crypto`: 24 lowercase hex characters from `crypto.randomUUID()` (SPEC §9)
 * with its fixed version and variant nibbles removed, and jitter from `getRandomValues`.
 */
export const cryptoIds: IdSource = {
  hex24() {
    const hex = crypto.randomUUID().replaceAll('-', '');
    // Positions 12 (version) and 16 (variant) are not random in a v4 UUID.
    return (hex.slice(0, 12) + hex.slice(13, 16) + hex.slice(17)).slice(0, 24);
  },
  random() {
    return crypto.getRandomValues(new Uint32Array(1))[0]! / 2 ** 32;
  },
};
