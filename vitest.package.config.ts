import { defineConfig } from 'vitest/config';

/**
 * The checks of what ships (SPEC §22), run by `npm test` after the build: the packed tarballs,
 * an install as an app makes it, publint, arethetypeswrong and the size budgets; and the server
 * examples (SPEC §22.1), which run on the built server package.
 */
export default defineConfig({
  test: {
    include: ['tests/package/**/*.test.ts', 'tests/examples/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
