/** A lazily started, shared async value; a failed start is retried on the next call. */
export function lazy<T>(start: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    value ??= start().catch((error: unknown) => {
      value = undefined;
      throw error;
    });
    return value;
  };
}
