// Evaluation with the budget-forced protocol (docs/recipe.md §6, §8).
import { Type, type Static } from '@sinclair/typebox';
import { ModelRef, TOOL_LIMIT_CAPS, TOOL_LIMIT_DEFAULTS, commonFields } from './common.ts';
import { CATALOG_NAME_PATTERN } from '../names.ts';

const DEFAULT_BUDGETS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

export const EvalBudgets = Type.Object(
  {
    toolCallBudgets: Type.Array(
      Type.Integer({ minimum: 0, maximum: TOOL_LIMIT_CAPS.maxCallsPerRollout }),
      {
        minItems: 1,
        maxItems: 101,
        uniqueItems: true,
        default: DEFAULT_BUDGETS,
        description: 'Budget-forced sweep: hard caps b on tool calls, one accuracy point per b.',
      },
    ),
    statePrompt: Type.Boolean({
      default: true,
      description:
        'State the cap b at the start of each prompt. false: the tool still refuses calls past b; for models trained without the statement (the embedded demo model).',
    }),
    maxToolCalls: Type.Integer({
      minimum: 0,
      maximum: TOOL_LIMIT_CAPS.maxCallsPerRollout,
      default: 5,
      description:
        'Headline budget: the run summary reports this b (when swept, else the largest swept b).',
    }),
    resultsPerCall: Type.Integer({
      minimum: 1,
      maximum: TOOL_LIMIT_CAPS.resultsPerCall,
      default: TOOL_LIMIT_DEFAULTS.resultsPerCall,
      description: 'Search results per call.',
    }),
    maxQueryLength: Type.Integer({
      minimum: 1,
      maximum: TOOL_LIMIT_CAPS.maxQueryLength,
      default: TOOL_LIMIT_DEFAULTS.maxQueryLength,
      description: 'Maximum search query length in characters.',
    }),
    maxOutputTokens: Type.Integer({
      minimum: 1,
      maximum: 1_048_576,
      default: 8192,
      description: 'Maximum output tokens per answer.',
    }),
    temperature: Type.Number({
      minimum: 0,
      maximum: 10,
      default: 0.6,
      description: 'Sampling temperature.',
    }),
    topP: Type.Number({
      exclusiveMinimum: 0,
      maximum: 1,
      default: 1,
      description: 'Nucleus sampling top-p.',
    }),
  },
  { additionalProperties: false, default: {} },
);

/** Price table for dollars per query (docs/recipe.md §8.3, docs/evaluation.md); all zero means
 * cost is not reported. */
export const PriceTable = Type.Object(
  {
    promptPerMillionTokens: Type.Number({
      minimum: 0,
      default: 0,
      description: 'USD per million prompt tokens.',
    }),
    completionPerMillionTokens: Type.Number({
      minimum: 0,
      default: 0,
      description: 'USD per million completion tokens.',
    }),
    perToolCall: Type.Number({ minimum: 0, default: 0, description: 'USD per tool call.' }),
  },
  { additionalProperties: false, default: {} },
);

const modelPrice = (description: string) => Type.Optional(Type.Number({ minimum: 0, description }));

/** One model's own prices: each field given replaces that field of the spec-level `prices`, the
 * others are the spec's (docs/evaluation.md "Prices per model"). No defaults, so an omitted
 * field stays omitted and falls back. */
export const ModelPrices = Type.Object(
  {
    promptPerMillionTokens: modelPrice('USD per million prompt tokens for this model.'),
    completionPerMillionTokens: modelPrice('USD per million completion tokens for this model.'),
    perToolCall: modelPrice('USD per tool call for this model.'),
  },
  { additionalProperties: false },
);
export type ModelPrices = Static<typeof ModelPrices>;

/** An eval target: a model reference (shared with the training kinds, so unchanged there) and
 * the model's own prices. */
export const EvalModel = Type.Object(
  { ...ModelRef.properties, prices: Type.Optional(ModelPrices) },
  {
    additionalProperties: false,
    description: `${ModelRef.description ?? ''} \`prices\`: this model's own prices.`,
  },
);
export type EvalModel = Static<typeof EvalModel>;

export const EvalSpec = Type.Object(
  {
    kind: Type.Literal('eval'),
    ...commonFields,
    models: Type.Optional(
      Type.Array(EvalModel, {
        minItems: 1,
        maxItems: 16,
        description:
          'Checkpoints to evaluate, in order; one step per checkpoint × budget. Omitted: `[model]` (the run model). An entry may add its own `prices`.',
      }),
    ),
    datasets: Type.Array(Type.String({ pattern: CATALOG_NAME_PATTERN }), {
      minItems: 1,
      maxItems: 32,
      uniqueItems: true,
      default: ['search-qa'],
      description: 'Benchmark datasets known to the worker (packages/envs).',
    }),
    examples: Type.Integer({
      minimum: 1,
      maximum: 1_000_000,
      default: 200,
      description: 'Examples per dataset (and per budget in the sweep).',
    }),
    budgets: EvalBudgets,
    judge: Type.Union([Type.Literal('verifier'), Type.Literal('llm')], {
      default: 'verifier',
      description:
        "Who grades an answer: `verifier` (normalised match with the aliases) or `llm`, the run's judge endpoint (`endpoints.judge`, else the operator default; refused without one).",
    }),
    prices: PriceTable,
  },
  { additionalProperties: false },
);
export type EvalSpec = Static<typeof EvalSpec>;
