import { rememberOwner } from '../core/known-owners.ts';
import { BUNDLE_VERSION } from '../core/outbox-core.ts';
import { createRowFeed } from '../core/row-feed.ts';
import { createEndpoint, type Endpoint } from './endpoint.ts';
import type { Sender } from './sender.ts';

/**
 * Opens one connection's endpoint on a sender (SPEC §13), the same way in the worker and in the
 * page sender: the owner is recorded first, so a worker serves it later with every tab closed
 * (§12), then the core's owner API and a live row feed are bound to it.
 */
export async function openEndpoint(
  sender: Pick<
    Sender,
    'core' | 'store' | 'holderId' | 'credentials' | 'clock' | 'progress' | 'bounds' | 'recorder'
  >,
  owner: string,
  /** The store's change-notice channel, told to the page (§13.1). */
  changes?: string,
): Promise<Endpoint> {
  const [core, store] = await Promise.all([sender.core(), sender.store()]);
  await rememberOwner(store, owner);
  const api = core.forOwner(owner);
  return createEndpoint({
    owner,
    holderId: sender.holderId,
    bundle: BUNDLE_VERSION,
    api,
    feed: createRowFeed(api, store, owner),
    credentials: sender.credentials,
    sender,
    ...(changes === undefined ? {} : { changes }),
  });
}
