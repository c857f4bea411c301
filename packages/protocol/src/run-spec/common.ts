// Sections shared by several run kinds. Every default here is documented in docs/api.md
// ("Run spec reference"); a test checks each path appears there.
import { Type, type Static } from '@sinclair/typebox';
import { CheckpointRetention } from '../checkpoints.ts';
import { CATALOG_NAME_PATTERN, Labels, RESOURCE_NAME_PATTERN, RunId } from '../names.ts';
import { GuardrailsSection } from './guardrails.ts';
import { RunBudget } from '../usage.ts';

export const RUN_KINDS = ['sft', 'rm', 'grpo', 'eval'] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/** Where a run's weights start: an earlier run's checkpoint, or a registered base model. */
export const ModelRef = Type.Object(
  {
    checkpoint: Type.Optional(
      Type.Object(
        {
          run: RunId,
          step: Type.Optional(
            Type.Integer({
              minimum: 0,
              description:
                "A kept checkpoint of that run (GET /v1/runs/{id}/checkpoints); omitted: the run's final checkpoint.",
            }),
          ),
          loadOptimizer: Type.Optional(
            Type.Boolean({
              description:
                "Also load that checkpoint's optimizer state (Adam moments and step count) — continuing that run's optimization. Omitted or false: its weights only, with a fresh optimizer (moments 0, step 0), as a new run starts; a resume of the same run always restores both. Eval models ignore it.",
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            "Start from this run's checkpoint (same tenant): its final one, or the one at `step` (a fork).",
        },
      ),
    ),
    base: Type.Optional(
      Type.String({
        pattern: CATALOG_NAME_PATTERN,
        description: 'Name of a base model registered in the operator config (`baseModels`).',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'Exactly one of `checkpoint` or `base`. Omitted: the operator default base model.',
  },
);
export type ModelRef = Static<typeof ModelRef>;

function endpointName(description: string) {
  return Type.String({ pattern: RESOURCE_NAME_PATTERN, description });
}

/** Named endpoints a run uses; names resolve to URLs only inside the operator config. */
export const EndpointRefs = Type.Object(
  {
    inference: Type.Optional(
      endpointName('Inference endpoint (operator `inference`), vLLM or embedded.'),
    ),
    trainer: Type.Optional(endpointName('Trainer endpoint (operator `trainers`).')),
    search: Type.Optional(
      endpointName('Search backend for the search_web tool (operator `search`).'),
    ),
    rewardModel: Type.Optional(endpointName('Preference model (operator `rewardModels`).')),
    judge: Type.Optional(
      endpointName(
        'LLM judge (operator `judges`): grpo rubrics without a programmatic check; eval answers with `judge: llm`.',
      ),
    ),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'Named endpoints (never URLs). Omitted names take the operator defaults; rewardModel omitted and no default means preference score s = 1 (docs/recipe.md §4).',
  },
);
export type EndpointRefs = Static<typeof EndpointRefs>;

/** Fields every run kind has. */
export const commonFields = {
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'Display name.' })),
  pool: Type.Optional(
    Type.String({
      pattern: RESOURCE_NAME_PATTERN,
      description: 'Worker pool to run on. Omitted: the operator default pool.',
    }),
  ),
  priority: Type.Integer({
    minimum: 0,
    maximum: 100,
    default: 50,
    description: 'Scheduling priority within the pool queue, 0 (lowest) to 100 (highest).',
  }),
  labels: Labels,
  model: Type.Optional(ModelRef),
  endpoints: EndpointRefs,
  seed: Type.Integer({
    minimum: 0,
    maximum: 2 ** 31 - 1,
    default: 0,
    description: 'Seed of every RNG the run uses (prompt sampling, anchors, sampling seeds).',
  }),
  budget: Type.Optional(RunBudget),
};

/** One weighted data source; weights are normalised over the mix (docs/recipe.md §3 "Prompt mix"). */
export const DataSource = Type.Object(
  {
    source: Type.String({
      pattern: CATALOG_NAME_PATTERN,
      description: 'Dataset name known to the worker (packages/envs).',
    }),
    weight: Type.Number({ exclusiveMinimum: 0, description: 'Relative sampling weight (> 0).' }),
  },
  { additionalProperties: false },
);
export type DataSource = Static<typeof DataSource>;

export function dataSection(defaultMix: DataSource[], description: string) {
  return Type.Object(
    {
      mix: Type.Array(DataSource, {
        minItems: 1,
        maxItems: 32,
        default: defaultMix,
        description,
      }),
    },
    { additionalProperties: false, default: {} },
  );
}

/** Adam(W) settings passed to the trainer's `optim_step` (docs/engines.md). */
export function optimizerSection(defaultLearningRate: number) {
  return Type.Object(
    {
      learningRate: Type.Number({
        exclusiveMinimum: 0,
        maximum: 1,
        default: defaultLearningRate,
        description: 'Adam learning rate.',
      }),
      beta1: Type.Number({
        minimum: 0,
        exclusiveMaximum: 1,
        default: 0.9,
        description: 'Adam β1.',
      }),
      beta2: Type.Number({
        minimum: 0,
        exclusiveMaximum: 1,
        default: 0.95,
        description: 'Adam β2.',
      }),
      eps: Type.Number({ exclusiveMinimum: 0, default: 1e-8, description: 'Adam ε.' }),
      weightDecay: Type.Number({ minimum: 0, default: 0, description: 'Decoupled weight decay.' }),
      gradClipNorm: Type.Number({
        minimum: 0,
        default: 1,
        description: 'Clip the global gradient L2 norm to this value; 0 disables clipping.',
      }),
    },
    { additionalProperties: false, default: {} },
  );
}

export const LoraSection = Type.Object(
  {
    rank: Type.Integer({ minimum: 1, maximum: 1024, default: 32, description: 'LoRA rank.' }),
  },
  { additionalProperties: false, default: {} },
);

/** Steps + checkpoint cadence shared by training kinds. */
export function trainingFields(defaultSteps: number, defaultLearningRate: number) {
  return {
    steps: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: defaultSteps,
      description: 'Optimizer steps to run.',
    }),
    checkpointInterval: Type.Integer({
      minimum: 1,
      default: 10,
      description: 'Checkpoint every N steps (the final step is always checkpointed).',
    }),
    checkpointRetention: Type.Optional(CheckpointRetention),
    optimizer: optimizerSection(defaultLearningRate),
    lora: LoraSection,
    guardrails: GuardrailsSection,
  };
}

/** The search_web tool's limits, defined once for the run-spec schemas (grpo `tools`, eval
 * `budgets`) and the tool itself (packages/envs `resolveLimits`), under the spec's field names.
 * Caps: docs/recipe.md §6 (≤ 10 results per call, query ≤ 250 characters); calls per rollout go
 * up to 100 for budget sweeps (docs/recipe.md §8). The tool refuses anything above them, so the
 * schemas do too. */
export const TOOL_LIMIT_CAPS = {
  resultsPerCall: 10,
  maxQueryLength: 250,
  maxCallsPerRollout: 100,
} as const;

/** What a run gets for a limit it leaves out (docs/recipe.md §6: ≤ 5 calls per rollout). */
export const TOOL_LIMIT_DEFAULTS = {
  resultsPerCall: 10,
  maxQueryLength: 250,
  maxCallsPerRollout: 5,
} as const;

/** search_web limits (docs/recipe.md §6: ≤ 10 results per call, query ≤ 250 chars, ≤ 5 calls). */
export const ToolLimits = Type.Object(
  {
    resultsPerCall: Type.Integer({
      minimum: 1,
      maximum: TOOL_LIMIT_CAPS.resultsPerCall,
      default: TOOL_LIMIT_DEFAULTS.resultsPerCall,
      description: 'Maximum search results returned per search_web call.',
    }),
    maxQueryLength: Type.Integer({
      minimum: 1,
      maximum: TOOL_LIMIT_CAPS.maxQueryLength,
      default: TOOL_LIMIT_DEFAULTS.maxQueryLength,
      description: 'Maximum search query length in characters (longer queries are a failed call).',
    }),
    maxCallsPerRollout: Type.Integer({
      minimum: 0,
      maximum: TOOL_LIMIT_CAPS.maxCallsPerRollout,
      default: TOOL_LIMIT_DEFAULTS.maxCallsPerRollout,
      description: 'Maximum tool calls per rollout.',
    }),
  },
  { additionalProperties: false, default: {} },
);
export type ToolLimits = Static<typeof ToolLimits>;
