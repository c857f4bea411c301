// Operator caps on the sizes a run spec asks for (operator config `limits`). The schema maxima
// are what the code can represent; these are what one worker can hold: a GRPO spec of
// groupSize 1024 × promptsPerStep 65,536 × maxTokens 1,048,576 passes the schema and would grow
// the worker past any memory. Checked at submission: 400 ANNEAL_ERR_RUN_SPEC_OVER_LIMIT naming
// the field and the cap.
import { Type, type Static } from '@sinclair/typebox';
import type { Issue } from './issue.ts';
import type { RunSpec } from './run-spec/index.ts';

/**
 * Bytes the worker holds per token of a step, for the memory estimate: a token id, the sampler's
 * and the trainer's logprobs, the reference logprob, the advantage and the mask, each a JS
 * number (8 bytes).
 */
export const STEP_BYTES_PER_TOKEN = 48;

export const SpecLimitsConfig = Type.Object(
  {
    rolloutsPerStep: Type.Integer({
      minimum: 1,
      default: 4096,
      description:
        'GRPO: most rollouts one step samples (rollout.groupSize × rollout.promptsPerStep).',
    }),
    tokensPerRollout: Type.Integer({
      minimum: 1,
      default: 32_768,
      description:
        'Most tokens one rollout or answer may generate (GRPO rollout.maxTokens, eval budgets.maxOutputTokens).',
    }),
    examplesPerStep: Type.Integer({
      minimum: 1,
      default: 1024,
      description: 'SFT / RM: most examples one step trains on (batchSize).',
    }),
    tokensPerExample: Type.Integer({
      minimum: 1,
      default: 32_768,
      description: 'SFT / RM: most tokens of one example (maxSeqLen).',
    }),
    stepMemoryBytes: Type.Integer({
      minimum: 1,
      default: 1_073_741_824,
      description: `Most bytes a step's token buffers may take by the estimate sequences × tokens × ${STEP_BYTES_PER_TOKEN} (GRPO: rollouts per step × maxTokens; SFT: batchSize × maxSeqLen; RM: 2 × batchSize × maxSeqLen).`,
    }),
    datasetFileBytes: Type.Integer({
      minimum: 1,
      default: 268_435_456,
      description:
        'Largest registered dataset file (datasets[].path) the control plane and workers read.',
    }),
    datasetLineBytes: Type.Integer({
      minimum: 1,
      default: 1_048_576,
      description: 'Longest line (one row) of a registered dataset file.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description: 'Caps on the sizes a run spec asks for and on registered dataset files.',
  },
);
export type SpecLimitsConfig = Static<typeof SpecLimitsConfig>;

function over(
  path: string,
  what: string,
  value: number,
  cap: keyof SpecLimitsConfig,
  limit: number,
): Issue {
  return {
    path,
    message: `${what} ${value} is over the operator cap limits.${cap} = ${limit}`,
  };
}

/** Issues for every size of `spec` over `limits` (empty: within them). */
export function checkSpecLimits(spec: RunSpec, limits: SpecLimitsConfig): Issue[] {
  const issues: Issue[] = [];
  const memory = (path: string, sequences: number, tokens: number) => {
    const bytes = sequences * tokens * STEP_BYTES_PER_TOKEN;
    if (bytes > limits.stepMemoryBytes) {
      issues.push(
        over(
          path,
          `a step's estimated memory (bytes)`,
          bytes,
          'stepMemoryBytes',
          limits.stepMemoryBytes,
        ),
      );
    }
  };
  switch (spec.kind) {
    case 'grpo': {
      const { groupSize, promptsPerStep, maxTokens } = spec.rollout;
      const rollouts = groupSize * promptsPerStep;
      if (rollouts > limits.rolloutsPerStep) {
        issues.push(
          over(
            '/rollout/promptsPerStep',
            `rollouts per step (groupSize ${groupSize} × promptsPerStep ${promptsPerStep})`,
            rollouts,
            'rolloutsPerStep',
            limits.rolloutsPerStep,
          ),
        );
      }
      if (maxTokens > limits.tokensPerRollout) {
        issues.push(
          over(
            '/rollout/maxTokens',
            'maxTokens',
            maxTokens,
            'tokensPerRollout',
            limits.tokensPerRollout,
          ),
        );
      }
      memory('/rollout', rollouts, maxTokens);
      break;
    }
    case 'sft':
    case 'rm': {
      if (spec.batchSize > limits.examplesPerStep) {
        issues.push(
          over(
            '/batchSize',
            'batchSize',
            spec.batchSize,
            'examplesPerStep',
            limits.examplesPerStep,
          ),
        );
      }
      if (spec.maxSeqLen > limits.tokensPerExample) {
        issues.push(
          over(
            '/maxSeqLen',
            'maxSeqLen',
            spec.maxSeqLen,
            'tokensPerExample',
            limits.tokensPerExample,
          ),
        );
      }
      memory('/batchSize', (spec.kind === 'rm' ? 2 : 1) * spec.batchSize, spec.maxSeqLen);
      break;
    }
    case 'eval': {
      const tokens = spec.budgets.maxOutputTokens;
      if (tokens > limits.tokensPerRollout) {
        issues.push(
          over(
            '/budgets/maxOutputTokens',
            'maxOutputTokens',
            tokens,
            'tokensPerRollout',
            limits.tokensPerRollout,
          ),
        );
      }
      break;
    }
  }
  return issues;
}
