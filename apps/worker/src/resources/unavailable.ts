// Stand-ins for engines a run kind does not use (an sft run has no inference endpoint, an eval
// run no trainer): RunResources always has both, and a call explains which endpoint is missing.
import type { InferenceEngine, TrainerEngine } from '@anneal/engines';
import { RunSetupError } from '../errors.ts';

function missing(kind: string, what: 'inference' | 'trainer'): never {
  throw new RunSetupError(
    `this ${kind} run has no ${what} endpoint (set endpoints.${what} in the run spec or ` +
      `defaults.${what} in the operator config)`,
  );
}

export function missingInference(kind: string): InferenceEngine {
  return {
    sample: async () => missing(kind, 'inference'),
    loadWeights: async () => missing(kind, 'inference'),
    close: async () => undefined,
  };
}

export function missingTrainer(kind: string): TrainerEngine {
  return {
    capabilities: { kinds: [], losses: [], reduction: 'sum' },
    createModel: async () => missing(kind, 'trainer'),
    close: async () => undefined,
  };
}
