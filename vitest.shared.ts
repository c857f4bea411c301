import { defineConfig } from 'vitest/config';

/** Shared vitest settings; each workspace's vitest.config.ts re-exports this. */
export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
