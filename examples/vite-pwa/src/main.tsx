import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { connectOutbox } from 'sw-outbox/client';
import { OutboxProvider } from 'sw-outbox/react';
import { App } from './App.tsx';
import { AUTHORIZATION, USER } from './api.ts';

// In `vite dev` the plugin serves the worker as a module at /dev-sw.js?dev-sw; a build emits a
// classic script at /sw.js (rollupFormat: 'iife').
const outbox = connectOutbox({
  swUrl: import.meta.env.DEV ? '/dev-sw.js?dev-sw' : '/sw.js',
  type: import.meta.env.DEV ? 'module' : 'classic',
  owner: USER,
}).then(async (outbox) => {
  // The worker adds these headers to each request it sends; rows never store them. `persist`:
  // a worker the browser restarted after every tab closed can still send.
  await outbox.setAuth({ authorization: AUTHORIZATION }, { persist: true });
  return outbox;
});

const failed = (error: unknown) => (
  <p role="alert">
    The outbox could not start: {error instanceof Error ? error.message : String(error)}
  </p>
);

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <OutboxProvider outbox={outbox} fallback={<p role="status">Connecting…</p>} onError={failed}>
      <App />
    </OutboxProvider>
  </StrictMode>,
);
