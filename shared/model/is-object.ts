/** An object that is not an array; false for a revoked proxy, whose every inspection throws. */
export function isObject(value: unknown): value is Record<string, unknown> {
  try {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
