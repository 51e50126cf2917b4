import { useEffect, useRef } from 'react';
import { defineOutboxInspector } from 'sw-outbox/inspector';
import { useOutbox } from 'sw-outbox/react';

/**
 * `<outbox-inspector>` (sw-outbox/inspector) for the connected outbox: rows with their status,
 * receipts, conflicts, health, retry and discard. App.tsx loads this file only behind its flag.
 */
export default function Inspector() {
  const outbox = useOutbox();
  const host = useRef<HTMLElement>(null);
  useEffect(() => {
    defineOutboxInspector();
    const inspector = document.createElement('outbox-inspector');
    inspector.outbox = outbox;
    host.current?.append(inspector);
    return () => inspector.remove();
  }, [outbox]);
  return (
    <section aria-label="Outbox inspector" ref={host}>
      <h2>Outbox</h2>
    </section>
  );
}
