import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // The server package imports the library by name; here that name is the source (tsconfig.json).
    alias: {
      'sw-outbox/wire': fileURLToPath(new URL('./shared/wire/protocol.ts', import.meta.url)),
    },
  },
  test: {
    include: ['tests/**/*.test.ts'],
    // The package checks and the server examples need a finished build:
    // vitest.package.config.ts runs them after it.
    exclude: ['tests/package/**', 'tests/examples/**', '**/node_modules/**'],
    setupFiles: ['fake-indexeddb/auto'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20_000,
  },
});
