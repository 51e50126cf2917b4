import { describe, expect, it } from 'vitest';
import { INSTALL_FAILED } from '../../client/first-worker.ts';
import noWorker, { diagnoseRegistration } from '../../client/no-worker.ts';
import { OutboxError } from '../../shared/model/errors.ts';

/** What browsers say when `navigator.serviceWorker.register` fails, and the cause it names. */
const MESSAGES: Array<[string, string]> = [
  [
    "Failed to register a ServiceWorker for scope ('http://127.0.0.1:5173/') with script ('http://127.0.0.1:5173/sw.js'): A bad HTTP response code (404) was received when fetching the script.",
    'not_found',
  ],
  [
    "Failed to register a ServiceWorker for scope ('http://127.0.0.1:5173/') with script ('http://127.0.0.1:5173/dev-sw.js?dev-sw'): ServiceWorker script evaluation failed",
    'script_error',
  ],
  [
    "Failed to register a ServiceWorker for scope ('http://127.0.0.1:5173/') with script ('http://127.0.0.1:5173/sw.js'): The script has an unsupported MIME type ('text/html').",
    'not_a_script',
  ],
  [
    "Failed to register a ServiceWorker: The path of the provided scope ('/') is not under the max scope allowed ('/js/'). Adjust the scope, move the Service Worker script, or use the Service-Worker-Allowed HTTP header to allow the scope.",
    'scope',
  ],
  [
    "Failed to register a ServiceWorker: The URL protocol of the current origin ('null') is not supported.",
    'refused',
  ],
  [
    'ServiceWorker script at http://127.0.0.1:5173/sw.js for scope http://127.0.0.1:5173/ threw an exception during script evaluation.',
    'script_error',
  ],
  [
    'Failed to register/update a ServiceWorker for scope ‘http://127.0.0.1:5173/’: Load failed with status 404 for script ‘http://127.0.0.1:5173/sw.js’.',
    'not_found',
  ],
  [
    'Failed to register/update a ServiceWorker for scope ‘http://127.0.0.1:5173/’: Bad Content-Type of ‘text/html’ received for script ‘http://127.0.0.1:5173/sw.js’. Must be a JavaScript MIME type.',
    'not_a_script',
  ],
  ['The operation is insecure.', 'insecure'],
  [
    'ServiceWorker script at http://127.0.0.1:5173/sw.js for scope http://127.0.0.1:5173/ encountered an error during installation.',
    'install_failed',
  ],
  [INSTALL_FAILED, 'install_failed'],
];

describe('diagnoseRegistration', () => {
  it.each(MESSAGES)('%s → %s', (message, cause) => {
    expect(diagnoseRegistration(new TypeError(message)).cause).toBe(cause);
  });

  it('says "unsupported" when there was no registration to fail', () => {
    expect(diagnoseRegistration(undefined).cause).toBe('unsupported');
  });

  it('gives every cause its own hint', () => {
    const hints = new Set(
      [...MESSAGES.map(([m]) => new TypeError(m)), undefined].map(
        (reason) => diagnoseRegistration(reason).hint,
      ),
    );
    expect(hints.size).toBe(new Set([...MESSAGES.map(([, c]) => c), 'unsupported']).size);
  });
});

describe('noWorker', () => {
  it('is a worker_unavailable error carrying the browser reason, its cause and its hint', () => {
    const reason = new TypeError(MESSAGES[1]![0]);
    const error = noWorker(reason, OutboxError);
    expect(error).toBeInstanceOf(OutboxError);
    expect(error.code).toBe('worker_unavailable');
    expect(error.message).toContain('ServiceWorker script evaluation failed');
    expect(error.details).toEqual({
      cause: 'script_error',
      reason: `TypeError: ${reason.message}`,
    });
    expect(error.hint).toContain('devOptions.navigateFallback');
  });

  it('says service workers are missing when the browser has none', () => {
    const error = noWorker(undefined, OutboxError);
    expect(error.message).toContain('service workers are not available');
    expect(error.hint).toContain('pageSender');
  });
});
