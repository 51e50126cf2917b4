import { expose } from 'comlink';
import {
  CONNECT_MESSAGE,
  type ConnectMessage,
  isOutboxMessage,
  PING_MESSAGE,
  type PingMessage,
  PONG_MESSAGE,
  type PongMessage,
  REFUSED_MESSAGE,
  type RefusedMessage,
  STARTED_MESSAGE,
  type StartedMessage,
} from '../shared/model/connection.ts';
import { text } from '../shared/model/schema-kit.ts';
import { installComlinkErrors } from '../shared/runtime/comlink-errors.ts';
import type { Endpoint } from '../shared/runtime/endpoint.ts';
import { openEndpoint } from '../shared/runtime/open-endpoint.ts';
import { changeChannelName, DEFAULT_DB_NAME } from '../shared/store/schema.ts';
import type { EngineContext } from './context.ts';

/**
 * Accepts page connections (SPEC §13): a `sw-outbox.connect` message from a same-origin window
 * client carries a `MessagePort`; the worker exposes one endpoint on it, bound to the owner the
 * page named, and records the owner so later flushes serve it with no tab open (§12).
 *
 * Worker restarts must be invisible to pages (§13.1), and a page cannot see one by itself: the
 * port to a stopped instance stays open and silently drops every message, and no browser here
 * fires a `close` event on it (Chromium 156, Firefox 153 and WebKitGTK 2.50 have none on
 * `MessagePort`). So this side says who it is in two ways: every start is announced to the
 * origin's windows (a page connected to another holder id re-handshakes at once), and a ping
 * sent to the worker itself — an event, so it starts a stopped worker — is answered with the
 * holder id of the instance that runs now.
 */

const ownerSchema = text(1, 200);

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

  announceStart(scope, ctx.holderId);
  const changes = changeChannelName(ctx.config.dbName ?? DEFAULT_DB_NAME);

  scope.addEventListener('message', (event) => {
    if (isOutboxMessage<PingMessage>(event.data, PING_MESSAGE)) {
      event.ports[0]?.postMessage({
        type: PONG_MESSAGE,
        holderId: ctx.holderId,
      } satisfies PongMessage);
      return;
    }
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
          const endpoint = await openEndpoint(ctx, owner.data, changes);
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

/**
 * Tells every window of the origin that a new instance runs (§13.1). Uncontrolled windows too: a
 * page may talk to the registration's active worker before it is claimed. Pages still connected
 * to the previous instance learn here that their port is dead, before they make a call.
 */
function announceStart(scope: ServiceWorkerGlobalScope, holderId: string): void {
  const message: StartedMessage = { type: STARTED_MESSAGE, holderId };
  scope.clients
    .matchAll({ type: 'window', includeUncontrolled: true })
    .then((clients) => {
      for (const client of clients) client.postMessage(message);
    })
    .catch(() => undefined);
}
