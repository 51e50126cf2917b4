/**
 * NUL, or a UTF-16 surrogate without its partner. PostgreSQL `text` cannot hold NUL, and a lone
 * surrogate has no UTF-8 form (SQLite and PostgreSQL would each store a different replacement,
 * while the stored replay kept the escape), so neither is stored anywhere.
 */
const UNSTORABLE_TEXT = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether every adapter stores `text` exactly as given (see {@link UNSTORABLE_TEXT}). */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE_TEXT.test(text);
}
