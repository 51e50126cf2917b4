import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    setupFiles: ['fake-indexeddb/auto'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20_000,
  },
});
