// One answer of an eval run: a line of `eval-items.jsonl` in the run's artifact directory
// (the worker writes it, docs/evaluation.md "Tracing a number to answers") and an item of
// GET /v1/runs/{id}/items.
import { Type, type Static } from '@sinclair/typebox';

/** How a rollout ended (the envs rollout loop's finish): `answer` = `<|answer|>…<|eos|>`,
 * `no_answer` = `<|eos|>` without one, `length` = a token budget ran out, `context_overflow` =
 * the engine refused a too-long context. */
export const ROLLOUT_FINISHES = ['answer', 'no_answer', 'length', 'context_overflow'] as const;
export type RolloutFinishReason = (typeof ROLLOUT_FINISHES)[number];

export const RolloutFinishSchema = Type.Union(
  ROLLOUT_FINISHES.map((f) => Type.Literal(f)),
  { description: 'How the rollout ended.' },
);

export const EvalItem = Type.Object(
  {
    step: Type.Integer({ minimum: 1, description: 'The cell (checkpoint × budget) step.' }),
    checkpoint: Type.Integer({ minimum: 0, description: 'Position in the spec `models`.' }),
    budget: Type.Integer({ minimum: 0, description: 'Tool-call budget b of the cell.' }),
    id: Type.String({ description: "The question's id in its dataset." }),
    needsSearch: Type.Optional(
      Type.Boolean({
        description:
          'Whether the question needs the search tool; false: answerable from the prompt (a tool-free question). Absent in items written before it was recorded.',
      }),
    ),
    correct: Type.Boolean(),
    grader: Type.Union([Type.Literal('verifier'), Type.Literal('llm')]),
    answer: Type.Union([Type.String(), Type.Null()], {
      description: 'The answer, first 200 characters; null when there was none.',
    }),
    abstained: Type.Boolean(),
    languageMismatch: Type.Boolean(),
    toolCalls: Type.Integer({ minimum: 0, description: 'Tool calls emitted (refused included).' }),
    searchCalls: Type.Integer({ minimum: 0, description: 'Calls sent to the search backend.' }),
    brokenCalls: Type.Integer({ minimum: 0 }),
    finish: RolloutFinishSchema,
    promptTokens: Type.Integer({ minimum: 0, description: 'Billed prompt tokens (all turns).' }),
    completionTokens: Type.Integer({ minimum: 0 }),
    attempt: Type.Integer({ minimum: 1, description: 'The run attempt that answered it.' }),
    reward: Type.Optional(
      Type.Number({ description: "Reward-model score s(x, y) (scored against checkpoint 0's)." }),
    ),
  },
  { additionalProperties: false },
);
export type EvalItem = Static<typeof EvalItem>;

export const EvalItemPage = Type.Object(
  {
    runId: Type.String(),
    items: Type.Array(EvalItem),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass as `cursor` (with the same other parameters) for the next page.',
    }),
  },
  { additionalProperties: false },
);
export type EvalItemPage = Static<typeof EvalItemPage>;
