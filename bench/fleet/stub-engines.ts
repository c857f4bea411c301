// Engines that do nothing, for the local operator config's embedded endpoints: the worker still
// resolves every run's endpoints through its real path (operator config -> factory -> per-worker
// cache -> instrumentation), but creates no ONNX sessions or trainer threads, which would cost
// the bench CPU that scheduling does not.
import type { EmbeddedEngines } from '@anneal/worker';

const NOT_USED = 'the fleet bench executor never samples or trains';

export const STUB_EMBEDDED: EmbeddedEngines = {
  inference: async () => ({
    sample: async () => {
      throw new Error(NOT_USED);
    },
    loadWeights: async () => undefined,
    close: async () => undefined,
  }),
  trainer: async ({ capabilities }) => ({
    capabilities,
    createModel: async () => {
      throw new Error(NOT_USED);
    },
    close: async () => undefined,
  }),
  rewardModel: async () => ({
    score: async () => {
      throw new Error(NOT_USED);
    },
    close: async () => undefined,
  }),
};
