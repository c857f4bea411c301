import { defineConfig, mergeConfig } from 'vitest/config';
import shared from '../../vitest.shared.ts';

// The console's unit tests (its pure parts: routing, formatting, chart scales, the SSE parser)
// sit beside its sources in console/src; the browser tests of the whole are in test/.
export default mergeConfig(
  shared,
  defineConfig({
    // mergeConfig appends arrays: this adds to the shared src/ and test/ patterns.
    test: { include: ['console/src/**/*.test.ts'] },
  }),
);
