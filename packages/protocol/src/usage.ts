// Usage and its price (docs/usage.md): what a run consumed — tokens sampled (prompt and
// completion), tokens trained, tool calls that reached the search backend, LLM-judge calls,
// tokens scored by the reward model, worker-slot seconds —
// and the operator's price table that turns it into dollars. Pure: the worker prices each step
// with it, the control plane prices reads and estimates with it, so all of them agree.
import { Type, type Static } from '@sinclair/typebox';

const usd = (description: string) => Type.Number({ minimum: 0, default: 0, description });

/** The operator's price table (operator config `prices`); all zero: usage is metered, free. */
export const UsagePrices = Type.Object(
  {
    promptPerMillionTokens: usd('USD per million prompt tokens sent to the sampler.'),
    completionPerMillionTokens: usd('USD per million tokens the sampler generated.'),
    trainedPerMillionTokens: usd('USD per million tokens the trainer took a loss on.'),
    perToolCall: usd('USD per tool call that reached the search backend.'),
    perJudgeCall: usd('USD per request to the LLM judge (rubric grading, eval `judge: llm`).'),
    scoredPerMillionTokens: usd(
      'USD per million tokens sent to the reward model (prompt and response of each scored rollout).',
    ),
    perSlotHour: usd('USD per hour a run holds a worker slot.'),
  },
  { additionalProperties: false, default: {} },
);
export type UsagePrices = Static<typeof UsagePrices>;

export const FREE: Readonly<UsagePrices> = Object.freeze({
  promptPerMillionTokens: 0,
  completionPerMillionTokens: 0,
  trainedPerMillionTokens: 0,
  perToolCall: 0,
  perJudgeCall: 0,
  scoredPerMillionTokens: 0,
  perSlotHour: 0,
});

export const BUDGET_PERIODS = ['day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** A tenant's cap (operator config `tenants.<t>.budget`): spend per UTC calendar period. */
export const TenantBudget = Type.Object(
  {
    maxUsd: Type.Number({
      exclusiveMinimum: 0,
      description:
        'USD the tenant may spend per period; at the cap submissions are refused and its running runs pause.',
    }),
    period: Type.Union(
      BUDGET_PERIODS.map((p) => Type.Literal(p)),
      { default: 'month', description: 'UTC calendar day or month.' },
    ),
  },
  { additionalProperties: false },
);
export type TenantBudget = Static<typeof TenantBudget>;

/** A run's cap (run spec `budget`). */
export const RunBudget = Type.Object(
  {
    maxUsd: Type.Number({
      exclusiveMinimum: 0,
      description: 'USD this run may spend; at the cap it pauses (docs/usage.md).',
    }),
  },
  { additionalProperties: false, description: 'Spend cap of this run, metered per step.' },
);
export type RunBudget = Static<typeof RunBudget>;

/** Metered quantities; every field a total (tokens, calls, seconds). */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  trainedTokens: number;
  toolCalls: number;
  /** Requests to the LLM judge. */
  judgeCalls: number;
  /** Tokens sent to the reward model: each scored pair's prompt and response. */
  scoredTokens: number;
  slotSeconds: number;
}

export const USAGE_FIELDS = [
  'promptTokens',
  'completionTokens',
  'trainedTokens',
  'toolCalls',
  'judgeCalls',
  'scoredTokens',
  'slotSeconds',
] as const satisfies readonly (keyof Usage)[];

export const NO_USAGE: Readonly<Usage> = Object.freeze({
  promptTokens: 0,
  completionTokens: 0,
  trainedTokens: 0,
  toolCalls: 0,
  judgeCalls: 0,
  scoredTokens: 0,
  slotSeconds: 0,
});

/** USD by what it was spent on, and the total. */
export type UsageCost = { [F in keyof Usage]: number } & { total: number };

/** USD of `usage` at `prices`, item by item. */
export function priceUsage(usage: Usage, prices: UsagePrices): UsageCost {
  const cost = {
    promptTokens: (usage.promptTokens * prices.promptPerMillionTokens) / 1e6,
    completionTokens: (usage.completionTokens * prices.completionPerMillionTokens) / 1e6,
    trainedTokens: (usage.trainedTokens * prices.trainedPerMillionTokens) / 1e6,
    toolCalls: usage.toolCalls * prices.perToolCall,
    judgeCalls: usage.judgeCalls * prices.perJudgeCall,
    scoredTokens: (usage.scoredTokens * prices.scoredPerMillionTokens) / 1e6,
    slotSeconds: (usage.slotSeconds * prices.perSlotHour) / 3600,
  };
  return { ...cost, total: USAGE_FIELDS.reduce((sum, f) => sum + cost[f], 0) };
}

/**
 * Step-record keys of a step's usage: each executor writes the step's totals, so the history
 * says what every step consumed and a run's usage is the sum over its committed steps (slot
 * seconds are per attempt, not per step: they are not in a step record).
 */
export const STEP_USAGE_KEYS = {
  promptTokens: 'usage/prompt_tokens',
  completionTokens: 'usage/completion_tokens',
  trainedTokens: 'usage/trained_tokens',
  toolCalls: 'usage/tool_calls',
  judgeCalls: 'usage/judge_calls',
  scoredTokens: 'usage/scored_tokens',
} as const;

/** The usage a committed step record carries (a key it lacks counts 0). */
export function stepUsage(metrics: Readonly<Record<string, number | null>>): Usage {
  const read = (key: string) => {
    const value = metrics[key];
    return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
  };
  return {
    promptTokens: read(STEP_USAGE_KEYS.promptTokens),
    completionTokens: read(STEP_USAGE_KEYS.completionTokens),
    trainedTokens: read(STEP_USAGE_KEYS.trainedTokens),
    toolCalls: read(STEP_USAGE_KEYS.toolCalls),
    judgeCalls: read(STEP_USAGE_KEYS.judgeCalls),
    scoredTokens: read(STEP_USAGE_KEYS.scoredTokens),
    slotSeconds: 0,
  };
}

/** The UTC calendar periods `at` falls in: `YYYY-MM-DD` and `YYYY-MM`. */
export function usagePeriods(at: Date): { [P in BudgetPeriod]: string } {
  const day = at.toISOString().slice(0, 10);
  return { day, month: day.slice(0, 7) };
}
