import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

// Tests run the TypeScript sources of every workspace, never a stale dist/: each workspace's
// package.json exports its sources under the "@anneal/source" condition (tsconfig.base.json's
// customConditions does the same for the type-checker).
const conditions = ['@anneal/source', ...defaultServerConditions];

/** Shared vitest settings; each workspace's vitest.config.ts re-exports this. */
export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
