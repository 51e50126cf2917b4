import { expose } from 'comlink';
import {
  CONNECT_MESSAGE,
  type ConnectMessage,
  isOutboxMessage,
  REFUSED_MESSAGE,
  type RefusedMessage,
} from '../shared/model/connection.ts';
import { z } from '../shared/model/schema-kit.ts';
import { installComlinkErrors } from '../shared/runtime/comlink-errors.ts';
import type { Endpoint } from '../shared/runtime/endpoint.ts';
import { openEndpoint } from '../shared/runtime/open-endpoint.ts';
import type { EngineContext } from './context.ts';

/**
 * Accepts page connections (SPEC §13): a `sw-outbox.connect` message from a same-origin window
 * client carries a `MessagePort`; the worker exposes one endpoint on it, bound to the owner the
 * page named, and records the owner so later flushes serve it with no tab open (§12).
 */

const ownerSchema = z.string().check(z.minLength(1), z.maxLength(200));

/**
 * Serves the page API on every `sw-outbox.connect` port from a same-origin window (§13), one
 * endpoint per connection bound to its owner.
 */
export function acceptConnections(scope: ServiceWorkerGlobalScope, ctx: EngineContext): void {
  installComlinkErrors();
  const open = new Map<Endpoint, string>();

  /** Drops the connections of tabs that are gone: their ports will never answer. */
  const sweep = async () => {
    for (const [endpoint, clientId] of open) {
      if ((await scope.clients.get(clientId)) === undefined) {
        endpoint.dispose();
        open.delete(endpoint);
      }
    }
  };

  scope.addEventListener('message', (event) => {
    if (!isOutboxMessage<ConnectMessage>(event.data, CONNECT_MESSAGE)) return;
    const port = event.ports[0];
    if (port === undefined) return;
    const refuse = (code: string, message: string) => {
      port.postMessage({ type: REFUSED_MESSAGE, code, message } satisfies RefusedMessage);
      port.close();
    };
    const source = event.source;
    if (!(source instanceof WindowClient) || new URL(source.url).origin !== scope.location.origin) {
      refuse('worker_unavailable', 'connections are accepted only from same-origin windows');
      return;
    }
    const owner = ownerSchema.safeParse(event.data.owner);
    if (!owner.success) {
      refuse('invalid_intent', 'owner must be a non-empty string');
      return;
    }
    event.waitUntil(
      (async () => {
        try {
          const endpoint = await openEndpoint(ctx, owner.data);
          open.set(endpoint, source.id);
          expose(endpoint.api, port);
        } catch (error) {
          refuse('storage', `the outbox could not open: ${String(error)}`);
        }
        await sweep();
      })(),
    );
  });
}
