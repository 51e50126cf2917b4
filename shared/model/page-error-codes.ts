/**
 * The codes the page raises itself (argument checks, timeouts, a closed or missing worker), with
 * their hints: the only ones its first load carries. Every other error reaches the page from the
 * worker with its hint (SPEC §22: the page's budget).
 */
export const PAGE_ERROR_CODES = {
  invalid_intent: 'The intent did not match the enqueue schema; fix the call (see details.issues).',
  invalid_argument: 'An argument to an outbox call was malformed; see details for which and why.',
  invalid_id: 'Ids must match ^[A-Za-z0-9_-]{8,80}$; pass such an id or let the engine make one.',
  value_cyclic: 'A value refers to itself; pass JSON without cycles (details.path says where).',
  value_too_deep: 'A value nests deeper than 64 levels; flatten it (details.path says where).',
  invalid_value: 'A value is not plain JSON (a function, class instance, Date…); pass plain data.',
  timeout: 'The call did not answer in time; it is safe to call again.',
  worker_unavailable: 'No service worker answered; reload the page or check the registration.',
  closed: 'This outbox connection was closed; open a new one.',
} as const;
