// What GET /v1/runs/{id}/results returns for an eval run: the budget-forced tool-efficiency
// curve of each checkpoint (docs/recipe.md §8.2), its knee, and the cost–accuracy frontier
// (§8.3). Built from the run's step records (one step per checkpoint × budget), so a running
// eval reports the cells it has finished.
import { Type, type Static } from '@sinclair/typebox';
import { RunStateSchema } from './run-state.ts';

const Ratio = (description: string) =>
  Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], { description });
const NullableNumber = (description: string) =>
  Type.Union([Type.Number(), Type.Null()], { description });

/** One checkpoint at one tool-call budget b. */
export const EvalCell = Type.Object(
  {
    budget: Type.Integer({ minimum: 0, description: 'Hard cap b on tool calls.' }),
    step: Type.Integer({ minimum: 1, description: 'Step record the numbers come from.' }),
    n: Type.Integer({ minimum: 0, description: 'Questions evaluated.' }),
    accuracy: Ratio('Share answered correctly (normalised match with aliases).'),
    accuracyLow: Ratio('Lower end of the 95% Wilson interval of accuracy.'),
    accuracyHigh: Ratio('Upper end of the 95% Wilson interval of accuracy.'),
    meanToolCalls: NullableNumber('Mean tool calls emitted per question (refused ones included).'),
    brokenToolCallRate: Ratio(
      'Broken calls (malformed, invalid query, past the cap b) per emitted call; null without calls.',
    ),
    abstention: Ratio('Share of unanswerable questions answered by abstaining; null without any.'),
    falseAbstention: Ratio(
      'Share of answerable questions abstained on; null when no question is marked.',
    ),
    languageMismatch: Ratio(
      'Share of answers in a determined language other than the question’s (programmatic).',
    ),
    preferenceWinRate: Ratio(
      'Reward-model win rate over checkpoint 0 on the same questions (position-agnostic); null without a reward model or for checkpoint 0.',
    ),
    promptTokens: NullableNumber(
      'Mean billed prompt tokens per question (context re-sent every turn).',
    ),
    completionTokens: NullableNumber('Mean generated tokens per question.'),
    costPerQueryUsd: NullableNumber(
      'USD per question from the price table; null when no price is set.',
    ),
  },
  { additionalProperties: false },
);
export type EvalCell = Static<typeof EvalCell>;

/** A price table in USD (docs/evaluation.md "Prices per model"). */
const evalPrices = (description: string) =>
  Type.Object(
    {
      promptPerMillionTokens: Type.Number(),
      completionPerMillionTokens: Type.Number(),
      perToolCall: Type.Number(),
    },
    { additionalProperties: false, description },
  );

export const EvalCheckpointResults = Type.Object(
  {
    index: Type.Integer({ minimum: 0, description: 'Position in the spec `models`.' }),
    label: Type.String({ description: 'Source run id or base model name.' }),
    prices: evalPrices(
      'Prices its cells are costed at: its own `models[i].prices`, field by field over the spec table.',
    ),
    cells: Type.Array(EvalCell, { description: 'One per evaluated budget, by budget.' }),
    bestAccuracy: Ratio('Best accuracy over the evaluated budgets.'),
    knee: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'Smallest budget within one point of the best accuracy.',
    }),
  },
  { additionalProperties: false },
);
export type EvalCheckpointResults = Static<typeof EvalCheckpointResults>;

export const EvalFrontierPoint = Type.Object(
  {
    checkpoint: Type.Integer({ minimum: 0 }),
    label: Type.String(),
    budget: Type.Integer({ minimum: 0 }),
    costPerQueryUsd: Type.Number(),
    accuracy: Type.Number(),
  },
  { additionalProperties: false },
);
export type EvalFrontierPoint = Static<typeof EvalFrontierPoint>;

export const EvalResults = Type.Object(
  {
    runId: Type.String(),
    state: RunStateSchema,
    datasets: Type.Array(Type.String()),
    budgets: Type.Array(Type.Integer({ minimum: 0 }), { description: 'The sweep, as submitted.' }),
    prices: evalPrices(
      'The spec-level price table; the prices each checkpoint was costed at are its `prices`.',
    ),
    complete: Type.Boolean({ description: 'Every checkpoint × budget cell has been evaluated.' }),
    checkpoints: Type.Array(EvalCheckpointResults),
    frontier: Type.Array(EvalFrontierPoint, {
      description: 'Cost–accuracy frontier over all cells, cheapest first; empty without prices.',
    }),
  },
  { additionalProperties: false },
);
export type EvalResults = Static<typeof EvalResults>;
